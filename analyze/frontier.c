#include "frontier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "report.h"

int aha_frontier_delta(const char *s, double *delta) {
    char *end;
    *delta = strtod(s, &end);
    if (end == s || *end || !(*delta >= 0) || isinf(*delta)) {
        aha_err("--delta: '%s' is not a number >= 0 (a relative perplexity change: 0.01 = +1%%)", s);
        return -1;
    }
    return 0;
}

static cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *o, const char *k) {
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
static cJSON *num_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

void aha_frontier_family(const char *policy, char *buf, size_t size) {
    size_t n = strcspn(policy, ":");
    snprintf(buf, size, "%.*s", (int)n, policy);
}

static const char *subsets[2] = {"all", "t_ge_w"};
static const char *fraction_key[2] = {"fraction_all", "fraction_t_ge_w"};

typedef struct {
    const cJSON *run; // the JSON report's run
    double x, y;      // fraction global (the subset's), ppl change
} point;

static int by_x(const void *a, const void *b) {
    const point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->y < q->y ? -1 : p->y > q->y;
}

// The smallest fraction global with ppl change <= delta over pts[n] (sorted
// by fraction): the first point within delta, interpolated linearly with the
// point before it (which is above delta); at a grid point when it is the
// first point or lands on delta exactly.
static cJSON *smallest(point *pts, int n, double delta) {
    cJSON *o = cJSON_CreateObject();
    int i = 0;
    while (i < n && !(pts[i].y <= delta)) i++;
    if (i == n) {
        cJSON_AddNullToObject(o, "fraction");
        cJSON_AddStringToObject(o, "how", "not reached within the grid");
        return o;
    }
    double f = pts[i].x;
    const char *how = "at a grid point";
    if (i > 0 && pts[i].y < delta && isfinite(pts[i - 1].y)) {
        const point *a = &pts[i - 1], *b = &pts[i];
        f = a->x + (delta - a->y) * (b->x - a->x) / (b->y - a->y);
        how = "interpolated";
        cJSON_AddStringToObject(o, "from", get(a->run, "name")->valuestring);
    }
    cJSON_AddItemToObject(o, "fraction", num_or_null(f));
    cJSON_AddStringToObject(o, "how", how);
    cJSON_AddStringToObject(o, "to", get(pts[i].run, "name")->valuestring);
    return o;
}

static cJSON *line_json(const cJSON *runs, int window, const char *family, double delta) {
    cJSON *o = cJSON_CreateObject(), *ps = NULL;
    cJSON_AddNumberToObject(o, "window", window);
    cJSON_AddStringToObject(o, "policy", family);
    int n = cJSON_GetArraySize(runs), m = 0;
    point *pts = calloc((size_t)n + 1, sizeof *pts);
    const cJSON *r;
    char fam[64];
    cJSON_ArrayForEach(r, runs) {
        aha_frontier_family(get(r, "policy")->valuestring, fam, sizeof fam);
        if (pts && num(r, "window") == window && !strcmp(fam, family)) pts[m++].run = r;
    }
    for (int s = 0; pts && s < 2; s++) {
        for (int i = 0; i < m; i++)
            pts[i].x = num(get(pts[i].run, s ? "global_t_ge_w" : "global_all"), "fraction"),
            pts[i].y = num(pts[i].run, "ppl_change");
        qsort(pts, (size_t)m, sizeof *pts, by_x);
        if (s == 0) { // the points, in order of fraction global (all decisions)
            ps = cJSON_AddArrayToObject(o, "points");
            for (int i = 0; i < m; i++) {
                const cJSON *p = pts[i].run;
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "run", get(p, "name")->valuestring);
                cJSON_AddItemToObject(x, "param", num_or_null(num(p, "param")));
                cJSON_AddItemToObject(x, "fraction_all", num_or_null(pts[i].x));
                cJSON_AddItemToObject(x, "fraction_t_ge_w", num_or_null(num(get(p, "global_t_ge_w"), "fraction")));
                cJSON_AddItemToObject(x, "ppl_change", num_or_null(pts[i].y));
                cJSON_AddItemToObject(x, "mean_kl", num_or_null(num(p, "mean_kl")));
                cJSON_AddItemToObject(x, "flops_fraction", num_or_null(num(p, "flops_fraction")));
                cJSON_AddItemToArray(ps, x);
            }
        }
        char key[48];
        snprintf(key, sizeof key, "smallest_%s", subsets[s]);
        cJSON_AddItemToObject(o, key, smallest(pts, m, delta));
    }
    free(pts);
    return o;
}

int aha_report_frontier(cJSON *rep, double delta) {
    cJSON *tr;
    cJSON_ArrayForEach(tr, get(rep, "traces")) {
        cJSON *fr = cJSON_AddObjectToObject(tr, "frontier");
        if (!fr) return -1;
        cJSON_AddNumberToObject(fr, "delta", delta);
        cJSON_AddStringToObject(fr, "rule",
                                "per window and policy, the routed runs sorted by fraction global; the smallest "
                                "fraction global with ppl change <= delta is the first run within delta, linearly "
                                "interpolated with the run before it (above delta), or at a grid point");
        cJSON *lines = cJSON_AddArrayToObject(fr, "lines");
        const cJSON *runs = get(tr, "runs"), *r, *l;
        char fam[64];
        cJSON_ArrayForEach(r, runs) { // one line per (window, family), in the runs' order
            if (!strcmp(get(r, "policy")->valuestring, "global")) continue;
            aha_frontier_family(get(r, "policy")->valuestring, fam, sizeof fam);
            int seen = 0;
            cJSON_ArrayForEach(l, lines) seen |= num(l, "window") == num(r, "window") && !strcmp(get(l, "policy")->valuestring, fam);
            if (!seen) cJSON_AddItemToArray(lines, line_json(runs, (int)num(r, "window"), fam, delta));
        }
    }
    return 0;
}

static void md_num(FILE *f, double x, const char *fmt) {
    if (isnan(x)) fprintf(f, " - |");
    else fprintf(f, fmt, x), fputc('|', f);
}

void aha_frontier_md(FILE *f, const cJSON *tr) {
    const cJSON *fr = get(tr, "frontier"), *l, *p;
    if (!fr || !cJSON_GetArraySize(get(fr, "lines"))) return;
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    double d = num(fr, "delta");
    fprintf(f, "\n### Frontier: smallest fraction global with perplexity change <= %+.2f%% (delta), over all decisions "
               "and over decisions with t >= w (%s)\n\n"
               "| w | policy | runs | smallest global, all decisions | how | smallest global, t >= w | how |\n"
               "|---:|---|---:|---:|---|---:|---|\n", 100 * d, set);
    cJSON_ArrayForEach(l, get(fr, "lines")) {
        fprintf(f, "| %.0f | %s | %d |", num(l, "window"), get(l, "policy")->valuestring, cJSON_GetArraySize(get(l, "points")));
        for (int s = 0; s < 2; s++) {
            const cJSON *x = get(l, s ? "smallest_t_ge_w" : "smallest_all");
            md_num(f, num(x, "fraction"), " %.4f ");
            fprintf(f, " %s |", get(x, "how")->valuestring);
        }
        fputc('\n', f);
    }
    fprintf(f, "\nInterpolated: linearly between the two runs of the line that bracket delta; at a grid point: "
               "a run lands on delta, or the line's sparsest run is already within it (sparser was not measured).\n"
               "\n### Frontier points (per window and policy, by fraction global over all decisions; %s)\n\n"
               "| w | policy | run | param | global, all decisions | global, t >= w | ppl change | mean KL | FLOPs executed/full |\n"
               "|---:|---|---|---:|---:|---:|---:|---:|---:|\n", set);
    cJSON_ArrayForEach(l, get(fr, "lines")) cJSON_ArrayForEach(p, get(l, "points")) {
        fprintf(f, "| %.0f | %s | %s |", num(l, "window"), get(l, "policy")->valuestring, get(p, "run")->valuestring);
        md_num(f, num(p, "param"), " %g "), md_num(f, num(p, fraction_key[0]), " %.4f ");
        md_num(f, num(p, fraction_key[1]), " %.4f "), md_num(f, 100 * num(p, "ppl_change"), " %+.2f%% ");
        md_num(f, num(p, "mean_kl"), " %.5f "), md_num(f, num(p, "flops_fraction"), " %.4f ");
        fputc('\n', f);
    }
}

// trace,table,router,eps,window,layer,head,doc,subset,metric,value
void aha_frontier_csv(FILE *f, int t, const cJSON *tr) {
    const cJSON *fr = get(tr, "frontier"), *l;
    if (!fr) return;
    cJSON_ArrayForEach(l, get(fr, "lines")) {
        const char *pol = get(l, "policy")->valuestring;
        int w = (int)num(l, "window");
        for (int s = 0; s < 2; s++) {
            const cJSON *x = get(l, s ? "smallest_t_ge_w" : "smallest_all");
            fprintf(f, "%d,frontier,%s,,%d,,,,%s,delta,%.17g\n", t, pol, w, subsets[s], num(fr, "delta"));
            fprintf(f, "%d,frontier,%s,,%d,,,,%s,smallest_fraction_global,", t, pol, w, subsets[s]);
            if (isfinite(num(x, "fraction"))) fprintf(f, "%.17g", num(x, "fraction"));
            fprintf(f, "\n%d,frontier,%s,,%d,,,,%s,how,%s\n", t, pol, w, subsets[s], get(x, "how")->valuestring);
        }
    }
}
