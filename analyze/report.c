// aha report: CSV and Markdown rendered from the JSON report (so the three
// always agree), and the command.
#include "report.h"
#include "tokens.h"

#include "frontier.h"
#include "mass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *o, const char *k) {
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// ---- CSV: trace,table,router,eps,window,layer,head,doc,subset,metric,value ----

typedef struct {              // the key columns of the rows being written
    FILE *f;
    int trace;
    const char *table, *router, *subset;
    double eps;               // NaN: empty
    int window, layer, head;  // -1: empty
    int64_t doc;              // -1: empty
} csv_key;

static void csv_int(FILE *f, int64_t x) {
    if (x >= 0) fprintf(f, "%lld", (long long)x);
    fputc(',', f);
}

static void csv_row(const csv_key *k, const char *metric, const cJSON *v) {
    fprintf(k->f, "%d,%s,%s,", k->trace, k->table, k->router ? k->router : "");
    if (!isnan(k->eps)) fprintf(k->f, "%.9g", k->eps);
    fputc(',', k->f);
    csv_int(k->f, k->window), csv_int(k->f, k->layer), csv_int(k->f, k->head), csv_int(k->f, k->doc);
    fprintf(k->f, "%s,%s,", k->subset ? k->subset : "", metric);
    if (cJSON_IsNumber(v)) fprintf(k->f, "%.17g", v->valuedouble);
    fputc('\n', k->f);
}

// Every numeric member of o as a row.
static void csv_obj(const csv_key *k, const cJSON *o) {
    for (const cJSON *v = o ? o->child : NULL; v; v = v->next)
        if (cJSON_IsNumber(v) || cJSON_IsNull(v)) csv_row(k, v->string, v);
}

// Every numeric member of o as a row, its metric named name_suffix.
static void csv_obj_as(const csv_key *k, const cJSON *o, const char *suffix) {
    char metric[64];
    for (const cJSON *v = o ? o->child : NULL; v; v = v->next)
        if (cJSON_IsNumber(v)) snprintf(metric, sizeof metric, "%s_%s", v->string, suffix), csv_row(k, metric, v);
}

// {all, t_ge_w} fraction pairs.
static void csv_pair(csv_key k, const cJSON *p) {
    k.subset = "all", csv_obj(&k, get(p, "all"));
    k.subset = "t_ge_w", csv_obj(&k, get(p, "t_ge_w"));
}

static void csv_trace(FILE *f, int t, const cJSON *tr) {
    csv_key k = {f, t, "trace", NULL, NULL, NAN, -1, -1, -1, -1};
    const cJSON *r, *w, *x, *y;
    csv_obj(&k, tr); // sizes and settings: sinks, ctx, decisions, ...
    k.table = "document", k.doc = 0; // which dataset document each per-document row is
    cJSON_ArrayForEach(x, get(tr, "docs")) csv_row(&k, "doc_index", get(x, "doc_index")), k.doc++;
    k.doc = -1, k.table = "fraction";
    cJSON_ArrayForEach(r, get(tr, "routers")) {
        csv_key kr = k;
        kr.router = get(r, "router")->valuestring, kr.eps = num(r, "eps");
        cJSON_ArrayForEach(w, get(r, "windows")) {
            csv_key kw = kr;
            kw.window = (int)num(w, "window");
            csv_pair(kw, w);
            kw.layer = 0;
            cJSON_ArrayForEach(x, get(w, "per_layer")) csv_pair(kw, x), kw.layer++;
            kw.layer = 0;
            cJSON_ArrayForEach(x, get(w, "per_head")) {
                kw.head = 0;
                cJSON_ArrayForEach(y, x) csv_pair(kw, y), kw.head++;
                kw.layer++;
            }
            kw.layer = kw.head = -1, kw.doc = 0;
            cJSON_ArrayForEach(x, get(w, "per_doc")) csv_pair(kw, x), kw.doc++;
        }
    }
    cJSON_ArrayForEach(r, get(tr, "long_tail")) {
        csv_key kq = k;
        kq.table = "quantile", kq.eps = num(r, "eps");
        csv_obj(&kq, get(r, "quantiles"));
        kq.layer = 0;
        cJSON_ArrayForEach(x, get(r, "per_layer_quantiles")) csv_obj(&kq, x), kq.layer++;
        kq.table = "ccdf", kq.layer = -1, kq.window = 0;
        cJSON_ArrayForEach(x, get(r, "ccdf")) csv_row(&kq, "p_gt", x), kq.window++;
        kq.layer = 0;
        cJSON_ArrayForEach(y, get(r, "ccdf_per_layer")) {
            kq.window = 0;
            cJSON_ArrayForEach(x, y) csv_row(&kq, "p_gt", x), kq.window++;
            kq.layer++;
        }
    }
    cJSON_ArrayForEach(r, get(tr, "agreement")) {
        csv_key ka = k;
        ka.table = "agreement", ka.eps = num(r, "eps"), ka.window = (int)num(r, "window");
        ka.subset = "all", csv_obj(&ka, get(r, "all"));
        ka.subset = "t_ge_w", csv_obj(&ka, get(r, "t_ge_w"));
        ka.layer = 0;
        cJSON_ArrayForEach(x, get(r, "per_head_t_ge_w")) {
            ka.head = 0;
            cJSON_ArrayForEach(y, x) csv_obj(&ka, y), ka.head++;
            ka.layer++;
        }
    }
    cJSON_ArrayForEach(r, get(tr, "window_error")) {
        csv_key ke = k;
        ke.table = "window_error", ke.window = (int)num(r, "window");
        csv_obj(&ke, r);
        cJSON_ArrayForEach(x, get(r, "above")) {
            char metric[48];
            snprintf(metric, sizeof metric, "fraction_above_%g", num(x, "threshold"));
            csv_row(&ke, metric, get(x, "fraction"));
        }
    }
    cJSON_ArrayForEach(r, get(tr, "runs")) {
        csv_key kr = k;
        kr.table = "run", kr.router = get(r, "policy")->valuestring, kr.subset = get(r, "name")->valuestring;
        kr.window = (int)num(r, "window");
        csv_obj(&kr, r);
        csv_obj_as(&kr, get(r, "global_all"), "all");        // global_all, total_all, fraction_all
        csv_obj_as(&kr, get(r, "global_t_ge_w"), "t_ge_w");
    }
    cJSON_ArrayForEach(r, get(tr, "local_layers")) { // natively local layers, apart
        csv_key kl = k;
        kl.table = "local_layer", kl.layer = (int)num(r, "layer");
        csv_row(&kl, "window", get(r, "window"));
        cJSON_ArrayForEach(x, get(r, "quantiles")) kl.eps = num(x, "eps"), csv_obj(&kl, x);
    }
    aha_frontier_csv(f, t, tr);
    aha_mass_csv(f, t, tr);
}

void aha_report_csv(FILE *f, const cJSON *rep) {
    fprintf(f, "trace,table,router,eps,window,layer,head,doc,subset,metric,value\n");
    int t = 0;
    const cJSON *tr;
    cJSON_ArrayForEach(tr, get(rep, "traces")) csv_trace(f, t++, tr);
}

// ---- Markdown ----

static void md_num(FILE *f, double x, const char *fmt) {
    if (isnan(x)) fprintf(f, " - |");
    else fprintf(f, fmt, x), fputc('|', f);
}

// A header: first (its columns " | "-separated), then a column per window.
static void md_header(FILE *f, const char *first, const cJSON *windows) {
    const cJSON *w;
    fprintf(f, "| %s |", first);
    cJSON_ArrayForEach(w, windows) fprintf(f, " w=%d |", w->valueint);
    fprintf(f, "\n|---|");
    for (const char *p = strstr(first, " | "); p; p = strstr(p + 1, " | ")) fprintf(f, "---|");
    cJSON_ArrayForEach(w, windows) fprintf(f, "---:|");
    fputc('\n', f);
}

static void router_name(const cJSON *r, char *buf, size_t size) {
    if (strcmp(get(r, "router")->valuestring, "oracle") == 0) snprintf(buf, size, "oracle eps %g", num(r, "eps"));
    else snprintf(buf, size, "learned tau %g", num(r, "tau"));
}

const char *aha_report_subset(int t_ge_w) { return t_ge_w ? "decisions with t >= w" : "all decisions"; }

void aha_report_settings_only(const cJSON *tr, char *buf, size_t size) {
    const cJSON *ctx = get(tr, "ctx");
    if (cJSON_IsNumber(ctx)) snprintf(buf, size, "sinks %.0f, ctx %d", num(tr, "sinks"), ctx->valueint);
    else snprintf(buf, size, "sinks %.0f, ctx not recorded", num(tr, "sinks"));
}

void aha_report_settings_sep(const cJSON *tr, const char *sep, char *buf, size_t size) {
    const cJSON *lc = get(tr, "layers_counted");
    aha_report_settings_only(tr, buf, size);
    size_t n = strlen(buf);
    if (num(tr, "n_global_layers") < num(tr, "n_layers") && cJSON_IsString(lc) && n < size)
        snprintf(buf + n, size - n, "%s%s", sep, lc->valuestring);
}

void aha_report_settings(const cJSON *tr, char *buf, size_t size) { aha_report_settings_sep(tr, "; ", buf, size); }

int aha_report_layer_window(const cJSON *tr, int l) {
    const cJSON *w = cJSON_GetArrayItem(get(tr, "layer_window"), l);
    return cJSON_IsNumber(w) ? w->valueint : 0;
}

void aha_report_layers_short(const cJSON *tr, char *buf, size_t size) {
    double g = num(tr, "n_global_layers"), L = num(tr, "n_layers");
    if (isnan(g) || g >= L) snprintf(buf, size, "all %.0f layers", L);
    else snprintf(buf, size, "%.0f global layer%s", g, g == 1 ? "" : "s");
}

// Natively local layers, apart from the tables above: their window and d_eps quantiles.
static void md_local_layers(FILE *f, const cJSON *tr) {
    const cJSON *x, *q, *ll = get(tr, "local_layers");
    if (!cJSON_GetArraySize(ll)) return;
    fprintf(f, "\n### Natively local layers (%d of %.0f; not counted above)\n\n"
               "Each runs its native sliding window in every mode: the router decides nothing there (gate 0) and "
               "d_eps is at most the window by construction. d_eps quantiles (all decisions):\n\n| layer | window |",
            cJSON_GetArraySize(ll), num(tr, "n_layers"));
    cJSON_ArrayForEach(q, get(cJSON_GetArrayItem(ll, 0), "quantiles"))
        fprintf(f, " eps %g median | p90 | p99 | max |", num(q, "eps"));
    fprintf(f, "\n|---:|---:|");
    cJSON_ArrayForEach(q, get(cJSON_GetArrayItem(ll, 0), "quantiles")) fprintf(f, "---:|---:|---:|---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(x, ll) {
        fprintf(f, "| %.0f | %.0f |", num(x, "layer"), num(x, "window"));
        cJSON_ArrayForEach(q, get(x, "quantiles"))
            fprintf(f, " %.0f | %.0f | %.0f | %.0f |", num(q, "median"), num(q, "p90"), num(q, "p99"), num(q, "max"));
        fputc('\n', f);
    }
}

static void md_trace(FILE *f, const cJSON *tr, const aha_report_opts *o) {
    const cJSON *r, *w, *x, *wins = get(tr, "windows");
    char name[64], set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(f, "## %s\n\n", get(tr, "model")->valuestring);
    fprintf(f, "%s on %s: mode %s, router %s, device %s; %.0f documents, %.0f tokens, %.0f layers x %.0f heads = %.0f decisions%s.\n\n",
            cJSON_GetArrayItem(get(tr, "files"), 0)->valuestring, get(tr, "dataset")->valuestring,
            get(tr, "mode")->valuestring, get(tr, "router")->valuestring, get(tr, "device")->valuestring,
            num(tr, "n_docs"), num(tr, "n_tokens"),
            num(tr, "n_layers"), num(tr, "n_heads"), num(tr, "decisions"),
            cJSON_IsTrue(get(tr, "complete")) ? "" : " (unfinished trace: its completed documents)");
    if (num(tr, "n_global_layers") < num(tr, "n_layers"))
        fprintf(f, "**Natively local layers:** %.0f of %.0f layers run a native sliding window (the router decides "
                   "nothing there, d_eps is at most the window): every number below counts the %.0f global layers' "
                   "%.0f decisions; the local layers have their own table.\n\n",
                num(tr, "n_layers") - num(tr, "n_global_layers"), num(tr, "n_layers"), num(tr, "n_global_layers"),
                num(tr, "decisions_counted"));
    if (num(tr, "shards_missing") > 0)
        fprintf(f, "**Part of a run:** shards %s only, %.0f missing: the numbers cover those only.\n\n",
                get(tr, "shards")->valuestring, num(tr, "shards_missing"));
    if (num(tr, "decisions") == 0) { // every fraction would be 0/0
        fprintf(f, "**No decisions:** %s no documents (a shard of a run that had none, say), so there is nothing "
                   "to count.\n\n", cJSON_GetArraySize(get(tr, "files")) > 1 ? "these traces hold" : "this trace holds");
        return;
    }
    fprintf(f, "Recorded with %s. A fraction counts **all decisions** (every layer, token and head, prompt tokens "
               "included: the paper's metric, the default) or, where marked, only **decisions with t >= w** (those "
               "where the window drops keys; an oracle never goes global at t < w).\n\n", set);
    for (int tw = 0; tw < 2; tw++) {
        fprintf(f, "### Fraction of full-attention decisions, %s%s (%s)\n\n", aha_report_subset(tw), tw ? "" : ", the default",
                set);
        md_header(f, "router", wins);
        cJSON_ArrayForEach(r, get(tr, "routers")) {
            router_name(r, name, sizeof name);
            fprintf(f, "| %s |", name);
            cJSON_ArrayForEach(w, get(r, "windows")) {
                const cJSON *fr = get(w, tw ? "t_ge_w" : "all");
                fprintf(f, " %.4f (%.0f/%.0f) |", num(fr, "fraction"), num(fr, "global"), num(fr, "total"));
            }
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    const cJSON *r0 = cJSON_GetArrayItem(get(tr, "routers"), 0);
    router_name(r0, name, sizeof name);
    fprintf(f, "### Per layer (%s, %s; %s)\n\n", name, aha_report_subset(1), set);
    md_header(f, "layer", wins);
    for (int l = 0; l < (int)num(tr, "n_layers"); l++) {
        if (aha_report_layer_window(tr, l)) continue; // in their own table
        fprintf(f, "| %d |", l);
        cJSON_ArrayForEach(w, get(r0, "windows"))
            md_num(f, num(get(cJSON_GetArrayItem(get(w, "per_layer"), l), "t_ge_w"), "fraction"), " %.4f ");
        fputc('\n', f);
    }
    int wi = 0, n = cJSON_GetArraySize(wins);
    for (int i = 0; i < n; i++)
        if (cJSON_GetArrayItem(wins, i)->valueint == o->window) wi = i + 1;
    wi = wi ? wi - 1 : n / 2;
    const cJSON *wsel = cJSON_GetArrayItem(get(r0, "windows"), wi);
    fprintf(f, "\n### Per head at w=%d (%s, %s; %s)\n\n| layer |", cJSON_GetArrayItem(wins, wi)->valueint, name,
            aha_report_subset(1), set);
    for (int h = 0; h < (int)num(tr, "n_heads"); h++) fprintf(f, " h%d |", h);
    fprintf(f, "\n|---|");
    for (int h = 0; h < (int)num(tr, "n_heads"); h++) fprintf(f, "---:|");
    fputc('\n', f);
    int l = 0;
    cJSON_ArrayForEach(x, get(wsel, "per_head")) {
        const cJSON *y;
        if (aha_report_layer_window(tr, l++)) continue; // in their own table
        fprintf(f, "| %d |", l - 1);
        cJSON_ArrayForEach(y, x) md_num(f, num(get(y, "t_ge_w"), "fraction"), " %.3f ");
        fputc('\n', f);
    }
    fprintf(f, "\n### Per document (%s, %s; %s)\n\nIn the dataset's order: doc is the document's number in it "
               "(doc_index; a document longer than ctx is a row per context), source where it came from.\n\n",
            name, aha_report_subset(1), set);
    md_header(f, "doc | source", wins);
    for (int d = 0; d < (int)num(tr, "n_docs") && d < o->max_rows; d++) {
        const cJSON *doc = cJSON_GetArrayItem(get(tr, "docs"), d);
        fprintf(f, "| %.0f | ", num(doc, "doc_index"));
        for (const char *c = get(doc, "source")->valuestring; *c; c++) fprintf(f, *c == '|' ? "\\|" : "%c", *c);
        fprintf(f, " |");
        cJSON_ArrayForEach(w, get(r0, "windows"))
            md_num(f, num(get(cJSON_GetArrayItem(get(w, "per_doc"), d), "t_ge_w"), "fraction"), " %.4f ");
        fputc('\n', f);
    }
    if (num(tr, "n_docs") > o->max_rows)
        fprintf(f, "\n(%d of %.0f documents; the CSV and JSON reports list all)\n", o->max_rows, num(tr, "n_docs"));
    fprintf(f, "\n### Long tail of the dependency distance d_eps (%s; %s)\n\n| eps | median | p90 | p99 | max |",
            aha_report_subset(0), set);
    int max_d = (int)num(tr, "max_d");
    for (int p = 1; p <= max_d; p *= 2) fprintf(f, " P(d>%d) |", p);
    fprintf(f, "\n|---:|---:|---:|---:|---:|");
    for (int p = 1; p <= max_d; p *= 2) fprintf(f, "---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(r, get(tr, "long_tail")) {
        const cJSON *q = get(r, "quantiles");
        fprintf(f, "| %g | %.0f | %.0f | %.0f | %.0f |", num(r, "eps"), num(q, "median"), num(q, "p90"), num(q, "p99"), num(q, "max"));
        for (int p = 1; p <= max_d; p *= 2) md_num(f, cJSON_GetArrayItem(get(r, "ccdf"), p)->valuedouble, " %.4f ");
        fputc('\n', f);
    }
    md_local_layers(f, tr);
    if (cJSON_GetArraySize(get(tr, "agreement"))) {
        fprintf(f, "\n### Learned (tau %g) vs oracle (%s; %s)\n\n| eps | w | TP | FP | FN | TN | precision | recall | F1 |\n"
                   "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", num(tr, "tau"), aha_report_subset(1), set);
        cJSON_ArrayForEach(r, get(tr, "agreement")) {
            const cJSON *c = get(r, "t_ge_w");
            fprintf(f, "| %g | %.0f | %.0f | %.0f | %.0f | %.0f |", num(r, "eps"), num(r, "window"), num(c, "tp"),
                    num(c, "fp"), num(c, "fn"), num(c, "tn"));
            md_num(f, num(c, "precision"), " %.4f "), md_num(f, num(c, "recall"), " %.4f "), md_num(f, num(c, "f1"), " %.4f ");
            fputc('\n', f);
        }
    }
    if (cJSON_GetArraySize(get(tr, "window_error"))) {
        fprintf(f, "\n### Window-output relative error ||o_w - o|| / ||o|| (%s; %s)\n\n"
                   "| w | mean | median | p90 | p99 | max |", aha_report_subset(0), set);
        cJSON_ArrayForEach(x, get(cJSON_GetArrayItem(get(tr, "window_error"), 0), "above"))
            fprintf(f, " > %g |", num(x, "threshold"));
        fprintf(f, "\n|---:|---:|---:|---:|---:|---:|");
        cJSON_ArrayForEach(x, get(cJSON_GetArrayItem(get(tr, "window_error"), 0), "above")) fprintf(f, "---:|");
        fputc('\n', f);
        cJSON_ArrayForEach(r, get(tr, "window_error")) {
            fprintf(f, "| %.0f |", num(r, "window"));
            md_num(f, num(r, "mean"), " %.4g "), md_num(f, num(r, "median"), " %.4g ");
            md_num(f, num(r, "p90"), " %.4g "), md_num(f, num(r, "p99"), " %.4g "), md_num(f, num(r, "max"), " %.4g ");
            cJSON_ArrayForEach(x, get(r, "above")) md_num(f, num(x, "fraction"), " %.4f ");
            fputc('\n', f);
        }
    }
    if (cJSON_GetArraySize(get(tr, "runs"))) {
        int oracle = 0;
        cJSON_ArrayForEach(r, get(tr, "runs")) oracle |= cJSON_IsNumber(get(r, "flops_fraction_incl_oracle_pass"));
        char how[64] = "";
        if (oracle) snprintf(how, sizeof how, "; the oracle routes by eps %g", cJSON_GetArrayItem(get(tr, "eps"), 0)->valuedouble);
        fprintf(f, "\n### Runs: quality vs sparsity (fraction global over all decisions and over t >= w; %s%s)\n\n| run | policy | w | ppl | ppl change | mean KL | "
                   "global, all decisions | global, t >= w | FLOPs executed/full |%s\n|---|---|---:|---:|---:|---:|---:|---:|---:|%s\n",
                set, how, oracle ? " FLOPs incl. the oracle's full pass/full |" : "", oracle ? "---:|" : "");
        cJSON_ArrayForEach(r, get(tr, "runs")) {
            fprintf(f, "| %s | %s | %.0f |", get(r, "name")->valuestring, get(r, "policy")->valuestring, num(r, "window"));
            md_num(f, num(r, "ppl"), " %.4f "), md_num(f, 100 * num(r, "ppl_change"), " %+.2f%% ");
            md_num(f, num(r, "mean_kl"), " %.5f "), md_num(f, num(get(r, "global_all"), "fraction"), " %.4f ");
            md_num(f, num(get(r, "global_t_ge_w"), "fraction"), " %.4f "), md_num(f, num(r, "flops_fraction"), " %.4f ");
            if (oracle) md_num(f, num(r, "flops_fraction_incl_oracle_pass"), " %.4f ");
            fputc('\n', f);
        }
        if (oracle)
            fprintf(f, "\nFLOPs executed count the routed pass only. An oracle run decides from d_eps, so it needs the "
                       "full-attention pass first: with it, the run costs more than full attention alone (the last "
                       "column; the oracle is a bound on what a router can skip, not a way to skip it).\n");
    }
    aha_frontier_md(f, tr);
    fputc('\n', f);
    if (get(tr, "tokens")) aha_tokens_md(f, tr, o->window), fputc('\n', f);
    if (get(tr, "mass")) aha_mass_md(f, tr), fputc('\n', f);
}

void aha_report_md(FILE *f, const cJSON *rep, const aha_report_opts *o) {
    const cJSON *tr, *traces = get(rep, "traces");
    fprintf(f, "# aha report\n\n");
    for (int tw = 0; tw < 2 && cJSON_GetArraySize(traces) > 1; tw++) { // side by side: oracle (first eps), both subsets
        fprintf(f, "## Side by side: fraction global, %s (the first eps's oracle)\n\n", aha_report_subset(tw));
        md_header(f, "trace", get(cJSON_GetArrayItem(traces, 0), "windows"));
        cJSON_ArrayForEach(tr, traces) {
            const cJSON *w, *x, *r0 = cJSON_GetArrayItem(get(tr, "routers"), 0);
            char set[AHA_SETTINGS_MAX];
            aha_report_settings(tr, set, sizeof set);
            fprintf(f, "| %s (%s; eps %g, %s) |", cJSON_GetArrayItem(get(tr, "files"), 0)->valuestring,
                    get(tr, "model")->valuestring, num(r0, "eps"), set);
            cJSON_ArrayForEach(w, get(cJSON_GetArrayItem(traces, 0), "windows")) { // the first trace's columns
                double v = NAN;
                cJSON_ArrayForEach(x, get(r0, "windows"))
                    if (num(x, "window") == w->valueint) v = num(get(x, tw ? "t_ge_w" : "all"), "fraction");
                md_num(f, v, " %.4f ");
            }
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    cJSON_ArrayForEach(tr, traces) md_trace(f, tr, o);
}
