// The numbers of a trace (or of several shards of one run), gathered in one
// streaming pass over [L, block, H] slabs: counts from which every fraction,
// CCDF, quantile and confusion matrix of the report derives exactly.
//
// Buckets: with ascending windows w_0 < ... < w_{k-1}, a token's position
// bucket pb(t) = #{i : w_i <= t} (so t >= w_i iff i < pb) and a decision's
// dependency bucket db(d) = #{i : w_i < d} (so the oracle is global at w_i
// iff d > w_i iff i < db). Since d <= t+1, d > w implies t >= w.
//
// Memory: one slab of [L, block, H] values plus the counts below, which grow
// with the context length (max_d) and the number of documents, never with T.
#pragma once
#include <stdint.h>

#include "trace_read.h"

typedef struct {
    int64_t global, total;    // decisions routed global, decisions counted
} aha_frac;

#define AHA_WERR_BINS 0x7c01  // float16 bit patterns 0 (0.0) .. 0x7c00 (+inf)

typedef struct {              // one run under runs/
    aha_trace_run info;       // name, policy, window, FLOPs (summed over shards)
    aha_trace_quality q;      // NLL and KL totals (trace_schema.h defines what counts)
    int64_t *gate_l;          // [2, L] global decisions per layer: all, and at t >= the run's window,
                              // whether or not that window is a recorded one (has_gate)
    int64_t tok_tw;           // tokens at t >= the run's window
} aha_run_stats;

typedef struct {             // one row of the per-document counts
    int64_t index;            // its doc_index: its document's number in the dataset (-1: not known)
    char *source;             // its doc_source ("": not known; owned)
} aha_stats_doc;

typedef struct {
    aha_tr meta;              // the first trace's attributes (n_docs, n_tokens: summed)
    const char *const *paths; // [n_files] the traces, as given
    int n_files;
    char *shards;             // the shards they hold, as a shard attribute ("": the whole run)
    int shards_missing;       // shards of the run none of them holds
    int L, H, n_eps, nw, nb;  // nb = nw + 1 buckets
    int max_d;                // largest possible d_eps: max position + 1
    int n_global;             // layers without a native window (meta.m.layer_window): every
                              // count over layers (l = -1, per document, runs, werr) is theirs only
    int64_t *hist;            // [n_eps, L, max_d + 1] decisions with d_eps == d
    int64_t *joint;           // [n_eps, L, H, 2, nb, nb] by (gate, pb, db); gate 0 without one
    int64_t *pos_n;           // [nb] tokens by position bucket
    aha_stats_doc *docs;      // [n_docs] the documents (contexts) of every trace in the dataset's order
                              // (doc_index), whatever the order of the traces: the per-document rows
    int64_t *doc_n;           // [n_docs, nb] tokens by position bucket, per document
    int64_t *doc_dep;         // [n_eps, n_docs, nb] decisions by d bucket, per document
    int64_t *doc_gate;        // [n_docs, nb] learned-global decisions by position bucket
    int has_werr;             // window errors recorded (--werr)
    int64_t *werr_hist;       // [nw, AHA_WERR_BINS] decisions by the float16 bits of their
                              // window-output error (exact: the file stores float16)
    double *werr_sum;         // [nw] sum of the errors (for the mean)
    int n_runs;
    aha_run_stats runs[AHA_TRACE_MAX_RUNS]; // [n_runs] in the trace's order
} aha_stats;

// Gather the traces paths[0..n) as shards of one run (they must match:
// aha_tr_check_same). block: tokens per slab (0 = automatic).
int aha_stats_gather(aha_stats *s, const char *const *paths, int n, int block);
// The same for the open traces trs[0..n) (checked alike; paths: their
// names, for the report's list of files), which stay open.
int aha_stats_gather_open(aha_stats *s, const aha_tr *trs, int n, const char *const *paths, int block);
void aha_stats_free(aha_stats *s);
// The largest value of per-token int32 dataset ds (TD_POSITION, TD_TOKENS)
// over every token of trs[0..n), read block tokens at a time into buf
// [block]: sizes the histograms. A negative value is one error line naming
// the token (a position: a part file of an unfinished trace is missing).
int aha_stats_scan_max(const aha_tr *trs, int n, trace_dset_id ds, int block, int32_t *buf, int32_t *max);

// Window index of w among the recorded windows, or -1.
int aha_stats_window_index(const aha_stats *s, int w);
// Fractions at window index i for eps e (-1: the learned router) over layer l
// (-1 = every global layer: natively local ones never count) and head h (-1 =
// all); tw: only decisions with t >= w.
aha_frac aha_stats_frac(const aha_stats *s, int e, int i, int l, int h, int tw);
// The same for document doc.
aha_frac aha_stats_doc_frac(const aha_stats *s, int e, int i, int64_t doc, int tw);
// Learned (gate) vs oracle (eps e) at window index i, layer/head (-1 = all).
typedef struct {
    int64_t tp, fp, fn, tn;   // positive = global
} aha_confusion;
aha_confusion aha_stats_confusion(const aha_stats *s, int e, int i, int l, int h, int tw);
// P(d_eps > w) over all decisions of layer l (-1 = all) for w = 0..max_d
// into out[max_d + 1].
void aha_stats_ccdf(const aha_stats *s, int e, int l, double *out);
// Smallest d with P(d_eps <= d) >= q (q in (0, 1]), layer l (-1 = all).
int aha_stats_quantile(const aha_stats *s, int e, int l, double q);
// Window-output error at window index i: the smallest recorded value v with
// P(err <= v) >= q (q in (0, 1]), the mean, and the decisions above thr.
double aha_stats_werr_quantile(const aha_stats *s, int i, double q);
double aha_stats_werr_mean(const aha_stats *s, int i);
aha_frac aha_stats_werr_above(const aha_stats *s, int i, double thr);
// Perplexity exp(mean NLL) of run r.
double aha_stats_ppl(const aha_stats *s, int r);
// Index of the full-attention run (policy "global", window 0), or -1.
int aha_stats_full_run(const aha_stats *s);
