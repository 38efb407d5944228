// Where the attention mass goes (mass.h): the streaming pass, the JSON, the
// Markdown section and the CSV rows.
#include "mass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "report_schema.h"
#include "report_text.h"
#include "tokens.h"
#include "trace_read.h"

typedef struct {              // sums over decisions
    double sink, far;         // of mass_sinks and mass_far (the float16 values as stored)
    int64_t n;                // decisions
} mass_sum;

typedef struct {
    aha_tr meta;              // the first trace's attributes
    int L, H, nw, G;
    int lo[AHA_TOK_GROUPS], hi[AHA_TOK_GROUPS]; // layer groups [lo, hi), as tokens.c
    int recorded;             // the traces hold mass_far and mass_sinks
    mass_sum *acc;            // [nw, G, 2]: decisions with t >= w + sinks; those oracle-global
} mass_stats;

typedef struct {              // one slab's buffers
    int32_t *pos;             // [block]
    uint32_t *dep;            // [L, block, H] first eps
    float *sink, *far;        // [L, block, H]
} mass_buf;

static int add_slab(mass_stats *s, const aha_tr *tr, int64_t t0, int64_t m, mass_buf *b) {
    const int H = s->H, S = s->meta.m.sinks;
    if (aha_tr_read(tr, TD_POSITION, 0, t0, m, b->pos) || aha_tr_read(tr, TD_DEP, 0, t0, m, b->dep) ||
        aha_tr_read(tr, TD_MASS_SINKS, 0, t0, m, b->sink))
        return -1;
    for (int i = 0; i < s->nw; i++) {
        const int w = s->meta.m.windows[i];
        if (aha_tr_read(tr, TD_MASS_FAR, i, t0, m, b->far) != 0) return -1;
        for (int g = 0; g < s->G; g++) {
            mass_sum *a = s->acc + ((size_t)i * s->G + g) * 2;
            for (int l = s->lo[g]; l < s->hi[g]; l++)
                for (int64_t k = 0; !aha_trace_layer_window(&s->meta.m, l) && k < m; k++) { // global layers only
                    if (b->pos[k] < (int64_t)w + S) continue; // window and sinks would overlap
                    const size_t at = ((size_t)l * m + k) * H;
                    for (int h = 0; h < H; h++) {
                        const double sk = b->sink[at + h], fa = b->far[at + h];
                        a[0].sink += sk, a[0].far += fa, a[0].n++;
                        if (b->dep[at + h] > (uint32_t)w) a[1].sink += sk, a[1].far += fa, a[1].n++;
                    }
                }
        }
    }
    return 0;
}

static void mass_free(mass_stats *s) {
    free(s->acc);
    aha_tr_close(&s->meta);
    memset(s, 0, sizeof *s);
}

// Gather the open traces trs[0..n) into s.
static int mass_gather(mass_stats *s, const aha_tr *trs, int n, int block) {
    memset(s, 0, sizeof *s);
    mass_buf b = {0};
    int rc = -1;
    if (aha_tr_dup(&s->meta, &trs[0]) != 0) return -1;
    s->L = s->meta.m.n_layers, s->H = s->meta.m.n_heads, s->nw = s->meta.m.n_windows;
    s->recorded = 1;
    for (int t = 0; t < n; t++) s->recorded &= trs[t].m.mass;
    s->G = aha_tok_groups(&s->meta.m, s->lo, s->hi);
    if (!s->recorded) {
        rc = 0;
        goto done;
    }
    block = aha_tok_block(&s->meta, block);
    const size_t lbh = (size_t)s->L * block * s->H;
    if (!(s->acc = aha_calloc((size_t)s->nw * s->G * 2, sizeof *s->acc, "mass sums")) ||
        !(b.pos = aha_malloc((size_t)block, sizeof *b.pos, "slab")) || !(b.dep = aha_malloc(lbh, sizeof *b.dep, "slab")) ||
        !(b.sink = aha_malloc(lbh, sizeof *b.sink, "slab")) || !(b.far = aha_malloc(lbh, sizeof *b.far, "slab")))
        goto done;
    for (int t = 0; t < n; t++)
        for (int64_t t0 = 0; t0 < trs[t].n_tokens; t0 += block)
            if (add_slab(s, &trs[t], t0, trs[t].n_tokens - t0 < block ? trs[t].n_tokens - t0 : block, &b) != 0) goto done;
    rc = 0;
done:
    free(b.pos), free(b.dep), free(b.sink), free(b.far);
    if (rc) mass_free(s);
    return rc;
}

// ---- JSON ----

static double mean(double sum, int64_t n) { return n ? sum / (double)n : NAN; } // NaN: null

// {decisions, sinks, window, far}: means over the decisions of x.
static cJSON *split_json(mass_sum x) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_SPLIT_DECISIONS, (double)x.n);
    rep_add_num(o, RF_SPLIT_SINKS, mean(x.sink, x.n));
    rep_add_num(o, RF_SPLIT_WINDOW, mean((double)x.n - x.sink - x.far, x.n)); // 1 - sinks - far
    rep_add_num(o, RF_SPLIT_FAR, mean(x.far, x.n));
    return o;
}

static cJSON *mass_json(const mass_stats *s) {
    cJSON *o = cJSON_CreateObject();
    rep_add_bool(o, RF_MASS_RECORDED, s->recorded);
    if (!s->recorded) return o;
    rep_add_num(o, RF_MASS_EPS, s->meta.m.eps[0]);
    rep_add_num(o, RF_MASS_SINKS, s->meta.m.sinks);
    rep_add_str(o, RF_MASS_SUBSET, "decisions with t >= w + sinks (window and sinks do not overlap)");
    rep_add_str(o, RF_MASS_GLOBAL, "those of them with d_eps > w at the first eps (the oracle's global decisions)");
    rep_add(o, RF_MASS_GROUPS, aha_tok_groups_json(s->G, s->lo, s->hi, &s->meta.m));
    cJSON *ws = rep_add_array(o, RF_MASS_WINDOWS);
    for (int i = 0; i < s->nw; i++) {
        cJSON *w = cJSON_CreateObject(), *per = rep_add_array(w, RF_MW_GROUPS);
        rep_add_num(w, RF_MW_WINDOW, s->meta.m.windows[i]);
        mass_sum all[2] = {{0, 0, 0}, {0, 0, 0}};
        for (int g = 0; g <= s->G; g++) {
            const mass_sum *a = g < s->G ? s->acc + ((size_t)i * s->G + g) * 2 : all;
            cJSON *x = split_json(a[0]), *gl = split_json(a[1]);
            rep_add_num(gl, RF_MGL_FRACTION, mean((double)a[1].n, a[0].n));
            rep_add(x, RF_MG_GLOBAL, gl);
            cJSON_AddItemToArray(per, x);
            for (int k = 0; g < s->G && k < 2; k++) all[k].sink += a[k].sink, all[k].far += a[k].far, all[k].n += a[k].n;
        }
        cJSON_AddItemToArray(ws, w);
    }
    return o;
}

cJSON *aha_mass_json_open(const aha_tr *trs, int n, int block) {
    mass_stats s;
    if (mass_gather(&s, trs, n, block) != 0) return NULL;
    cJSON *o = mass_json(&s);
    mass_free(&s);
    if (!o) aha_err("out of memory building the report");
    return o;
}

int aha_mass_report(cJSON *rep, const char *const *paths, int n, int compare, int block) {
    cJSON *tr;
    int t = 0;
    cJSON_ArrayForEach(tr, rep_get_mut(rep, RF_REPORT_TRACES)) {
        const char *const *p = compare ? paths + t : paths;
        const int np = compare ? 1 : n;
        aha_tr *trs;
        t++;
        if (aha_tok_open(&trs, p, np) != 0) return -1;
        cJSON *o = aha_mass_json_open(trs, np, block);
        aha_tok_close(trs, np);
        if (!o) return -1;
        rep_add(tr, RF_TRACE_MASS, o);
    }
    return 0;
}

// ---- Markdown and CSV ----

static void md_split(FILE *f, const cJSON *x) {
    static const report_field_id parts[] = {RF_SPLIT_SINKS, RF_SPLIT_WINDOW, RF_SPLIT_FAR};
    for (int k = 0; k < 3; k++) aha_md_num(f, rep_num(x, parts[k]), " %.4f ");
}

void aha_mass_md(FILE *f, const cJSON *tr) {
    const cJSON *ms = rep_get(tr, RF_TRACE_MASS), *w, *x;
    if (!ms) return;
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(f, "### Where attention mass goes: sinks vs window vs far context, decisions with t >= w + sinks (%s)\n\n", set);
    if (!rep_true(ms, RF_MASS_RECORDED)) {
        fprintf(f, "not recorded (aha record --mass)\n");
        return;
    }
    int S = rep_int(ms, RF_MASS_SINKS);
    fprintf(f, "Mean attention mass per decision on the sinks (keys 0..%d), the window (the last w keys) and the far "
               "context (keys %d..t-w: what d_eps thresholds), over decisions with t >= w + sinks (window and sinks do "
               "not overlap), and over those of them the oracle calls global (d_eps > w, eps %g); %s.\n\n",
            S - 1, S, rep_num(ms, RF_MASS_EPS), set);
    fprintf(f, "| w | layers | decisions | sinks | window | far | global (d_eps > w) | fraction | sinks | window | far |\n"
               "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    cJSON_ArrayForEach(w, rep_get(ms, RF_MASS_WINDOWS)) {
        int g = 0;
        cJSON_ArrayForEach(x, rep_get(w, RF_MW_GROUPS)) {
            const cJSON *gl = rep_get(x, RF_MG_GLOBAL);
            fprintf(f, "| %d | %s | %.0f |", rep_int(w, RF_MW_WINDOW), rep_str(rep_at(ms, RF_MASS_GROUPS, g++), RF_GROUP_NAME),
                    rep_num(x, RF_SPLIT_DECISIONS));
            md_split(f, x);
            fprintf(f, " %.0f |", rep_num(gl, RF_SPLIT_DECISIONS));
            aha_md_num(f, rep_num(gl, RF_MGL_FRACTION), " %.4f ");
            md_split(f, gl);
            fputc('\n', f);
        }
    }
}

// The split x's rows; global: x is an oracle-global split (with its fraction).
static void csv_split(FILE *f, int t, const cJSON *ms, const char *group, int w, const char *subset, const cJSON *x,
                      int global) {
    static const report_field_id metrics[] = {RF_SPLIT_DECISIONS, RF_MGL_FRACTION, RF_SPLIT_SINKS, RF_SPLIT_WINDOW, RF_SPLIT_FAR};
    for (int k = 0; k < 5; k++) {
        if (metrics[k] == RF_MGL_FRACTION && !global) continue;
        const cJSON *v = rep_get(x, metrics[k]);
        fprintf(f, "%d,mass,%s,%.9g,%d,,,,%s,%s,", t, group, rep_num(ms, RF_MASS_EPS), w, subset, report_fields[metrics[k]].key);
        if (cJSON_IsNumber(v)) fprintf(f, "%.17g", v->valuedouble);
        fputc('\n', f);
    }
}

void aha_mass_csv(FILE *f, int t, const cJSON *tr) {
    const cJSON *ms = rep_get(tr, RF_TRACE_MASS), *w, *x;
    if (!rep_true(ms, RF_MASS_RECORDED)) return;
    cJSON_ArrayForEach(w, rep_get(ms, RF_MASS_WINDOWS)) {
        int g = 0;
        cJSON_ArrayForEach(x, rep_get(w, RF_MW_GROUPS)) {
            const char *group = rep_str(rep_at(ms, RF_MASS_GROUPS, g++), RF_GROUP_NAME);
            csv_split(f, t, ms, group, rep_int(w, RF_MW_WINDOW), "t_ge_w_sinks", x, 0);
            csv_split(f, t, ms, group, rep_int(w, RF_MW_WINDOW), "oracle_global", rep_get(x, RF_MG_GLOBAL), 1);
        }
    }
}
