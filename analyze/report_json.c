// The JSON report: every number of the report with the counts behind it.
//   fraction  {global, total, fraction}        fraction = global / total (null if total = 0)
//   agreement {tp, fp, fn, tn, precision, recall, f1}   positive = global;
//             f1 = 2 tp / (2 tp + fp + fn)
//   ccdf[w]   P(d_eps > w) over all decisions, w = 0..max_d
// Fractions come in two subsets, named in every key: "all" (every (layer,
// token, head) decision, prompt tokens included: the paper's metric, the
// default) and "t_ge_w" (decisions with t >= w: where the window drops keys).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static cJSON *ratio(int64_t a, int64_t b) { return b ? cJSON_CreateNumber((double)a / (double)b) : cJSON_CreateNull(); }

static cJSON *frac_json(aha_frac f) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "global", (double)f.global);
    cJSON_AddNumberToObject(o, "total", (double)f.total);
    cJSON_AddItemToObject(o, "fraction", ratio(f.global, f.total));
    return o;
}

cJSON *aha_report_frac_json(aha_frac f) { return frac_json(f); }

static cJSON *pair_json(aha_frac all, aha_frac tw) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "all", frac_json(all));
    cJSON_AddItemToObject(o, "t_ge_w", frac_json(tw));
    return o;
}

static cJSON *conf_json(aha_confusion c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tp", (double)c.tp);
    cJSON_AddNumberToObject(o, "fp", (double)c.fp);
    cJSON_AddNumberToObject(o, "fn", (double)c.fn);
    cJSON_AddNumberToObject(o, "tn", (double)c.tn);
    cJSON_AddItemToObject(o, "precision", ratio(c.tp, c.tp + c.fp));
    cJSON_AddItemToObject(o, "recall", ratio(c.tp, c.tp + c.fn));
    cJSON_AddItemToObject(o, "f1", ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn));
    return o;
}

static cJSON *num_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

// Fractions of one router (eps e, or -1 = learned) at every window.
static cJSON *router_json(const aha_stats *s, int e) {
    cJSON *o = cJSON_CreateObject(), *ws = cJSON_AddArrayToObject(o, "windows");
    cJSON_AddStringToObject(o, "router", e < 0 ? "learned" : "oracle");
    if (e < 0) cJSON_AddNumberToObject(o, "tau", s->meta.m.tau);
    else cJSON_AddNumberToObject(o, "eps", s->meta.m.eps[e]);
    for (int i = 0; i < s->nw; i++) {
        cJSON *w = cJSON_CreateObject();
        cJSON_AddItemToArray(ws, w);
        cJSON_AddNumberToObject(w, "window", s->meta.m.windows[i]);
        cJSON_AddItemToObject(w, "all", frac_json(aha_stats_frac(s, e, i, -1, -1, 0)));
        cJSON_AddItemToObject(w, "t_ge_w", frac_json(aha_stats_frac(s, e, i, -1, -1, 1)));
        cJSON *pl = cJSON_AddArrayToObject(w, "per_layer"), *ph = cJSON_AddArrayToObject(w, "per_head");
        for (int l = 0; l < s->L; l++) {
            cJSON_AddItemToArray(pl, pair_json(aha_stats_frac(s, e, i, l, -1, 0), aha_stats_frac(s, e, i, l, -1, 1)));
            cJSON *row = cJSON_CreateArray();
            cJSON_AddItemToArray(ph, row);
            for (int h = 0; h < s->H; h++)
                cJSON_AddItemToArray(row, pair_json(aha_stats_frac(s, e, i, l, h, 0), aha_stats_frac(s, e, i, l, h, 1)));
        }
        cJSON *pd = cJSON_AddArrayToObject(w, "per_doc");
        for (int64_t d = 0; d < s->meta.n_docs; d++)
            cJSON_AddItemToArray(pd, pair_json(aha_stats_doc_frac(s, e, i, d, 0), aha_stats_doc_frac(s, e, i, d, 1)));
    }
    return o;
}

static cJSON *quantiles_json(const aha_stats *s, int e, int l) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "median", aha_stats_quantile(s, e, l, 0.5));
    cJSON_AddNumberToObject(o, "p90", aha_stats_quantile(s, e, l, 0.9));
    cJSON_AddNumberToObject(o, "p99", aha_stats_quantile(s, e, l, 0.99));
    cJSON_AddNumberToObject(o, "max", aha_stats_quantile(s, e, l, 1.0));
    return o;
}

static cJSON *long_tail_json(const aha_stats *s, int e, double *ccdf) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "eps", s->meta.m.eps[e]);
    cJSON_AddItemToObject(o, "quantiles", quantiles_json(s, e, -1));
    cJSON *pq = cJSON_AddArrayToObject(o, "per_layer_quantiles");
    for (int l = 0; l < s->L; l++) cJSON_AddItemToArray(pq, quantiles_json(s, e, l));
    aha_stats_ccdf(s, e, -1, ccdf);
    cJSON_AddItemToObject(o, "ccdf", cJSON_CreateDoubleArray(ccdf, s->max_d + 1));
    cJSON *pl = cJSON_AddArrayToObject(o, "ccdf_per_layer");
    for (int l = 0; l < s->L; l++) {
        aha_stats_ccdf(s, e, l, ccdf);
        cJSON_AddItemToArray(pl, cJSON_CreateDoubleArray(ccdf, s->max_d + 1));
    }
    return o;
}

static cJSON *agreement_json(const aha_stats *s, int e, int i) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "eps", s->meta.m.eps[e]);
    cJSON_AddNumberToObject(o, "window", s->meta.m.windows[i]);
    cJSON_AddItemToObject(o, "all", conf_json(aha_stats_confusion(s, e, i, -1, -1, 0)));
    cJSON_AddItemToObject(o, "t_ge_w", conf_json(aha_stats_confusion(s, e, i, -1, -1, 1)));
    cJSON *ph = cJSON_AddArrayToObject(o, "per_head_t_ge_w");
    for (int l = 0; l < s->L; l++) {
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(ph, row);
        for (int h = 0; h < s->H; h++) cJSON_AddItemToArray(row, conf_json(aha_stats_confusion(s, e, i, l, h, 1)));
    }
    return o;
}

static cJSON *run_json(const aha_stats *s, int r, int full) {
    const aha_run_stats *rs = &s->runs[r];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", rs->info.name);
    cJSON_AddStringToObject(o, "policy", rs->info.policy);
    cJSON_AddNumberToObject(o, "window", rs->info.window);
    cJSON_AddItemToObject(o, "param", num_or_null(rs->info.param)); // the grid point's number; null: none
    cJSON_AddNumberToObject(o, "tokens_scored", (double)rs->q.n_nll);
    double ppl = aha_stats_ppl(s, r), ref = full >= 0 ? aha_stats_ppl(s, full) : NAN;
    cJSON_AddItemToObject(o, "mean_nll", num_or_null(rs->q.n_nll ? rs->q.nll_sum / (double)rs->q.n_nll : NAN));
    cJSON_AddItemToObject(o, "ppl", num_or_null(ppl));
    cJSON_AddItemToObject(o, "ppl_delta", num_or_null(ppl - ref));
    cJSON_AddItemToObject(o, "ppl_change", num_or_null(ppl / ref - 1));
    cJSON_AddItemToObject(o, "mean_kl", num_or_null(aha_trace_mean_kl(&rs->q)));
    int64_t per = (int64_t)s->n_global * s->H; // natively local layers' decisions are not the policy's
    aha_frac all = {0, 0}, tw = {0, 0};
    int i = aha_stats_window_index(s, rs->info.window);
    for (int b = 0; b < s->nb; b++) {
        int64_t g = rs->gate_pb ? rs->gate_pb[b] : 0;
        all.total += s->pos_n[b] * per, all.global += g;
        if (i >= 0 && b > i) tw.total += s->pos_n[b] * per, tw.global += g;
    }
    if (!rs->gate_pb) all.global = strcmp(rs->info.policy, "global") == 0 ? all.total : 0;
    cJSON_AddItemToObject(o, "global_all", rs->gate_pb || !strcmp(rs->info.policy, "global") ? frac_json(all) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "global_t_ge_w", rs->gate_pb && i >= 0 ? frac_json(tw) : cJSON_CreateNull());
    // Executed FLOPs are the routed pass's; the oracle decides from d_eps, so
    // its run needs the full-attention pass first: counted beside, not hidden.
    double fe = rs->info.flops_executed, ff = rs->info.flops_full;
    // werr decides from the full pass's window errors: the same full pass first
    int oracle = strcmp(rs->info.policy, "oracle") == 0 || strcmp(rs->info.policy, "werr") == 0;
    cJSON_AddNumberToObject(o, "flops_executed", fe);
    cJSON_AddNumberToObject(o, "flops_full", ff);
    cJSON_AddItemToObject(o, "flops_fraction", num_or_null(fe / ff));
    cJSON_AddItemToObject(o, "flops_incl_oracle_pass", oracle ? cJSON_CreateNumber(fe + ff) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "flops_fraction_incl_oracle_pass", oracle ? num_or_null((fe + ff) / ff) : cJSON_CreateNull());
    return o;
}

// The window-output error at window index i: quantiles, mean, and the
// fraction of decisions whose window output is off by more than a threshold.
static cJSON *werr_json(const aha_stats *s, int i) {
    static const double thr[] = {0.01, 0.05, 0.1};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "window", s->meta.m.windows[i]);
    cJSON_AddItemToObject(o, "mean", num_or_null(aha_stats_werr_mean(s, i)));
    cJSON_AddItemToObject(o, "median", num_or_null(aha_stats_werr_quantile(s, i, 0.5)));
    cJSON_AddItemToObject(o, "p90", num_or_null(aha_stats_werr_quantile(s, i, 0.9)));
    cJSON_AddItemToObject(o, "p99", num_or_null(aha_stats_werr_quantile(s, i, 0.99)));
    cJSON_AddItemToObject(o, "max", num_or_null(aha_stats_werr_quantile(s, i, 1.0)));
    cJSON *ab = cJSON_AddArrayToObject(o, "above");
    for (size_t k = 0; k < sizeof thr / sizeof *thr; k++) {
        cJSON *x = frac_json(aha_stats_werr_above(s, i, thr[k]));
        cJSON_AddNumberToObject(x, "threshold", thr[k]);
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
        cJSON *o = cJSON_CreateObject(), *q = cJSON_AddArrayToObject(o, "quantiles");
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "window", w);
        for (int e = 0; e < s->n_eps; e++) {
            cJSON *x = quantiles_json(s, e, l);
            cJSON_AddNumberToObject(x, "eps", s->meta.m.eps[e]);
            cJSON_AddItemToArray(q, x);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *trace_json(const aha_stats *s) {
    const aha_tr *tr = &s->meta;
    const aha_trace_meta *m = &tr->m;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "files", cJSON_CreateStringArray(s->paths, s->n_files));
    cJSON_AddStringToObject(o, "model", m->model_path);
    cJSON_AddStringToObject(o, "architecture", m->arch);
    cJSON_AddStringToObject(o, "dataset", m->dataset);
    cJSON_AddStringToObject(o, "mode", m->mode);
    cJSON_AddStringToObject(o, "device", m->device);
    cJSON_AddStringToObject(o, "router", m->router);
    cJSON_AddNumberToObject(o, "tau", m->tau);
    cJSON_AddNumberToObject(o, "format_version", tr->format_version);
    cJSON_AddBoolToObject(o, "complete", tr->complete);
    cJSON_AddStringToObject(o, "shards", s->shards ? s->shards : "");
    cJSON_AddNumberToObject(o, "shards_missing", s->shards_missing);
    cJSON_AddNumberToObject(o, "n_layers", s->L);
    cJSON_AddNumberToObject(o, "n_heads", s->H);
    cJSON_AddNumberToObject(o, "n_docs", (double)tr->n_docs);
    cJSON *docs = cJSON_AddArrayToObject(o, "docs"); // the per-document rows: which document each is
    for (int64_t d = 0; d < tr->n_docs; d++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "doc_index", (double)s->docs[d].index);
        cJSON_AddStringToObject(x, "source", s->docs[d].source);
        cJSON_AddItemToArray(docs, x);
    }
    cJSON_AddNumberToObject(o, "n_tokens", (double)tr->n_tokens);
    cJSON_AddNumberToObject(o, "decisions", (double)tr->n_tokens * s->L * s->H);
    // What the fractions, long tail, agreement, window errors and runs count:
    // the global layers (natively local ones are in local_layers, apart).
    char label[160];
    aha_trace_layers_label(m, label, sizeof label);
    cJSON_AddItemToObject(o, "layer_window", cJSON_CreateIntArray(m->layer_window, s->L));
    cJSON_AddNumberToObject(o, "n_global_layers", s->n_global);
    cJSON_AddNumberToObject(o, "decisions_counted", (double)tr->n_tokens * s->n_global * s->H);
    cJSON_AddStringToObject(o, "layers_counted", label);
    cJSON_AddItemToObject(o, "local_layers", local_layers_json(s));
    cJSON_AddNumberToObject(o, "max_d", s->max_d);
    cJSON_AddItemToObject(o, "eps", cJSON_CreateDoubleArray(m->eps, s->n_eps));
    cJSON_AddItemToObject(o, "windows", cJSON_CreateIntArray(m->windows, s->nw));
    cJSON_AddNumberToObject(o, "sinks", m->sinks);
    cJSON_AddItemToObject(o, "ctx", m->ctx > 0 ? cJSON_CreateNumber(m->ctx) : cJSON_CreateNull()); // older traces: null
    cJSON *sub = cJSON_AddObjectToObject(o, "fraction_subsets");
    cJSON_AddStringToObject(sub, "default", "all");
    cJSON_AddStringToObject(sub, "all", "every (layer, token, head) decision, prompt tokens included (the paper's metric)");
    cJSON_AddStringToObject(sub, "t_ge_w", "decisions with t >= w only: those where the window drops keys");
    cJSON *rt = cJSON_AddArrayToObject(o, "routers");
    for (int e = 0; e < s->n_eps; e++) cJSON_AddItemToArray(rt, router_json(s, e));
    if (m->aha) cJSON_AddItemToArray(rt, router_json(s, -1));
    cJSON *lt = cJSON_AddArrayToObject(o, "long_tail");
    double *ccdf = malloc(((size_t)s->max_d + 1) * sizeof *ccdf);
    for (int e = 0; ccdf && e < s->n_eps; e++) cJSON_AddItemToArray(lt, long_tail_json(s, e, ccdf));
    free(ccdf);
    cJSON *ag = cJSON_AddArrayToObject(o, "agreement");
    for (int e = 0; m->aha && e < s->n_eps; e++)
        for (int i = 0; i < s->nw; i++) cJSON_AddItemToArray(ag, agreement_json(s, e, i));
    cJSON *we = cJSON_AddArrayToObject(o, "window_error");
    for (int i = 0; s->has_werr && i < s->nw; i++) cJSON_AddItemToArray(we, werr_json(s, i));
    cJSON *runs = cJSON_AddArrayToObject(o, "runs");
    int full = aha_stats_full_run(s);
    for (int r = 0; r < s->n_runs; r++) cJSON_AddItemToArray(runs, run_json(s, r, full));
    return o;
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
    cJSON_AddStringToObject(o, "format", "aha-report");
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON *ts = cJSON_AddArrayToObject(o, "traces");
    for (int k = 0; k < n; k++) cJSON_AddItemToArray(ts, trace_json(&s[k]));
    return o;
}
