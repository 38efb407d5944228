// aha report: CSV and Markdown rendered from the JSON report (so the three
// always agree), each field read through its row of the report's table.
#include "report.h"
#include "tokens.h"

#include "frontier.h"
#include "mass.h"
#include "report_schema.h"
#include "report_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

// Every number of object o (of kind `kind`) as a row, in the table's order,
// named by its key, and a null member (a number or an object) as a row
// without a value; with suffix, numbers only, named key_suffix.
static void csv_fields(const csv_key *k, const cJSON *o, report_obj kind, const char *suffix) {
    report_field_id fs[RF_COUNT];
    char metric[64];
    for (int i = 0, n = report_obj_fields(kind, fs); i < n; i++) {
        const report_field *r = &report_fields[fs[i]];
        if (r->shape || r->type == RT_STR || r->type == RT_BOOL || r->type == RT_OBJ) continue;
        if (r->type == RT_OBJ_NULL) {
            if (!suffix && rep_null(o, fs[i])) csv_row(k, r->key, NULL);
            continue;
        }
        const cJSON *v = rep_get(o, fs[i]);
        if (!v || (suffix && !cJSON_IsNumber(v))) continue; // absent where the table allows it
        if (suffix) snprintf(metric, sizeof metric, "%s_%s", r->key, suffix);
        csv_row(k, suffix ? metric : r->key, v);
    }
}

// A pair of fractions: {all, t_ge_w}.
static void csv_pair(csv_key k, const cJSON *p) {
    k.subset = "all", csv_fields(&k, rep_get(p, RF_PAIR_ALL), RO_FRAC, NULL);
    k.subset = "t_ge_w", csv_fields(&k, rep_get(p, RF_PAIR_T_GE_W), RO_FRAC, NULL);
}

static void csv_router(csv_key k, const cJSON *r) {
    const cJSON *w, *x, *y;
    k.router = rep_str(r, RF_ROUTER_ROUTER), k.eps = rep_num(r, RF_ROUTER_EPS);
    cJSON_ArrayForEach(w, rep_get(r, RF_ROUTER_WINDOWS)) {
        csv_key kw = k;
        kw.window = rep_int(w, RF_RW_WINDOW);
        kw.subset = "all", csv_fields(&kw, rep_get(w, RF_RW_ALL), RO_FRAC, NULL);
        kw.subset = "t_ge_w", csv_fields(&kw, rep_get(w, RF_RW_T_GE_W), RO_FRAC, NULL);
        kw.subset = NULL, kw.layer = 0;
        cJSON_ArrayForEach(x, rep_get(w, RF_RW_PER_LAYER)) csv_pair(kw, x), kw.layer++;
        kw.layer = 0;
        cJSON_ArrayForEach(x, rep_get(w, RF_RW_PER_HEAD)) {
            kw.head = 0;
            cJSON_ArrayForEach(y, x) csv_pair(kw, y), kw.head++;
            kw.layer++;
        }
        kw.layer = kw.head = -1, kw.doc = 0;
        cJSON_ArrayForEach(x, rep_get(w, RF_RW_PER_DOC)) csv_pair(kw, x), kw.doc++;
    }
}

static void csv_long_tail(csv_key k, const cJSON *r) {
    const cJSON *x, *y;
    k.table = "quantile", k.eps = rep_num(r, RF_LT_EPS);
    csv_fields(&k, rep_get(r, RF_LT_QUANTILES), RO_QUANTILES, NULL);
    k.layer = 0;
    cJSON_ArrayForEach(x, rep_get(r, RF_LT_PER_LAYER_QUANTILES)) csv_fields(&k, x, RO_QUANTILES, NULL), k.layer++;
    k.table = "ccdf", k.layer = -1, k.window = 0;
    cJSON_ArrayForEach(x, rep_get(r, RF_LT_CCDF)) csv_row(&k, "p_gt", x), k.window++;
    k.layer = 0;
    cJSON_ArrayForEach(y, rep_get(r, RF_LT_CCDF_PER_LAYER)) {
        k.window = 0;
        cJSON_ArrayForEach(x, y) csv_row(&k, "p_gt", x), k.window++;
        k.layer++;
    }
}

static void csv_agreement(csv_key k, const cJSON *r) {
    const cJSON *x, *y;
    k.table = "agreement", k.eps = rep_num(r, RF_AG_EPS), k.window = rep_int(r, RF_AG_WINDOW);
    k.subset = "all", csv_fields(&k, rep_get(r, RF_AG_ALL), RO_CONFUSION, NULL);
    k.subset = "t_ge_w", csv_fields(&k, rep_get(r, RF_AG_T_GE_W), RO_CONFUSION, NULL);
    k.layer = 0;
    cJSON_ArrayForEach(x, rep_get(r, RF_AG_PER_HEAD_T_GE_W)) {
        k.head = 0;
        cJSON_ArrayForEach(y, x) csv_fields(&k, y, RO_CONFUSION, NULL), k.head++;
        k.layer++;
    }
}

static void csv_werr(csv_key k, const cJSON *r) {
    const cJSON *x;
    k.table = "window_error", k.window = rep_int(r, RF_WERR_WINDOW);
    csv_fields(&k, r, RO_WERR, NULL);
    cJSON_ArrayForEach(x, rep_get(r, RF_WERR_ABOVE)) {
        char metric[48];
        snprintf(metric, sizeof metric, "fraction_above_%g", rep_num(x, RF_ABOVE_THRESHOLD));
        csv_row(&k, metric, rep_get(x, RF_FRAC_FRACTION));
    }
}

static void csv_run(csv_key k, const cJSON *r) {
    k.table = "run", k.router = rep_str(r, RF_RUN_POLICY), k.subset = rep_str(r, RF_RUN_NAME);
    k.window = rep_int(r, RF_RUN_WINDOW);
    csv_fields(&k, r, RO_RUN, NULL);
    csv_fields(&k, rep_get(r, RF_RUN_GLOBAL_ALL), RO_FRAC, "all"); // global_all, total_all, fraction_all
    csv_fields(&k, rep_get(r, RF_RUN_GLOBAL_T_GE_W), RO_FRAC, "t_ge_w");
    const cJSON *x;
    k.layer = 0;
    cJSON_ArrayForEach(x, rep_get(r, RF_RUN_PER_LAYER)) { // a row per layer, named as the run's own
        if (!cJSON_IsNull(x)) {
            csv_fields(&k, rep_get(x, RF_PAIR_ALL), RO_FRAC, "all");
            csv_fields(&k, rep_get(x, RF_PAIR_T_GE_W), RO_FRAC, "t_ge_w");
        }
        k.layer++;
    }
}

static void csv_local_layer(csv_key k, const cJSON *r) { // natively local layers, apart
    const cJSON *x;
    k.table = "local_layer", k.layer = rep_int(r, RF_LOCAL_LAYER);
    csv_row(&k, report_fields[RF_LOCAL_WINDOW].key, rep_get(r, RF_LOCAL_WINDOW));
    cJSON_ArrayForEach(x, rep_get(r, RF_LOCAL_QUANTILES)) k.eps = rep_num(x, RF_LOCALQ_EPS), csv_fields(&k, x, RO_LOCAL_QUANTILES, NULL);
}

static void csv_trace(FILE *f, int t, const cJSON *tr) {
    csv_key k = {f, t, "trace", NULL, NULL, NAN, -1, -1, -1, -1};
    const cJSON *x;
    csv_fields(&k, tr, RO_TRACE, NULL); // sizes and settings: sinks, ctx, decisions, ...
    k.table = "document", k.doc = 0; // which dataset document each per-document row is
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_DOCS)) csv_row(&k, report_fields[RF_DOC_INDEX].key, rep_get(x, RF_DOC_INDEX)), k.doc++;
    k.doc = -1, k.table = "fraction";
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_ROUTERS)) csv_router(k, x);
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_LONG_TAIL)) csv_long_tail(k, x);
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_AGREEMENT)) csv_agreement(k, x);
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_WINDOW_ERROR)) csv_werr(k, x);
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_RUNS)) csv_run(k, x);
    cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_LOCAL_LAYERS)) csv_local_layer(k, x);
    aha_frontier_csv(f, t, tr);
    aha_mass_csv(f, t, tr);
}

int aha_report_csv(FILE *f, const cJSON *rep) {
    rep_read_reset();
    fprintf(f, "trace,table,router,eps,window,layer,head,doc,subset,metric,value\n");
    int t = 0;
    const cJSON *tr;
    cJSON_ArrayForEach(tr, rep_get(rep, RF_REPORT_TRACES)) csv_trace(f, t++, tr);
    return rep_read_failed() ? -1 : 0;
}

// ---- Markdown ----

// A header: first (its columns " | "-separated), then a column per window.
static void md_header(FILE *f, const char *first, const cJSON *windows) {
    fprintf(f, "| %s |", first);
    for (int i = 0; i < cJSON_GetArraySize(windows); i++) fprintf(f, " w=%.0f |", rep_num_at(windows, i));
    fprintf(f, "\n|---|");
    for (const char *p = strstr(first, " | "); p; p = strstr(p + 1, " | ")) fprintf(f, "---|");
    for (int i = 0; i < cJSON_GetArraySize(windows); i++) fprintf(f, "---:|");
    fputc('\n', f);
}

// A fraction of pair x (a per-layer, per-head or per-document entry) over t >= w.
static double t_ge_w(const cJSON *x) { return rep_num(rep_get(x, RF_PAIR_T_GE_W), RF_FRAC_FRACTION); }

// Natively local layers, apart from the tables above: their window and d_eps quantiles.
static void md_local_layers(FILE *f, const cJSON *tr) {
    const cJSON *x, *q, *ll = rep_get(tr, RF_TRACE_LOCAL_LAYERS), *q0 = rep_get(cJSON_GetArrayItem(ll, 0), RF_LOCAL_QUANTILES);
    if (!cJSON_GetArraySize(ll)) return;
    fprintf(f, "\n### Natively local layers (%d of %d; not counted above)\n\n"
               "Each runs its native sliding window in every mode: the router decides nothing there (gate 0) and "
               "d_eps is at most the window by construction. d_eps quantiles (all decisions):\n\n| layer | window |",
            cJSON_GetArraySize(ll), rep_int(tr, RF_TRACE_N_LAYERS));
    cJSON_ArrayForEach(q, q0) fprintf(f, " eps %g median | p90 | p99 | max |", rep_num(q, RF_LOCALQ_EPS));
    fprintf(f, "\n|---:|---:|");
    cJSON_ArrayForEach(q, q0) fprintf(f, "---:|---:|---:|---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(x, ll) {
        fprintf(f, "| %d | %d |", rep_int(x, RF_LOCAL_LAYER), rep_int(x, RF_LOCAL_WINDOW));
        cJSON_ArrayForEach(q, rep_get(x, RF_LOCAL_QUANTILES))
            fprintf(f, " %d | %d | %d | %d |", rep_int(q, RF_Q_MEDIAN), rep_int(q, RF_Q_P90), rep_int(q, RF_Q_P99), rep_int(q, RF_Q_MAX));
        fputc('\n', f);
    }
}

// The trace's heading and what it is; 0 when it has no decisions (nothing follows).
static int md_intro(FILE *f, const cJSON *tr, const char *set) {
    const int L = rep_int(tr, RF_TRACE_N_LAYERS), G = rep_int(tr, RF_TRACE_N_GLOBAL_LAYERS);
    fprintf(f, "## %s\n\n", rep_str(tr, RF_TRACE_MODEL));
    fprintf(f, "%s on %s: mode %s, router %s, device %s; %.0f documents, %.0f tokens, %d layers x %d heads = %.0f decisions%s.\n\n",
            aha_report_file(tr), rep_str(tr, RF_TRACE_DATASET), rep_str(tr, RF_TRACE_MODE), rep_str(tr, RF_TRACE_ROUTER),
            rep_str(tr, RF_TRACE_DEVICE), rep_num(tr, RF_TRACE_N_DOCS), rep_num(tr, RF_TRACE_N_TOKENS), L,
            rep_int(tr, RF_TRACE_N_HEADS), rep_num(tr, RF_TRACE_DECISIONS),
            rep_true(tr, RF_TRACE_COMPLETE) ? "" : " (unfinished trace: its completed documents)");
    if (aha_report_has_local(tr))
        fprintf(f, "**Natively local layers:** %d of %d layers run a native sliding window (the router decides "
                   "nothing there, d_eps is at most the window): every number below counts the %d global layers' "
                   "%.0f decisions; the local layers have their own table.\n\n",
                L - G, L, G, rep_num(tr, RF_TRACE_DECISIONS_COUNTED));
    if (rep_int(tr, RF_TRACE_SHARDS_MISSING) > 0)
        fprintf(f, "**Part of a run:** shards %s only, %d missing: the numbers cover those only.\n\n",
                rep_str(tr, RF_TRACE_SHARDS), rep_int(tr, RF_TRACE_SHARDS_MISSING));
    if (rep_num(tr, RF_TRACE_DECISIONS) == 0) { // every fraction would be 0/0
        fprintf(f, "**No decisions:** %s no documents (a shard of a run that had none, say), so there is nothing "
                   "to count.\n\n", rep_len(tr, RF_TRACE_FILES) > 1 ? "these traces hold" : "this trace holds");
        return 0;
    }
    fprintf(f, "Recorded with %s. A fraction counts **all decisions** (every layer, token and head, prompt tokens "
               "included: the paper's metric, the default) or, where marked, only **decisions with t >= w** (those "
               "where the window drops keys; an oracle never goes global at t < w).\n\n", set);
    return 1;
}

// Every router's fraction global per window, over both subsets, with the counts.
static void md_fractions(FILE *f, const cJSON *tr, const char *set) {
    const cJSON *r, *w;
    char name[64];
    for (int tw = 0; tw < 2; tw++) {
        fprintf(f, "### Fraction of full-attention decisions, %s%s (%s)\n\n", aha_report_subset(tw), tw ? "" : ", the default",
                set);
        md_header(f, "router", rep_get(tr, RF_TRACE_WINDOWS));
        cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_ROUTERS)) {
            aha_report_router_name(r, name, sizeof name);
            fprintf(f, "| %s |", name);
            cJSON_ArrayForEach(w, rep_get(r, RF_ROUTER_WINDOWS)) {
                const cJSON *fr = rep_get(w, tw ? RF_RW_T_GE_W : RF_RW_ALL);
                fprintf(f, " %.4f (%.0f/%.0f) |", rep_num(fr, RF_FRAC_FRACTION), rep_num(fr, RF_FRAC_GLOBAL),
                        rep_num(fr, RF_FRAC_TOTAL));
            }
            fputc('\n', f);
        }
        fputc('\n', f);
    }
}

// The first router's fractions (t >= w) per global layer, per head at one
// window (--window, else the middle one), per document; name: its name.
static void md_per_layer(FILE *f, const cJSON *tr, const cJSON *r0, const char *name, const char *set) {
    const cJSON *w;
    fprintf(f, "### Per layer (%s, %s; %s)\n\n", name, aha_report_subset(1), set);
    md_header(f, "layer", rep_get(tr, RF_TRACE_WINDOWS));
    for (int l = 0; l < rep_int(tr, RF_TRACE_N_LAYERS); l++) {
        if (aha_report_layer_window(tr, l)) continue; // in their own table
        fprintf(f, "| %d |", l);
        cJSON_ArrayForEach(w, rep_get(r0, RF_ROUTER_WINDOWS)) aha_md_num(f, t_ge_w(rep_at(w, RF_RW_PER_LAYER, l)), " %.4f ");
        fputc('\n', f);
    }
}

static void md_per_head(FILE *f, const cJSON *tr, const cJSON *r0, const char *name, const char *set, int window) {
    const cJSON *x, *y, *wins = rep_get(tr, RF_TRACE_WINDOWS);
    const int H = rep_int(tr, RF_TRACE_N_HEADS), n = cJSON_GetArraySize(wins);
    int wi = 0, l = 0;
    for (int i = 0; i < n; i++)
        if (rep_num_at(wins, i) == window) wi = i + 1;
    wi = wi ? wi - 1 : n / 2;
    fprintf(f, "\n### Per head at w=%.0f (%s, %s; %s)\n\n| layer |", rep_num_at(wins, wi), name, aha_report_subset(1), set);
    for (int h = 0; h < H; h++) fprintf(f, " h%d |", h);
    fprintf(f, "\n|---|");
    for (int h = 0; h < H; h++) fprintf(f, "---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(x, rep_get(rep_at(r0, RF_ROUTER_WINDOWS, wi), RF_RW_PER_HEAD)) {
        if (aha_report_layer_window(tr, l++)) continue; // in their own table
        fprintf(f, "| %d |", l - 1);
        cJSON_ArrayForEach(y, x) aha_md_num(f, t_ge_w(y), " %.3f ");
        fputc('\n', f);
    }
}

static void md_per_doc(FILE *f, const cJSON *tr, const cJSON *r0, const char *name, const char *set, int max_rows) {
    const cJSON *w;
    const int n_docs = rep_int(tr, RF_TRACE_N_DOCS);
    fprintf(f, "\n### Per document (%s, %s; %s)\n\nIn the dataset's order: doc is the document's number in it "
               "(doc_index; a document longer than ctx is a row per context), source where it came from.\n\n",
            name, aha_report_subset(1), set);
    md_header(f, "doc | source", rep_get(tr, RF_TRACE_WINDOWS));
    for (int d = 0; d < n_docs && d < max_rows; d++) {
        const cJSON *doc = rep_at(tr, RF_TRACE_DOCS, d);
        fprintf(f, "| %.0f | ", rep_num(doc, RF_DOC_INDEX));
        for (const char *c = rep_str(doc, RF_DOC_SOURCE); *c; c++) fprintf(f, *c == '|' ? "\\|" : "%c", *c);
        fprintf(f, " |");
        cJSON_ArrayForEach(w, rep_get(r0, RF_ROUTER_WINDOWS)) aha_md_num(f, t_ge_w(rep_at(w, RF_RW_PER_DOC, d)), " %.4f ");
        fputc('\n', f);
    }
    if (n_docs > max_rows) fprintf(f, "\n(%d of %d documents; the CSV and JSON reports list all)\n", max_rows, n_docs);
}

static void md_long_tail(FILE *f, const cJSON *tr, const char *set) {
    const cJSON *r;
    const int max_d = rep_int(tr, RF_TRACE_MAX_D);
    fprintf(f, "\n### Long tail of the dependency distance d_eps (%s; %s)\n\n| eps | median | p90 | p99 | max |",
            aha_report_subset(0), set);
    for (int p = 1; p <= max_d; p *= 2) fprintf(f, " P(d>%d) |", p);
    fprintf(f, "\n|---:|---:|---:|---:|---:|");
    for (int p = 1; p <= max_d; p *= 2) fprintf(f, "---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_LONG_TAIL)) {
        const cJSON *q = rep_get(r, RF_LT_QUANTILES);
        fprintf(f, "| %g | %d | %d | %d | %d |", rep_num(r, RF_LT_EPS), rep_int(q, RF_Q_MEDIAN), rep_int(q, RF_Q_P90),
                rep_int(q, RF_Q_P99), rep_int(q, RF_Q_MAX));
        for (int p = 1; p <= max_d; p *= 2) aha_md_num(f, rep_num_at(rep_get(r, RF_LT_CCDF), p), " %.4f ");
        fputc('\n', f);
    }
}

static void md_agreement(FILE *f, const cJSON *tr, const char *set) {
    const cJSON *r;
    if (!rep_len(tr, RF_TRACE_AGREEMENT)) return;
    fprintf(f, "\n### Learned (tau %g) vs oracle (%s; %s)\n\n| eps | w | TP | FP | FN | TN | precision | recall | F1 |\n"
               "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", rep_num(tr, RF_TRACE_TAU), aha_report_subset(1), set);
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_AGREEMENT)) {
        const cJSON *c = rep_get(r, RF_AG_T_GE_W);
        fprintf(f, "| %g | %d | %.0f | %.0f | %.0f | %.0f |", rep_num(r, RF_AG_EPS), rep_int(r, RF_AG_WINDOW),
                rep_num(c, RF_CONF_TP), rep_num(c, RF_CONF_FP), rep_num(c, RF_CONF_FN), rep_num(c, RF_CONF_TN));
        aha_md_num(f, rep_num(c, RF_CONF_PRECISION), " %.4f "), aha_md_num(f, rep_num(c, RF_CONF_RECALL), " %.4f ");
        aha_md_num(f, rep_num(c, RF_CONF_F1), " %.4f ");
        fputc('\n', f);
    }
}

static void md_werr(FILE *f, const cJSON *tr, const char *set) {
    const cJSON *r, *x, *above0 = rep_get(rep_at(tr, RF_TRACE_WINDOW_ERROR, 0), RF_WERR_ABOVE);
    static const report_field_id cols[] = {RF_WERR_MEAN, RF_WERR_MEDIAN, RF_WERR_P90, RF_WERR_P99, RF_WERR_MAX};
    if (!rep_len(tr, RF_TRACE_WINDOW_ERROR)) return;
    fprintf(f, "\n### Window-output relative error ||o_w - o|| / ||o|| (%s; %s)\n\n"
               "| w | mean | median | p90 | p99 | max |", aha_report_subset(0), set);
    cJSON_ArrayForEach(x, above0) fprintf(f, " > %g |", rep_num(x, RF_ABOVE_THRESHOLD));
    fprintf(f, "\n|---:|---:|---:|---:|---:|---:|");
    cJSON_ArrayForEach(x, above0) fprintf(f, "---:|");
    fputc('\n', f);
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_WINDOW_ERROR)) {
        fprintf(f, "| %d |", rep_int(r, RF_WERR_WINDOW));
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) aha_md_num(f, rep_num(r, cols[k]), " %.4g ");
        cJSON_ArrayForEach(x, rep_get(r, RF_WERR_ABOVE)) aha_md_num(f, rep_num(x, RF_FRAC_FRACTION), " %.4f ");
        fputc('\n', f);
    }
}

static void md_runs(FILE *f, const cJSON *tr, const char *set) {
    const cJSON *r;
    if (!rep_len(tr, RF_TRACE_RUNS)) return;
    int oracle = 0;
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_RUNS)) oracle |= rep_has(r, RF_RUN_FLOPS_FRACTION_INCL_ORACLE);
    char how[64] = "";
    if (oracle) snprintf(how, sizeof how, "; the oracle routes by eps %g", rep_num_at(rep_get(tr, RF_TRACE_EPS), 0));
    fprintf(f, "\n### Runs: quality vs sparsity (fraction global over all decisions and over t >= w; %s%s)\n\n| run | policy | w | ppl | ppl change | mean KL | "
               "global, all decisions | global, t >= w | FLOPs executed/full |%s\n|---|---|---:|---:|---:|---:|---:|---:|---:|%s\n",
            set, how, oracle ? " FLOPs incl. the oracle's full pass/full |" : "", oracle ? "---:|" : "");
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_RUNS)) {
        fprintf(f, "| %s | %s | %d |", rep_str(r, RF_RUN_NAME), rep_str(r, RF_RUN_POLICY), rep_int(r, RF_RUN_WINDOW));
        aha_md_num(f, rep_num(r, RF_RUN_PPL), " %.4f "), aha_md_num(f, 100 * rep_num(r, RF_RUN_PPL_CHANGE), " %+.2f%% ");
        aha_md_num(f, rep_num(r, RF_RUN_MEAN_KL), " %.5f ");
        aha_md_num(f, rep_num(rep_get(r, RF_RUN_GLOBAL_ALL), RF_FRAC_FRACTION), " %.4f ");
        aha_md_num(f, rep_num(rep_get(r, RF_RUN_GLOBAL_T_GE_W), RF_FRAC_FRACTION), " %.4f ");
        aha_md_num(f, rep_num(r, RF_RUN_FLOPS_FRACTION), " %.4f ");
        if (oracle) aha_md_num(f, rep_num(r, RF_RUN_FLOPS_FRACTION_INCL_ORACLE), " %.4f ");
        fputc('\n', f);
    }
    if (oracle)
        fprintf(f, "\nFLOPs executed count the routed pass only. An oracle run decides from d_eps, so it needs the "
                   "full-attention pass first: with it, the run costs more than full attention alone (the last "
                   "column; the oracle is a bound on what a router can skip, not a way to skip it).\n");
}

static void md_trace(FILE *f, const cJSON *tr, const aha_report_opts *o) {
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    if (!md_intro(f, tr, set)) return;
    md_fractions(f, tr, set);
    const cJSON *r0 = rep_at(tr, RF_TRACE_ROUTERS, 0);
    char name[64];
    aha_report_router_name(r0, name, sizeof name);
    md_per_layer(f, tr, r0, name, set);
    md_per_head(f, tr, r0, name, set, o->window);
    md_per_doc(f, tr, r0, name, set, o->max_rows);
    md_long_tail(f, tr, set);
    md_local_layers(f, tr);
    md_agreement(f, tr, set);
    md_werr(f, tr, set);
    md_runs(f, tr, set);
    aha_frontier_md(f, tr);
    fputc('\n', f);
    if (rep_has(tr, RF_TRACE_TOKENS)) aha_tokens_md(f, tr, o->window), fputc('\n', f);
    if (rep_has(tr, RF_TRACE_MASS)) aha_mass_md(f, tr), fputc('\n', f);
}

// Several traces: the first eps's oracle of each, in the first trace's windows.
static void md_side_by_side(FILE *f, const cJSON *traces, int tw) {
    const cJSON *tr, *x, *wins = rep_get(cJSON_GetArrayItem(traces, 0), RF_TRACE_WINDOWS);
    fprintf(f, "## Side by side: fraction global, %s (the first eps's oracle)\n\n", aha_report_subset(tw));
    md_header(f, "trace", wins);
    cJSON_ArrayForEach(tr, traces) {
        const cJSON *r0 = rep_at(tr, RF_TRACE_ROUTERS, 0);
        char set[AHA_SETTINGS_MAX];
        aha_report_settings(tr, set, sizeof set);
        fprintf(f, "| %s (%s; eps %g, %s) |", aha_report_file(tr), rep_str(tr, RF_TRACE_MODEL), rep_num(r0, RF_ROUTER_EPS), set);
        for (int i = 0; i < cJSON_GetArraySize(wins); i++) { // the first trace's columns
            double v = NAN;
            cJSON_ArrayForEach(x, rep_get(r0, RF_ROUTER_WINDOWS))
                if (rep_num(x, RF_RW_WINDOW) == rep_num_at(wins, i)) v = rep_num(rep_get(x, tw ? RF_RW_T_GE_W : RF_RW_ALL), RF_FRAC_FRACTION);
            aha_md_num(f, v, " %.4f ");
        }
        fputc('\n', f);
    }
    fputc('\n', f);
}

int aha_report_md(FILE *f, const cJSON *rep, const aha_report_opts *o) {
    const cJSON *tr, *traces = rep_get(rep, RF_REPORT_TRACES);
    rep_read_reset();
    fprintf(f, "# aha report\n\n");
    for (int tw = 0; tw < 2 && cJSON_GetArraySize(traces) > 1; tw++) md_side_by_side(f, traces, tw);
    cJSON_ArrayForEach(tr, traces) md_trace(f, tr, o);
    return rep_read_failed() ? -1 : 0;
}
