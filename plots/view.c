// aha plot --html: view.html (view.h). The page is plots/view_page.html with
// its style (view_style.css), its data and its script (view_script.js) put
// in at the template's three markers; scripts/embed.sh builds the three into
// ./aha (build/gen/plots/view_assets.h).
//
// The data: one JSON object (id aha-meta: the settings, the tokens' text, the
// report's per-head fractions for the heatmap) and base64 blobs of
// zlib-compressed little-endian arrays, which the script inflates with the
// browser's own DecompressionStream: aha-ids (int32 [n] token ids),
// aha-nll-<r> (float32 [n], run r's NLL) and aha-layer-<l> (layer l: d_eps
// [n_eps][n][H] as uint16, or uint32 past position 65534, then the gates
// [n_gates][n][H] as uint8: the learned router's, then each routed run's).
#include "view.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "err.h"
#include "report.h"
#include "report_schema.h"
#include "report_text.h"
#include "trace_read.h"
#include "utf8.h"
#include "view_assets.h"

typedef struct {
    aha_tr tr;                // the trace read
    int doc;                  // the document shown
    int64_t t0, n;            // its tokens shown: the trace's [t0, t0 + n)
    int64_t doc_n;            // the document's tokens
    int from;                 // t0's position in the document
    int db;                   // bytes of one d_eps in the page: 2, or 4 past position 65534
    int n_gates;              // gate sections per layer: the learned router's, then each routed run's
} view;

static void put_le(unsigned char *p, uint32_t x, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(x >> 8 * i);
}

// n 32-bit values (int32, float) at p rewritten as little-endian bytes.
static void to_le32(void *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, (unsigned char *)p + 4 * i, 4);
        put_le((unsigned char *)p + 4 * i, x, 4);
    }
}

// data[0..size) compressed (zlib) as a base64 <script> element with id.
static int blob(FILE *f, const char *id, const void *data, size_t size) {
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uLongf zn = compressBound(size);
    unsigned char *z = aha_malloc(zn, 1, "view.html");
    if (!z) return -1;
    if (compress2(z, &zn, data, size, 6) != Z_OK) {
        free(z);
        aha_err("view.html: %s: zlib could not compress %zu bytes", id, size);
        return -1;
    }
    fprintf(f, "<script type=\"application/octet-stream\" id=\"%s\">", id);
    for (uLongf i = 0; i < zn; i += 3) {
        uint32_t v = (uint32_t)z[i] << 16 | (i + 1 < zn ? (uint32_t)z[i + 1] << 8 : 0) | (i + 2 < zn ? z[i + 2] : 0);
        char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63], i + 1 < zn ? b64[v >> 6 & 63] : '=',
                     i + 2 < zn ? b64[v & 63] : '='};
        fwrite(q, 1, 4, f);
    }
    fputs("</script>\n", f);
    free(z);
    return 0;
}

// Gate dataset id (instance i) as section s of every layer (after the
// n_eps d_eps sections), read through buf [L, n, H].
static int copy_gate(const view *v, trace_dset_id id, int i, int s, uint8_t *buf, unsigned char *lay,
                     size_t lay_bytes) {
    const aha_tr *tr = &v->tr;
    size_t nh = (size_t)v->n * (size_t)tr->m.n_heads;
    if (aha_tr_read(tr, id, i, v->t0, v->n, buf) != 0) return -1;
    for (int l = 0; l < tr->m.n_layers; l++)
        memcpy(lay + l * lay_bytes + (tr->m.n_eps * v->db + s) * nh, buf + l * nh, nh);
    return 0;
}

// Every layer's section of the page, layer l at lay + l * lay_bytes: d_eps
// per eps, then the gates (the learned router's, then each routed run's).
static int read_layers(const view *v, unsigned char *lay, size_t lay_bytes) {
    const aha_tr *tr = &v->tr;
    int L = tr->m.n_layers, db = v->db, s = 0;
    size_t nh = (size_t)v->n * (size_t)tr->m.n_heads;
    uint32_t *dep = aha_malloc((size_t)L * nh, sizeof *dep, "view.html");
    uint8_t *gate = aha_malloc((size_t)L * nh, 1, "view.html");
    int rc = dep && gate ? 0 : -1;
    for (int e = 0; rc == 0 && e < tr->m.n_eps; e++) {
        rc = aha_tr_read(tr, TD_DEP, e, v->t0, v->n, dep);
        for (int l = 0; rc == 0 && l < L; l++)
            for (size_t k = 0; k < nh; k++) put_le(lay + l * lay_bytes + (e * nh + k) * db, dep[l * nh + k], db);
    }
    if (rc == 0 && tr->m.aha) rc = copy_gate(v, TD_GATE, 0, s++, gate, lay, lay_bytes);
    for (int r = 0; rc == 0 && r < tr->n_runs; r++)
        if (tr->runs[r].has_gate) rc = copy_gate(v, TD_RUN_GATE, r, s++, gate, lay, lay_bytes);
    free(dep), free(gate);
    return rc;
}

// A fraction of the report as a number, or null where it counts nothing.
static cJSON *fraction(const cJSON *pair, report_field_id subset) {
    double x = rep_num(rep_get(pair, subset), RF_FRAC_FRACTION);
    return isnan(x) ? cJSON_CreateNull() : cJSON_CreateNumber(x);
}

// The heatmap's numbers: per router of the report (oracle per eps, learned),
// per subset, the fraction global [window][layer][head] over the whole trace;
// null for natively local layers.
static cJSON *heat_json(const cJSON *trj) {
    cJSON *routers = cJSON_CreateArray(), *o;
    const cJSON *r, *x, *row;
    char name[64];
    cJSON_ArrayForEach(r, rep_get(trj, RF_TRACE_ROUTERS)) {
        cJSON_AddItemToArray(routers, o = cJSON_CreateObject());
        aha_report_router_name(r, name, sizeof name);
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "router", rep_str(r, RF_ROUTER_ROUTER));
        if (rep_has(r, RF_ROUTER_EPS)) cJSON_AddNumberToObject(o, "eps", rep_num(r, RF_ROUTER_EPS));
        for (int tw = 1; tw >= 0; tw--) {
            cJSON *ws = cJSON_AddArrayToObject(o, tw ? "t_ge_w" : "all"), *ls, *hs;
            for (int i = 0; i < rep_len(r, RF_ROUTER_WINDOWS); i++) {
                cJSON_AddItemToArray(ws, ls = cJSON_CreateArray());
                int l = 0;
                cJSON_ArrayForEach(row, rep_get(rep_at(r, RF_ROUTER_WINDOWS, i), RF_RW_PER_HEAD)) {
                    int local = aha_report_layer_window(trj, l++);
                    cJSON_AddItemToArray(ls, hs = cJSON_CreateArray());
                    cJSON_ArrayForEach(x, row) {
                        cJSON *f = local ? cJSON_CreateNull() : fraction(x, tw ? RF_PAIR_T_GE_W : RF_PAIR_ALL);
                        cJSON_AddItemToArray(hs, f);
                    }
                }
            }
        }
    }
    return routers;
}

static cJSON *ints(const int *x, int n) { return cJSON_CreateIntArray(x, n); }

// The page's settings, document and text (text[0..n): the tokens' pieces).
static cJSON *meta_json(const view *v, const cJSON *trj, char **text, int wi) {
    const aha_tr *tr = &v->tr;
    cJSON *m = cJSON_CreateObject(), *a;
    char set[AHA_SETTINGS_MAX];
    cJSON_AddItemToObject(m, "files", cJSON_Duplicate(rep_get(trj, RF_TRACE_FILES), 1));
    cJSON_AddStringToObject(m, "model", rep_str(trj, RF_TRACE_MODEL));
    cJSON_AddStringToObject(m, "architecture", rep_str(trj, RF_TRACE_ARCH));
    cJSON_AddStringToObject(m, "dataset", rep_str(trj, RF_TRACE_DATASET));
    aha_report_settings(trj, set, sizeof set);
    cJSON_AddStringToObject(m, "settings", set); // "sinks S, ctx C" and which layers are counted
    cJSON_AddStringToObject(m, "subset_all", aha_report_subset(0));
    cJSON_AddStringToObject(m, "subset_t_ge_w", aha_report_subset(1));
    cJSON_AddNumberToObject(m, "n_layers", tr->m.n_layers);
    cJSON_AddNumberToObject(m, "n_heads", tr->m.n_heads);
    int lw[tr->m.n_layers];
    for (int l = 0; l < tr->m.n_layers; l++) lw[l] = aha_trace_layer_window(&tr->m, l);
    cJSON_AddItemToObject(m, "layer_window", ints(lw, tr->m.n_layers));
    cJSON_AddItemToObject(m, "eps", cJSON_CreateDoubleArray(tr->m.eps, tr->m.n_eps));
    cJSON *names = cJSON_AddArrayToObject(m, "eps_names"); // as every figure prints them
    for (int e = 0; e < tr->m.n_eps; e++) {
        char g[32];
        snprintf(g, sizeof g, "%g", tr->m.eps[e]);
        cJSON_AddItemToArray(names, cJSON_CreateString(g));
    }
    cJSON_AddItemToObject(m, "windows", ints(tr->m.windows, tr->m.n_windows));
    cJSON_AddNumberToObject(m, "window_index", wi);
    cJSON_AddNumberToObject(m, "sinks", tr->m.sinks);
    cJSON_AddNumberToObject(m, "ctx", tr->m.ctx);
    cJSON_AddNumberToObject(m, "n_docs", rep_num(trj, RF_TRACE_N_DOCS)); // every shard's: the heatmap's
    cJSON_AddNumberToObject(m, "n_tokens", rep_num(trj, RF_TRACE_N_TOKENS));
    cJSON *d = cJSON_AddObjectToObject(m, "doc");
    cJSON_AddNumberToObject(d, "number", v->doc);
    cJSON_AddNumberToObject(d, "tokens", (double)v->doc_n);
    cJSON_AddNumberToObject(d, "from", v->from);
    cJSON_AddNumberToObject(d, "shown", (double)v->n);
    cJSON_AddNumberToObject(d, "trace_token", (double)v->t0);
    cJSON_AddNumberToObject(m, "dep_bytes", v->db);
    cJSON *g = cJSON_AddArrayToObject(m, "gates"), *runs = cJSON_AddArrayToObject(m, "runs");
    if (tr->m.aha) {
        cJSON_AddItemToArray(g, a = cJSON_CreateObject());
        cJSON_AddStringToObject(a, "kind", "learned");
        cJSON_AddNumberToObject(a, "tau", tr->m.tau);
    }
    for (int r = 0; r < tr->n_runs; r++) {
        cJSON_AddItemToArray(runs, a = cJSON_CreateObject());
        cJSON_AddStringToObject(a, "name", tr->runs[r].name);
        cJSON_AddStringToObject(a, "policy", tr->runs[r].policy);
        cJSON_AddNumberToObject(a, "window", tr->runs[r].window);
        if (!tr->runs[r].has_gate) continue;
        cJSON_AddItemToArray(g, a = cJSON_Duplicate(a, 1));
        cJSON_AddStringToObject(a, "kind", "run");
    }
    cJSON *t = cJSON_AddArrayToObject(m, "text");
    for (int64_t i = 0; i < v->n; i++) { // a piece may be part of a character: shown as U+FFFD
        size_t len = strlen(text[i]);
        char *s = aha_malloc(3 * len + 1, 1, "view.html");
        if (!s) {
            cJSON_Delete(m);
            return NULL;
        }
        aha_utf8_sanitize(text[i], len, s);
        cJSON_AddItemToArray(t, cJSON_CreateString(s));
        free(s);
    }
    cJSON_AddItemToObject(m, "heat", heat_json(trj));
    return m;
}

// The JSON as a <script> element's text: every '<' escaped, so no token's
// text can close the element.
static int json_script(FILE *f, const cJSON *m) {
    char *s = m ? cJSON_PrintUnformatted(m) : NULL;
    if (!s) {
        aha_err("view.html: out of memory for the page's settings and text");
        return -1;
    }
    fputs("<script type=\"application/json\" id=\"aha-meta\">", f);
    for (const char *p = s; *p; p++) {
        if (*p == '<') fputs("\\u003c", f);
        else fputc(*p, f);
    }
    fputs("</script>\n", f);
    free(s);
    return 0;
}

// The page's data: the JSON, the token ids, each run's NLL, each layer.
static int page_data(FILE *f, const view *v, const cJSON *trj, int wi) {
    const aha_tr *tr = &v->tr;
    int L = tr->m.n_layers, rc = -1;
    size_t n = (size_t)v->n, lay_bytes = n * (size_t)tr->m.n_heads * ((size_t)tr->m.n_eps * v->db + v->n_gates);
    char **text = aha_calloc(n, sizeof *text, "view.html"), id[32];
    int32_t *ids = aha_malloc(n, sizeof *ids, "view.html");
    float *nll = aha_malloc(n, sizeof *nll, "view.html");
    unsigned char *lay = aha_malloc((size_t)L, lay_bytes, "view.html");
    if (!text || !ids || !nll || !lay || aha_tr_read(tr, TD_TOKEN_TEXT, 0, v->t0, v->n, text) != 0 ||
        aha_tr_read(tr, TD_TOKENS, 0, v->t0, v->n, ids) != 0)
        goto done;
    cJSON *m = meta_json(v, trj, text, wi);
    int bad = json_script(f, m);
    cJSON_Delete(m);
    to_le32(ids, n);
    if (bad || blob(f, "aha-ids", ids, n * sizeof *ids) != 0) goto done;
    for (int r = 0; r < tr->n_runs; r++) {
        snprintf(id, sizeof id, "aha-nll-%d", r);
        if (aha_tr_read(tr, TD_RUN_NLL, r, v->t0, v->n, nll) != 0) goto done;
        to_le32(nll, n);
        if (blob(f, id, nll, n * sizeof *nll) != 0) goto done;
    }
    if (read_layers(v, lay, lay_bytes) != 0) goto done;
    for (int l = 0; l < L; l++) {
        snprintf(id, sizeof id, "aha-layer-%d", l);
        if (blob(f, id, lay + l * lay_bytes, lay_bytes) != 0) goto done;
    }
    rc = 0;
done:
    if (text) aha_tr_free_text(v->n, text);
    free(text), free(ids), free(nll), free(lay);
    return rc;
}

// The template up to marker (from *at), then past it.
static void template_to(FILE *f, const char **at, const char *marker) {
    const char *end = strstr(*at, marker);
    if (!end) end = *at + strlen(*at); // a template without it: build-time error, shown as a broken page
    fwrite(*at, 1, (size_t)(end - *at), f);
    *at = *end ? end + strlen(marker) : end;
}

// Sync f (written at tmp) and publish it at path: link() never replaces a
// file made meanwhile; rename() replaces one with force (and where the file
// system has no hard links). Then sync the folder.
static int open_doc(view *v, const char *path, const aha_view_opts *o) {
    if (aha_tr_open(&v->tr, path) != 0) return -1;
    const aha_tr *tr = &v->tr;
    if (o->doc >= tr->n_docs) {
        aha_err("%s: --doc %d: the trace has %lld documents", path, o->doc, (long long)tr->n_docs);
        return -1;
    }
    v->doc = o->doc;
    v->doc_n = tr->doc_offsets[o->doc + 1] - tr->doc_offsets[o->doc];
    if (o->from >= v->doc_n) {
        aha_err("%s: --html-from %d: document %d has %lld tokens", path, o->from, o->doc, (long long)v->doc_n);
        return -1;
    }
    v->from = o->from;
    v->t0 = tr->doc_offsets[o->doc] + o->from;
    v->n = v->doc_n - o->from;
    if (o->tokens && o->tokens < v->n) v->n = o->tokens;
    v->db = o->from + v->n <= 65535 ? 2 : 4; // d_eps <= position + 1
    v->n_gates = tr->m.aha;
    for (int r = 0; r < tr->n_runs; r++) v->n_gates += tr->runs[r].has_gate;
    return 0;
}

int aha_view_check(const aha_view_opts *o, const char *trace_path) {
    view v = {0};
    int rc = open_doc(&v, trace_path, o);
    aha_tr_close(&v.tr);
    return rc;
}

int aha_plot_view(const cJSON *rep, const char *trace_path, const char *dir, const aha_view_opts *o) {
    const cJSON *trj = rep_at(rep, RF_REPORT_TRACES, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/view.html", dir);
    view v = {0};
    if (open_doc(&v, trace_path, o) != 0) {
        aha_tr_close(&v.tr);
        return -1;
    }
    FILE *f = fopen(path, "wx");
    if (!f) {
        aha_err("%s: cannot create (%s)", path, strerror(errno));
        aha_tr_close(&v.tr);
        return -1;
    }
    const char *at = embed_view_page;
    template_to(f, &at, "/* aha:style */");
    fputs(embed_view_style, f);
    template_to(f, &at, "<!-- aha:data -->");
    int rc = page_data(f, &v, trj, o->window);
    template_to(f, &at, "/* aha:script */");
    fputs(embed_view_script, f);
    fputs(at, f);
    aha_tr_close(&v.tr);
    if (fflush(f) != 0 || ferror(f)) {
        if (rc == 0) aha_err("%s: write failed", path);
        rc = -1;
    }
    if (fclose(f) != 0 && rc == 0) {
        aha_err("%s: write failed", path);
        rc = -1;
    }
    return rc != 0 || rep_read_failed() ? -1 : 0; // a failed read has its message
}
