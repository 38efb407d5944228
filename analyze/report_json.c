// The JSON report: every number of the report with the counts behind it,
// each field added by its row of the report's table (report_schema.c, where
// every field is described; docs/report-format.md). Fractions come in two
// subsets, named in every key: "all" (every (layer, token, head) decision,
// prompt tokens included: the paper's metric, the default) and "t_ge_w"
// (decisions with t >= w: where the window drops keys).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_schema.h"

static double ratio(int64_t a, int64_t b) { return b ? (double)a / (double)b : NAN; } // NaN: null

static cJSON *frac_json(aha_frac f) { return rep_frac(f.global, f.total); }

static cJSON *pair_json(aha_frac all, aha_frac tw) {
    cJSON *o = cJSON_CreateObject();
    rep_add(o, RF_PAIR_ALL, frac_json(all));
    rep_add(o, RF_PAIR_T_GE_W, frac_json(tw));
    return o;
}

static cJSON *conf_json(aha_confusion c) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_CONF_TP, (double)c.tp);
    rep_add_num(o, RF_CONF_FP, (double)c.fp);
    rep_add_num(o, RF_CONF_FN, (double)c.fn);
    rep_add_num(o, RF_CONF_TN, (double)c.tn);
    rep_add_num(o, RF_CONF_PRECISION, ratio(c.tp, c.tp + c.fp));
    rep_add_num(o, RF_CONF_RECALL, ratio(c.tp, c.tp + c.fn));
    rep_add_num(o, RF_CONF_F1, ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn));
    return o;
}

// Fractions of one router (eps e, or -1 = learned) at every window.
static cJSON *router_json(const aha_stats *s, int e) {
    cJSON *o = cJSON_CreateObject(), *ws = rep_add_array(o, RF_ROUTER_WINDOWS);
    rep_add_str(o, RF_ROUTER_ROUTER, e < 0 ? "learned" : "oracle");
    if (e < 0) rep_add_num(o, RF_ROUTER_TAU, s->meta.m.tau);
    else rep_add_num(o, RF_ROUTER_EPS, s->meta.m.eps[e]);
    for (int i = 0; i < s->nw; i++) {
        cJSON *w = cJSON_CreateObject();
        cJSON_AddItemToArray(ws, w);
        rep_add_num(w, RF_RW_WINDOW, s->meta.m.windows[i]);
        rep_add(w, RF_RW_ALL, frac_json(aha_stats_frac(s, e, i, -1, -1, 0)));
        rep_add(w, RF_RW_T_GE_W, frac_json(aha_stats_frac(s, e, i, -1, -1, 1)));
        cJSON *pl = rep_add_array(w, RF_RW_PER_LAYER), *ph = rep_add_array(w, RF_RW_PER_HEAD);
        for (int l = 0; l < s->L; l++) {
            cJSON_AddItemToArray(pl, pair_json(aha_stats_frac(s, e, i, l, -1, 0), aha_stats_frac(s, e, i, l, -1, 1)));
            cJSON *row = cJSON_CreateArray();
            cJSON_AddItemToArray(ph, row);
            for (int h = 0; h < s->H; h++)
                cJSON_AddItemToArray(row, pair_json(aha_stats_frac(s, e, i, l, h, 0), aha_stats_frac(s, e, i, l, h, 1)));
        }
        cJSON *pd = rep_add_array(w, RF_RW_PER_DOC);
        for (int64_t d = 0; d < s->meta.n_docs; d++)
            cJSON_AddItemToArray(pd, pair_json(aha_stats_doc_frac(s, e, i, d, 0), aha_stats_doc_frac(s, e, i, d, 1)));
    }
    return o;
}

static cJSON *quantiles_json(const aha_stats *s, int e, int l) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_Q_MEDIAN, aha_stats_quantile(s, e, l, 0.5));
    rep_add_num(o, RF_Q_P90, aha_stats_quantile(s, e, l, 0.9));
    rep_add_num(o, RF_Q_P99, aha_stats_quantile(s, e, l, 0.99));
    rep_add_num(o, RF_Q_MAX, aha_stats_quantile(s, e, l, 1.0));
    return o;
}

static cJSON *long_tail_json(const aha_stats *s, int e, double *ccdf) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_LT_EPS, s->meta.m.eps[e]);
    rep_add(o, RF_LT_QUANTILES, quantiles_json(s, e, -1));
    cJSON *pq = rep_add_array(o, RF_LT_PER_LAYER_QUANTILES);
    for (int l = 0; l < s->L; l++) cJSON_AddItemToArray(pq, quantiles_json(s, e, l));
    aha_stats_ccdf(s, e, -1, ccdf);
    rep_add(o, RF_LT_CCDF, cJSON_CreateDoubleArray(ccdf, s->max_d + 1));
    cJSON *pl = rep_add_array(o, RF_LT_CCDF_PER_LAYER);
    for (int l = 0; l < s->L; l++) {
        aha_stats_ccdf(s, e, l, ccdf);
        cJSON_AddItemToArray(pl, cJSON_CreateDoubleArray(ccdf, s->max_d + 1));
    }
    return o;
}

static cJSON *agreement_json(const aha_stats *s, int e, int i) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_AG_EPS, s->meta.m.eps[e]);
    rep_add_num(o, RF_AG_WINDOW, s->meta.m.windows[i]);
    rep_add(o, RF_AG_ALL, conf_json(aha_stats_confusion(s, e, i, -1, -1, 0)));
    rep_add(o, RF_AG_T_GE_W, conf_json(aha_stats_confusion(s, e, i, -1, -1, 1)));
    cJSON *ph = rep_add_array(o, RF_AG_PER_HEAD_T_GE_W);
    for (int l = 0; l < s->L; l++) {
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(ph, row);
        for (int h = 0; h < s->H; h++) cJSON_AddItemToArray(row, conf_json(aha_stats_confusion(s, e, i, l, h, 1)));
    }
    return o;
}

// Decisions run r routed global over all decisions and over t >= w (its
// window, counted from its gates whether or not the window was recorded),
// of the global layers (l < 0) or of layer l; ok[] = 0: the run has no gates
// (full attention counts as all global over all decisions). A natively
// local layer's decisions are not the policy's.
static void run_global(const aha_stats *s, const aha_run_stats *rs, int l, aha_frac *all, aha_frac *tw, int *ok) {
    int64_t per = (int64_t)(l < 0 ? s->n_global : !aha_trace_layer_window(&s->meta.m, l)) * s->H, tokens = 0;
    const int full = !rs->info.has_gate; // no gates stored: the run attended fully (policy global)
    int lo = l < 0 ? 0 : l, hi = l < 0 ? s->L : l + 1; // the layers counted
    for (int b = 0; b < s->nb; b++) tokens += s->pos_n[b];
    *all = (aha_frac){0, tokens * per};
    *tw = (aha_frac){0, rs->tok_tw * per};
    for (int k = lo; rs->gate_l && k < hi; k++) all->global += rs->gate_l[k], tw->global += rs->gate_l[s->L + k];
    if (!rs->gate_l) all->global = full ? all->total : 0;
    ok[0] = rs->gate_l || full;
    ok[1] = rs->gate_l != NULL;
}

static cJSON *run_json(const aha_stats *s, int r, int full) {
    const aha_run_stats *rs = &s->runs[r];
    cJSON *o = cJSON_CreateObject();
    rep_add_str(o, RF_RUN_NAME, rs->info.name);
    rep_add_str(o, RF_RUN_POLICY, rs->info.policy);
    rep_add_num(o, RF_RUN_WINDOW, rs->info.window);
    rep_add_num(o, RF_RUN_PARAM, rs->info.param); // the grid point's number; null: none
    rep_add_num(o, RF_RUN_TOKENS_SCORED, (double)rs->q.n_nll);
    double ppl = aha_stats_ppl(s, r), ref = full >= 0 ? aha_stats_ppl(s, full) : NAN;
    rep_add_num(o, RF_RUN_MEAN_NLL, rs->q.n_nll ? rs->q.nll_sum / (double)rs->q.n_nll : NAN);
    rep_add_num(o, RF_RUN_PPL, ppl);
    rep_add_num(o, RF_RUN_PPL_DELTA, ppl - ref);
    rep_add_num(o, RF_RUN_PPL_CHANGE, ppl / ref - 1);
    rep_add_num(o, RF_RUN_MEAN_KL, aha_trace_mean_kl(&rs->q));
    aha_frac all, tw;
    int ok[2];
    run_global(s, rs, -1, &all, &tw, ok);
    rep_add(o, RF_RUN_GLOBAL_ALL, ok[0] ? frac_json(all) : cJSON_CreateNull());
    rep_add(o, RF_RUN_GLOBAL_T_GE_W, ok[1] ? frac_json(tw) : cJSON_CreateNull());
    cJSON *pl = rep_add_array(o, RF_RUN_PER_LAYER);
    for (int l = 0; l < s->L; l++) {
        run_global(s, rs, l, &all, &tw, ok);
        int mine = rs->gate_l && !aha_trace_layer_window(&s->meta.m, l);
        cJSON_AddItemToArray(pl, mine ? pair_json(all, tw) : cJSON_CreateNull());
    }
    // Executed FLOPs are the routed pass's; a policy that decides from the
    // full-attention pass (the oracle from d_eps, werr from window errors)
    // needs that pass first (the run's full_pass): counted beside, not hidden.
    const double fe = rs->info.flops_executed;
    const double ff = rs->info.flops_full;
    const int pass = rs->info.full_pass == 1;
    rep_add_num(o, RF_RUN_FLOPS_EXECUTED, fe);
    rep_add_num(o, RF_RUN_FLOPS_FULL, ff);
    rep_add_num(o, RF_RUN_FLOPS_FRACTION, fe / ff);
    rep_add_num(o, RF_RUN_FLOPS_INCL_ORACLE, pass ? fe + ff : NAN);
    rep_add_num(o, RF_RUN_FLOPS_FRACTION_INCL_ORACLE, pass ? (fe + ff) / ff : NAN);
    return o;
}

// The window-output error at window index i: quantiles, mean, and the
// fraction of decisions whose window output is off by more than a threshold.
static cJSON *werr_json(const aha_stats *s, int i) {
    static const double thr[] = {0.01, 0.05, 0.1};
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_WERR_WINDOW, s->meta.m.windows[i]);
    rep_add_num(o, RF_WERR_MEAN, aha_stats_werr_mean(s, i));
    rep_add_num(o, RF_WERR_MEDIAN, aha_stats_werr_quantile(s, i, 0.5));
    rep_add_num(o, RF_WERR_P90, aha_stats_werr_quantile(s, i, 0.9));
    rep_add_num(o, RF_WERR_P99, aha_stats_werr_quantile(s, i, 0.99));
    rep_add_num(o, RF_WERR_MAX, aha_stats_werr_quantile(s, i, 1.0));
    cJSON *ab = rep_add_array(o, RF_WERR_ABOVE);
    for (size_t k = 0; k < sizeof thr / sizeof *thr; k++) {
        cJSON *x = frac_json(aha_stats_werr_above(s, i, thr[k]));
        rep_add_num(x, RF_ABOVE_THRESHOLD, thr[k]);
        cJSON_AddItemToArray(ab, x);
    }
    return o;
}

// Natively local layers, apart: each one's window and d_eps quantiles per
// eps (at most the window by construction).
static cJSON *local_layers_json(const aha_stats *s) {
    cJSON *a = cJSON_CreateArray();
    for (int l = 0; l < s->L; l++) {
        int w = aha_trace_layer_window(&s->meta.m, l);
        if (!w) continue;
        cJSON *o = cJSON_CreateObject(), *q = rep_add_array(o, RF_LOCAL_QUANTILES);
        rep_add_num(o, RF_LOCAL_LAYER, l);
        rep_add_num(o, RF_LOCAL_WINDOW, w);
        for (int e = 0; e < s->n_eps; e++) {
            cJSON *x = quantiles_json(s, e, l);
            rep_add_num(x, RF_LOCALQ_EPS, s->meta.m.eps[e]);
            cJSON_AddItemToArray(q, x);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

// What the run is: its files, model, data, settings and sizes.
static void trace_what(cJSON *o, const aha_stats *s) {
    const aha_tr *tr = &s->meta;
    const aha_trace_meta *m = &tr->m;
    rep_add(o, RF_TRACE_FILES, cJSON_CreateStringArray(s->paths, s->n_files));
    rep_add_str(o, RF_TRACE_MODEL, m->model_path);
    rep_add_str(o, RF_TRACE_ARCH, m->arch);
    rep_add_str(o, RF_TRACE_DATASET, m->dataset);
    rep_add_str(o, RF_TRACE_MODE, m->mode);
    rep_add_str(o, RF_TRACE_DEVICE, m->device);
    rep_add_str(o, RF_TRACE_ROUTER, m->router);
    rep_add_num(o, RF_TRACE_TAU, m->tau);
    rep_add_num(o, RF_TRACE_FORMAT_VERSION, tr->format_version);
    rep_add_bool(o, RF_TRACE_COMPLETE, tr->complete);
    rep_add_str(o, RF_TRACE_SHARDS, s->shards ? s->shards : "");
    rep_add_num(o, RF_TRACE_SHARDS_MISSING, s->shards_missing);
    rep_add_num(o, RF_TRACE_N_LAYERS, s->L);
    rep_add_num(o, RF_TRACE_N_HEADS, s->H);
    rep_add_num(o, RF_TRACE_N_DOCS, (double)tr->n_docs);
    cJSON *docs = rep_add_array(o, RF_TRACE_DOCS); // the per-document rows: which document each is
    for (int64_t d = 0; d < tr->n_docs; d++) {
        cJSON *x = cJSON_CreateObject();
        rep_add_num(x, RF_DOC_INDEX, (double)s->docs[d].index);
        rep_add_str(x, RF_DOC_SOURCE, s->docs[d].source);
        cJSON_AddItemToArray(docs, x);
    }
    rep_add_num(o, RF_TRACE_N_TOKENS, (double)tr->n_tokens);
    rep_add_num(o, RF_TRACE_DECISIONS, (double)tr->n_tokens * s->L * s->H);
    // What the fractions, long tail, agreement, window errors and runs count:
    // the global layers (natively local ones are in local_layers, apart).
    char label[160];
    aha_trace_layers_label(m, label, sizeof label);
    rep_add(o, RF_TRACE_LAYER_WINDOW, cJSON_CreateIntArray(m->layer_window, s->L));
    rep_add_num(o, RF_TRACE_N_GLOBAL_LAYERS, s->n_global);
    rep_add_num(o, RF_TRACE_DECISIONS_COUNTED, (double)tr->n_tokens * s->n_global * s->H);
    rep_add_str(o, RF_TRACE_LAYERS_COUNTED, label);
    rep_add(o, RF_TRACE_LOCAL_LAYERS, local_layers_json(s));
    rep_add_num(o, RF_TRACE_MAX_D, s->max_d);
    rep_add(o, RF_TRACE_EPS, cJSON_CreateDoubleArray(m->eps, s->n_eps));
    rep_add(o, RF_TRACE_WINDOWS, cJSON_CreateIntArray(m->windows, s->nw));
    rep_add_num(o, RF_TRACE_SINKS, m->sinks);
    rep_add_num(o, RF_TRACE_CTX, m->ctx > 0 ? m->ctx : NAN); // older traces: null
    cJSON *sub = rep_add_object(o, RF_TRACE_SUBSETS);
    rep_add_str(sub, RF_SUBSETS_DEFAULT, "all");
    rep_add_str(sub, RF_SUBSETS_ALL, report_fields[RF_SUBSETS_ALL].desc);
    rep_add_str(sub, RF_SUBSETS_T_GE_W, report_fields[RF_SUBSETS_T_GE_W].desc);
}

// The numbers: fractions, long tail, agreement, window errors, runs.
static void trace_numbers(cJSON *o, const aha_stats *s) {
    const aha_trace_meta *m = &s->meta.m;
    cJSON *rt = rep_add_array(o, RF_TRACE_ROUTERS);
    for (int e = 0; e < s->n_eps; e++) cJSON_AddItemToArray(rt, router_json(s, e));
    if (m->aha) cJSON_AddItemToArray(rt, router_json(s, -1));
    cJSON *lt = rep_add_array(o, RF_TRACE_LONG_TAIL);
    double *ccdf = malloc(((size_t)s->max_d + 1) * sizeof *ccdf);
    for (int e = 0; ccdf && e < s->n_eps; e++) cJSON_AddItemToArray(lt, long_tail_json(s, e, ccdf));
    free(ccdf);
    cJSON *ag = rep_add_array(o, RF_TRACE_AGREEMENT);
    for (int e = 0; m->aha && e < s->n_eps; e++)
        for (int i = 0; i < s->nw; i++) cJSON_AddItemToArray(ag, agreement_json(s, e, i));
    cJSON *we = rep_add_array(o, RF_TRACE_WINDOW_ERROR);
    for (int i = 0; s->has_werr && i < s->nw; i++) cJSON_AddItemToArray(we, werr_json(s, i));
    cJSON *runs = rep_add_array(o, RF_TRACE_RUNS);
    int full = aha_stats_full_run(s);
    for (int r = 0; r < s->n_runs; r++) cJSON_AddItemToArray(runs, run_json(s, r, full));
}

void aha_report_exact(cJSON *o) {
    for (cJSON *x = o ? o->child : NULL; x; x = x->next) {
        aha_report_exact(x);
        if (!cJSON_IsNumber(x)) continue;
        char buf[32];
        for (int prec = 15; prec <= 17; prec++) { // the shortest text that reads back as the same double
            snprintf(buf, sizeof buf, "%.*g", prec, x->valuedouble);
            if (strtod(buf, NULL) == x->valuedouble) break;
        }
        char *raw = strdup(buf);
        if (!raw) continue; // stays a (15-digit) number
        x->type = cJSON_Raw;
        x->valuestring = raw;
    }
}

cJSON *aha_report_json(const aha_stats *s, int n) {
    cJSON *o = cJSON_CreateObject();
    rep_add_str(o, RF_REPORT_FORMAT, "aha-report");
    rep_add_num(o, RF_REPORT_VERSION, 1);
    cJSON *ts = rep_add_array(o, RF_REPORT_TRACES);
    for (int k = 0; k < n; k++) {
        cJSON *t = cJSON_CreateObject();
        trace_what(t, &s[k]);
        trace_numbers(t, &s[k]);
        cJSON_AddItemToArray(ts, t);
    }
    return o;
}
