// The recording loop: documents -> contexts -> lockstep forward passes (the
// full-attention run with the dependency pass, plus one routed run per
// window) -> one trace document per context.
#include "record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dataset.h"
#include "err.h"
#include "forward.h"
#include "model.h"
#include "ops.h"
#include "router.h"
#include "router_file.h"
#include "run.h"
#include "record_ctx.h"
#include "trace.h"
#include "trace_read.h"

static const char *const mode_names[] = {"observe", "routed", "sweep"};
const aha_enum aha_record_modes = AHA_ENUM(mode_names);

// What one pass computes must fit in one trace: every eps and window, and a
// sweep's runs (full + one per window).
_Static_assert(AHA_MAX_EPS <= AHA_TRACE_MAX_EPS, "a pass records more eps than a trace holds");
_Static_assert(AHA_MAX_WINDOWS <= AHA_TRACE_MAX_WINDOWS, "a pass takes more windows than a trace holds");
_Static_assert(1 + AHA_MAX_WINDOWS <= AHA_TRACE_MAX_RUNS, "a sweep has more runs than a trace holds");
// (a --policies grid is checked at run time: points x windows + 1 <= AHA_TRACE_MAX_RUNS)

typedef struct {
    aha_run ex;         // its own KV cache: runs see different attention
    char name[64];      // "full", "w128", "oracle_e0.1_w128", ...
    int window;         // 0 for the full run
    aha_router router;  // what it follows (routed runs)
    char policy[264];   // the trace's policy attribute: --route, or the grid's family
    double param;       // the grid point's number (NaN: none)
    int werr_i;         // werr router: index of its window in the full pass's window errors
    aha_trace_quality q;                 // NLL and KL totals over the whole run
    double sum_exec, sum_full;           // attention FLOPs, over the whole run
    int64_t n_global, n_decisions;
} run;

typedef struct {
    const aha_record_opts *o;
    aha_model m;
    aha_backend be;       // where the runs compute
    float **fused;        // [L] q_proj with the --router file's rows (owned), or NULL
    double tau;           // the learned router's threshold: --tau as typed, the router file's, or 0.5
    aha_trace *trace;
    run *runs;            // [n_runs]; runs[0] is full attention
    int n_runs;
    record_ctx out[2];    // contexts' results: one computed while the other is written
    int cur;              // the one being computed
    char shard[32];       // "I/N" or "" (trace attribute)
    int ctx;              // tokens per context (aha_settings_resolve)
    record_writer writer; // writes the other into the trace
    int32_t *targets;     // [ctx] the next token of each (-1: none)
    int64_t contexts, tokens, skip; // done, and to skip when resuming
    int64_t run_tokens;   // tokens of the whole run so far, every shard's (--max-tokens)
    float eps[AHA_MAX_EPS]; // o->eps as the kernels take them
    int64_t *oracle_global; // [n_windows] d_eps[0] > w counts
    int64_t *past_w;        // [n_windows] decisions with t >= w (the oracle is local below)
    int *layer_window;      // [n_layers] each layer's native window (0: full causal), for the trace
    int n_global_layers;    // those with none: the summary's fractions count their decisions only
    int64_t learned_global, decisions;
    int64_t all_sinks;      // contexts of at most sinks + 1 tokens: no key is ever out of their window
    double t0, bytes_total, bytes_done;
    char read_as[128];    // what the documents were read as so far (aha_ds_read_as)
    char grid[1024];      // --policies: the grid as the trace's router attribute names it
    const aha_ds_print *data; // the dataset's fingerprint (a first pass over it)
    char *model_sha256;   // the model's (aha_model_sha256; owned)
    char router_sha256[AHA_SHA256_HEX]; // the --router file's ("" without one)
    int64_t prior_contexts, prior_tokens; // a resumed trace's, before this run (in the summary's totals)
} recorder;

// Copy a chunk laid out [L, k, n, H] into a context buffer [k, L, T, H] at t0.
#define SCATTER(dst, src, K, n, t0)                                                    \
    for (int l = 0; l < L; l++)                                                        \
        for (int k_ = 0; k_ < (K); k_++)                                               \
            memcpy(dst + (((size_t)k_ * L + l) * T + (t0)) * H,                        \
                   src + (((size_t)l * (K) + k_) * (n)) * H, sizeof *dst * (size_t)(n) * H)

// A collected chunk of run k, tokens t0.. of the context, into the context's
// buffers.
static void take_chunk(recorder *r, int k, const aha_call_out *out, int t0) {
    const aha_record_opts *o = r->o;
    record_ctx *c = &r->out[r->cur];
    const int L = c->L, H = c->H, T = c->T, n = out->n;
    if (k == 0) {
        SCATTER(c->dep, out->dep, o->n_eps, n, t0);
        if (o->werr) SCATTER(c->werr, out->werr, o->n_windows, n, t0);
        if (o->mass) {
            SCATTER(c->mass_far, out->mass_far, o->n_windows, n, t0);
            SCATTER(c->mass_sink, out->mass_sink, 1, n, t0);
        }
        const float tau = (float)r->tau, cut = logf(tau / (1 - tau));
        for (int i = 0; c->aha && i < n; i++)
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++) {
                    float x = out->router[((size_t)i * L + l) * H + h];
                    size_t at = ((size_t)l * T + t0 + i) * H + h;
                    c->llogit[at] = x;
                    c->lgate[at] = x > cut;
                }
    } else {
        for (int l = 0; l < L; l++)
            memcpy(c->gate[k] + ((size_t)l * T + t0) * H, out->gate + (size_t)l * n * H, (size_t)n * H);
    }
    c->flops[k].executed += out->flops.executed;
    c->flops[k].full += out->flops.full;
    memcpy(c->nll[k] + t0, out->nll, sizeof(float) * n);
    memcpy(c->kl[k] + t0, out->kl, sizeof(float) * n);
}

// One context through every run in lockstep, chunk by chunk: chunk c is
// submitted to every run, then chunk c - 1 collected, so that a device runs
// one chunk while the host takes in the one before.
// ctx: the context's identity in the dataset (document ordinal << 32 | its
// context in the document), which seeds random routing: a resumed or
// sharded run decides as one uninterrupted run over the whole dataset.
static int run_context(recorder *r, const int32_t *ids, int T, int32_t next_token, int64_t ctx) {
    const aha_record_opts *o = r->o;
    const int B = o->s.batch, n_chunks = (T + B - 1) / B;
    record_ctx *c = &r->out[r->cur];
    c->T = T;
    memcpy(c->ids, ids, sizeof(int32_t) * T);
    aha_context_targets(ids, T, next_token, r->targets);
    for (int k = 0; k < r->n_runs; k++) {
        aha_run_reset(&r->runs[k].ex, T);
        c->flops[k] = (aha_attn_flops){0, 0};
    }
    for (int ch = 0; ch <= n_chunks; ch++) {
        const int b0 = ch * B, n = T - b0 < B ? T - b0 : B;
        for (int k = 0; ch < n_chunks && k < r->n_runs; k++) {
            run *u = &r->runs[k];
            aha_probe p = {0};
            p.sinks = o->s.sinks;
            if (k == 0) { // full attention, observed
                p.eps = r->eps;
                p.n_eps = o->n_eps;
                p.werr_windows = o->windows;
                p.n_werr = o->werr ? o->n_windows : 0;
                p.mass_windows = o->windows;
                p.n_mass = o->mass ? o->n_windows : 0;
            } else {
                p.router = &u->router;
                p.window = u->window;
                p.doc = ctx;
                if (u->router.kind == AHA_ROUTER_WERR) { // the full pass's errors of this chunk (CPU: computed at submit)
                    const int nh = n * r->m.cfg.n_heads;
                    p.werr_ref = aha_run_last_werr(&r->runs[0].ex) + (size_t)u->werr_i * nh;
                    p.werr_ref_lstride = (size_t)o->n_windows * nh;
                }
            }
            aha_call call = {&p, 0, 0, r->targets + b0};
            if (aha_run_submit(&u->ex, ids + b0, n, &call, k ? &r->runs[0].ex : NULL) != 0) return -1;
        }
        for (int k = 0; ch > 0 && k < r->n_runs; k++) {
            aha_call_out out;
            if (aha_run_collect(&r->runs[k].ex, &out) != 0) return -1;
            take_chunk(r, k, &out, (ch - 1) * B);
        }
    }
    return 0;
}

// The run's running totals, from the context just computed.
static void tally(recorder *r) {
    const aha_record_opts *o = r->o;
    const record_ctx *c = &r->out[r->cur];
    const int L = c->L, T = c->T, H = c->H, Lg = r->n_global_layers;
    for (int l = 0; l < L; l++) // natively local layers route nothing: not counted
        for (int t = 0; !r->layer_window[l] && t < T; t++)
            for (int h = 0; h < H; h++) {
                size_t at = ((size_t)l * T + t) * H + h;
                uint32_t d = c->dep[at]; // first eps
                for (int w = 0; w < o->n_windows; w++) r->oracle_global[w] += d > (uint32_t)o->windows[w];
                if (c->aha) r->learned_global += c->lgate[at];
                for (int k = 1; k < r->n_runs; k++) r->runs[k].n_global += c->gate[k][at];
            }
    r->decisions += (int64_t)Lg * T * H;
    r->all_sinks += o->s.sinks > 0 && T <= o->s.sinks + 1;
    for (int w = 0; w < o->n_windows; w++) r->past_w[w] += (int64_t)Lg * H * (T > o->windows[w] ? T - o->windows[w] : 0);
    for (int k = 0; k < r->n_runs; k++) {
        run *u = &r->runs[k];
        u->sum_exec += c->flops[k].executed;
        u->sum_full += c->flops[k].full;
        u->n_decisions += (int64_t)Lg * T * H;
        aha_trace_quality_add(&u->q, c->nll[k], c->kl[k], T); // NaN NLL where targets[t] < 0
    }
}

// The terminal's width: stderr's, else $COLUMNS, else 80.
static int term_cols(void) {
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    return c && atoi(c) > 0 ? atoi(c) : 80;
}

// A progress bar on stderr when it is a terminal, at most 4 times a second,
// one column short of the terminal's width (a full line would wrap).
static void progress(recorder *r, int final) {
    static double last;
    double now = aha_now_s();
    if (r->o->quiet || !isatty(2) || (!final && now - last < 0.25)) return;
    last = now;
    double el = now - r->t0, rate = r->tokens / (el > 0 ? el : 1e-9);
    double frac = r->bytes_total > 0 ? r->bytes_done / r->bytes_total : 0;
    if (r->o->s.max_tokens && (double)r->run_tokens / r->o->s.max_tokens > frac)
        frac = (double)r->run_tokens / r->o->s.max_tokens;
    char eta[32] = "--:--", tail[160];
    if (frac > 0 && !final) {
        int sec = (int)(el * (1 - frac) / frac);
        snprintf(eta, sizeof eta, "%d:%02d", sec / 60, sec % 60);
    }
    int n = snprintf(tail, sizeof tail, " %3.0f%%  %lld ctx  %lld tokens  %.0f tok/s  ETA %s", 100 * frac,
                     (long long)r->contexts, (long long)r->tokens, rate, eta);
    int width = term_cols() - 1, bar = width - 2 - n; // "[" bar "]" tail
    bar = bar > 30 ? 30 : bar;
    if (bar < 5) { // a narrow terminal: the figures alone, cut to fit
        fprintf(stderr, "\r%-*.*s", width, width, tail + 1);
    } else {
        int done = (int)(frac * bar);
        fprintf(stderr, "\r[%.*s%*s]%-*s", done, "##############################", bar - done, "",
                width - 2 - bar, tail);
    }
    if (final) fprintf(stderr, "\n");
}

// Why an existing trace is not overwritten, and what would continue it.
static int refuse_existing(const char *path) {
    aha_tr tr;
    if (aha_tr_open_empty(&tr, path) != 0) {
        aha_err("%s: exists and is not a trace this build reads (--force overwrites it)", path);
        return -1;
    }
    if (tr.complete) aha_err("%s: exists and is complete (--force overwrites it)", path);
    else
        aha_err("%s: exists, unfinished after %lld contexts (--resume continues it, --force starts over)", path,
                (long long)tr.n_docs);
    aha_tr_close(&tr);
    return -1;
}

// The runs: full attention, then one per routed window (--route), or per
// grid point and window (--policies), each with its router.
static int routed_runs_init(recorder *r) {
    const aha_record_opts *o = r->o;
    const aha_config *c = &r->m.cfg;
    const int L = c->n_layers, H = c->n_heads, n_pts = o->n_grid ? o->n_grid : 1;
    r->n_runs = 1 + n_pts * o->n_routed;
    if (r->n_runs > AHA_TRACE_MAX_RUNS) {
        aha_err("--policies: %d points x %d windows + the full run = %d runs; a trace holds at most %d",
                n_pts, o->n_routed, r->n_runs, AHA_TRACE_MAX_RUNS);
        return -1;
    }
    r->runs = aha_calloc((size_t)r->n_runs, sizeof *r->runs, "runs");
    if (!r->runs) return -1;
    snprintf(r->runs[0].name, sizeof r->runs[0].name, "full");
    int64_t *counts = NULL; // [n_routed, L, H] topk: each window's per-head oracle counts
    uint8_t *heads = NULL;
    int rc = 0;
    for (int g = 0; g < o->n_grid && !counts; g++)
        if (o->grid[g].kind == AHA_ROUTER_TOPK) {
            if (!o->heads_from) {
                aha_err("--policies topk:K ranks heads from an observe trace: give --heads-from TRACE");
                return -1;
            }
            counts = aha_malloc((size_t)o->n_routed * L * H, sizeof *counts, "head counts");
            heads = aha_malloc((size_t)L * H, 1, "head list");
            rc = !counts || !heads ? -1 : aha_grid_head_counts(o->heads_from, L, H, o->routed_windows, o->n_routed, counts);
        }
    for (int p = 0, k = 1; rc == 0 && p < n_pts; p++)
        for (int i = 0; rc == 0 && i < o->n_routed; i++, k++) {
            run *u = &r->runs[k];
            u->window = o->routed_windows[i];
            u->param = NAN;
            if (!o->n_grid) {
                snprintf(u->name, sizeof u->name, "w%d", u->window);
                snprintf(u->policy, sizeof u->policy, "%s", o->route);
                rc = aha_router_init(&u->router, &o->policy, "--route", L, H, c->aha, (float)r->tau, r->eps[0], o->s.seed);
                continue;
            }
            const aha_policy *gp = &o->grid[p];
            aha_grid_name(gp, u->window, u->name, sizeof u->name);
            snprintf(u->policy, sizeof u->policy, "%s", aha_policies[gp->kind].name);
            u->param = gp->param;
            if (gp->kind == AHA_ROUTER_TOPK) {
                if (gp->param > L * H) {
                    aha_err("--policies topk:%g: the model has %d heads in all", gp->param, L * H);
                    rc = -1;
                    break;
                }
                aha_grid_topk(counts + (size_t)i * L * H, L * H, (int)gp->param, heads);
            }
            if (gp->kind == AHA_ROUTER_WERR) {
                if (r->be.gpu) {
                    aha_err("--policies werr:T decides from the full pass's window errors on the host: --device cpu");
                    rc = -1;
                    break;
                }
                for (int j = 0; j < o->n_windows; j++)
                    if (o->windows[j] == u->window) u->werr_i = j;
            }
            rc = aha_grid_router(&u->router, gp, L, H, c->aha, o->s.seed, heads);
        }
    free(counts);
    free(heads);
    return rc;
}

// A router file routes as it was fitted: at its window and with its sinks
// (aha fit stores both). A run that routes by it (--route learned,
// --policies learned:TAU) at another window or other --sinks is refused;
// observe mode, which records its gates without routing by them, warns.
static int router_fit_check(const aha_record_opts *o, const aha_router_file *rf) {
    const char *ws = aha_router_file_meta(rf, "window"), *ss = aha_router_file_meta(rf, "sinks");
    int routed = o->route && (aha_policies[o->policy.kind].needs & AHA_NEEDS_LOGITS); // routes by the logits
    const int fw = ws ? atoi(ws) : 0;
    int among = 0;
    for (int g = 0; g < o->n_grid; g++) routed |= (aha_policies[o->grid[g].kind].needs & AHA_NEEDS_LOGITS) != 0;
    const char *flag = o->mode == AHA_MODE_SWEEP ? "--windows" : "--window";
    if (ss && atoi(ss) != o->s.sinks) {
        if (routed) {
            aha_err("--sinks %d: the router file %s was fitted with --sinks %s; route by it with --sinks %s",
                    o->s.sinks, o->router_file, ss, ss);
            return -1;
        }
        fprintf(stderr, "aha: warning: %s was fitted with --sinks %s, this run has --sinks %d: its learned gates are "
                        "recorded as they are\n", o->router_file, ss, o->s.sinks);
    }
    for (int i = 0; fw > 0 && routed && i < o->n_routed; i++)
        if (o->routed_windows[i] != fw) {
            aha_err("%s %d: the router file %s was fitted at window %d; route by it at %s %d", flag,
                    o->routed_windows[i], o->router_file, fw, flag, fw);
            return -1;
        }
    for (int i = 0; i < o->n_windows; i++) among |= o->windows[i] == fw;
    if (fw > 0 && !routed && !among)
        fprintf(stderr, "aha: warning: %s was fitted at window %d, which is not among --windows: the learned-vs-oracle "
                        "tables compare its gates at other windows\n", o->router_file, fw);
    return 0;
}

// The --router file: its routers fused into the model, its threshold (unless
// --tau), its fingerprint. 0 or -1.
static int router_load(recorder *r) {
    const aha_record_opts *o = r->o;
    aha_router_file rf;
    if (aha_sha256_file(o->router_file, r->router_sha256) != 0 ||
        aha_router_file_load(&rf, o->router_file, &r->m) != 0)
        return -1;
    int rc = router_fit_check(o, &rf) || aha_router_fuse(&rf, &r->m, &r->fused);
    if (!(o->tau > 0)) r->tau = 1 / (1 + exp(-rf.threshold));
    aha_router_file_free(&rf);
    return rc ? -1 : 0;
}

// The document the record pass reads as its doc_no-th (its bytes, hashed
// into sha, are what it tokenizes) against the first pass over the dataset,
// whose digests make dataset_sha256: 0, or -1 naming the document that
// changed in between (a trace never holds a document its dataset_sha256
// does not cover).
static int doc_unchanged(const recorder *r, int64_t doc_no, const aha_doc *doc, const char *sha) {
    const aha_ds_print *fp = r->data;
    if (doc_no < fp->n_docs && memcmp(fp->docs + doc_no * 64, sha, 64) == 0) return 0;
    if (doc_no >= fp->n_docs)
        aha_err("%s: document %lld (%s) is past the %lld the first read found: the dataset changed while it was "
                "recorded; record it again once it is settled",
                doc->name, (long long)doc_no, doc->source, (long long)fp->n_docs);
    else
        aha_err("%s: document %lld (%s) changed while it was recorded (sha256 %.16s... at the first read, %.16s... "
                "now); record it again once it is settled",
                doc->name, (long long)doc_no, doc->source, fp->docs + doc_no * 64, sha);
    return -1;
}

// --resume: every document the trace holds against the dataset now (the
// first pass's digests, by doc_index), then the dataset's fingerprint; the
// first that differs is named. 0, or -1 with the message.
static int resume_dataset_check(const recorder *r, const aha_trace_meta *meta) {
    const char *out = r->o->out, *data = r->o->s.data;
    aha_tr tr;
    if (aha_tr_open_empty(&tr, out) != 0) return 0; // aha_trace_resume says why
    const int64_t n = tr.doc_source ? tr.n_docs : 0;
    int64_t *idx = aha_malloc((size_t)n + 1, sizeof *idx, "doc_index");
    char **src = aha_calloc(2 * (size_t)n + 1, sizeof *src, "doc_source"), **sha = src ? src + n : NULL;
    int rc = !idx || !src ||
                     (n && (aha_tr_doc_index(&tr, idx) < 0 || aha_tr_read(&tr, TD_DOC_SOURCE, 0, 0, n, src) ||
                            aha_tr_read(&tr, TD_DOC_SHA256, 0, 0, n, sha)))
                 ? -1
                 : 0;
    for (int64_t j = 0; rc == 0 && j < n; j++) {
        if (idx[j] >= r->data->n_docs) {
            aha_err("%s: cannot resume: the dataset (DATA) differs: %s: document %lld (%s) is no longer in it (%lld "
                    "documents now)",
                    out, data, (long long)idx[j], src[j], (long long)r->data->n_docs);
            rc = -1;
        } else if (idx[j] >= 0 && memcmp(r->data->docs + idx[j] * 64, sha[j], 64) != 0) {
            aha_err("%s: cannot resume: the dataset (DATA) differs: %s: document %lld (%s) is not the one the trace "
                    "recorded (sha256 %.16s... now, %.16s... in the trace)",
                    out, data, (long long)idx[j], src[j], r->data->docs + idx[j] * 64, sha[j]);
            rc = -1;
        }
    }
    aha_trace_diff d;
    if (rc == 0 && aha_trace_meta_diff(&tr.m, meta, A_RESUME, &d) && !strcmp(d.attr->name, "dataset_sha256")) {
        aha_err("%s: cannot resume: the dataset (DATA) differs: %s: the %lld documents the trace holds are unchanged, "
                "but documents after them changed, or documents were added or removed (%lld now)",
                out, data, (long long)n, (long long)r->data->n_docs);
        rc = -1;
    }
    if (src) aha_tr_free_text(2 * n, src);
    free(idx);
    free(src);
    aha_tr_close(&tr);
    return rc;
}

// ds: the dataset, its first document read (what it is read as is known);
// data: its fingerprint. 1 when --resume found the trace complete and the
// same run (nothing to record), 0 when ready, -1 on an error.
static int recorder_init(recorder *r, const aha_record_opts *o, const aha_dataset *ds, const aha_ds_print *data) {
    memset(r, 0, sizeof *r);
    r->o = o;
    r->data = data;
    aha_ds_read_as(ds, r->read_as, sizeof r->read_as);
    int exists = access(o->out, F_OK) == 0, resume = o->resume && exists;
    if (exists && !o->force && !o->resume) return refuse_existing(o->out);
    for (int i = 0; i < o->n_eps; i++) r->eps[i] = (float)o->eps[i];
    if (aha_model_load_as(&r->m, o->s.model, o->s.weights) != 0 || aha_model_sha256(&r->m, &r->model_sha256) != 0)
        return -1;
    r->tau = o->tau > 0 ? o->tau : 0.5;
    if (o->router_file && router_load(r) != 0) return -1; // its routers become the model's AHA router rows
    const aha_config *c = &r->m.cfg;
    if (aha_settings_resolve(&o->s, &r->m, &r->ctx) != 0) return -1;
    const int text = strcmp(r->read_as, "tokens") != 0; // text documents need the tokenizer
    if (text && !r->m.tok) { // before any file exists
        aha_err("%s (%s is read as %s)", r->m.tok_error, o->s.data, r->read_as);
        return -1;
    }
    const int64_t bos = text && aha_tok_add_bos(r->m.tok) ? aha_tok_bos(r->m.tok) : -1;
    // A benchmark shape found by its fields rewrites the text through a prompt
    // template (docs/datasets.md): say so, as the summary and the trace do.
    if (!o->quiet && o->s.format == AHA_DS_AUTO && strcmp(r->read_as, "text") && strcmp(r->read_as, "jsonl") &&
        strcmp(r->read_as, "tokens"))
        fprintf(stderr, "%s: read as %s, detected (--data-format jsonl reads its text field as it is)\n", o->s.data,
                r->read_as);
    if (aha_backend_init(&r->be, &r->m, o->device, o->dtype) != 0) return -1;
    if (o->shard_n) snprintf(r->shard, sizeof r->shard, "%d/%d", o->shard_i, o->shard_n);
    aha_grid_describe(o->grid, o->n_grid, r->grid, sizeof r->grid);
    if (routed_runs_init(r) != 0) return -1;
    for (int k = 0; k < r->n_runs; k++)
        if (aha_run_init(&r->runs[k].ex, &r->be, r->ctx, o->s.batch) != 0) return -1;
    for (int i = 0; i < 2; i++)
        if (record_ctx_init(&r->out[i], c->n_layers, c->n_heads, r->ctx, o->n_eps,
                            o->werr ? o->n_windows : 0, o->mass ? o->n_windows : 0, r->n_runs, c->aha) != 0)
            return -1;
    r->targets = aha_calloc((size_t)r->ctx, sizeof *r->targets, "targets");
    r->oracle_global = aha_calloc((size_t)o->n_windows + 1, sizeof(int64_t), "counters");
    r->past_w = aha_calloc((size_t)o->n_windows + 1, sizeof(int64_t), "counters");
    r->layer_window = aha_calloc((size_t)c->n_layers, sizeof *r->layer_window, "layer windows");
    if (!r->targets || !r->oracle_global || !r->past_w || !r->layer_window) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        r->layer_window[l] = r->m.layers[l].window;
        r->n_global_layers += !r->m.layers[l].window;
    }
    int text_width;
    if (record_text_width(r->m.tok, c->vocab, &text_width) != 0) return -1;
    aha_trace_meta meta = {
        .model_sha256 = r->model_sha256, .arch = aha_arch_name(c->arch), .n_layers = c->n_layers,
        .layer_window = r->layer_window, .n_layer_window = c->n_layers,
        .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
        .vocab = c->vocab, .aha = c->aha, .router = o->route ? o->route : o->n_grid ? r->grid : c->aha ? "learned" : "none",
        .tau = r->tau, .router_file = o->router_file ? o->router_file : "", .router_sha256 = r->router_sha256, .eps = o->eps, .n_eps = o->n_eps, .windows = o->windows, .n_windows = o->n_windows,
        .werr = o->werr, .mass = o->mass, .mode = aha_enum_name(&aha_record_modes, o->mode),
        .dataset_sha256 = data->sha256, .dataset_docs = data->n_docs, .source_width = data->source_width,
        .command_line = o->command_line, .device = r->be.name, .shard = r->shard,
        .read_as = r->read_as, .bos = bos < 0 ? -1 : bos, .text_width = text_width};
    aha_settings_meta(&o->s, r->ctx, &meta);
    if (o->resume && !resume && !o->quiet) // a job script may always pass --resume
        fprintf(stderr, "%s does not exist yet: starting it\n", o->out);
    int complete = 0;
    if (resume) {
        int64_t tokens_done;
        if (resume_dataset_check(r, &meta) != 0 ||
            (complete = aha_trace_resume(&r->trace, o->out, &meta, &r->skip, &tokens_done)) < 0)
            return -1;
        if (!o->quiet && !complete)
            fprintf(stderr, "resuming %s after %lld contexts (%lld tokens)\n", o->out,
                    (long long)r->skip, (long long)tokens_done);
    } else if (aha_trace_create(&r->trace, o->out, &meta, o->force) != 0) {
        return -1;
    }
    r->writer.trace = r->trace;
    r->writer.tok = r->m.tok;
    // Run order in the trace is the order of the runs in record_ctx: full first.
    if (aha_trace_add_run(r->trace, "full", "global", 0) != 0) return -1;
    for (int k = 1; k < r->n_runs; k++)
        if (aha_trace_add_run_param(r->trace, r->runs[k].name, r->runs[k].policy, r->runs[k].window,
                                    r->runs[k].param) != 0)
            return -1;
    return aha_trace_runs_check(r->trace) != 0 ? -1 : complete;
}

static void recorder_free(recorder *r) {
    record_writer_wait(&r->writer);
    for (int k = 0; r->runs && k < r->n_runs; k++) aha_run_free(&r->runs[k].ex), aha_router_free(&r->runs[k].router);
    free(r->runs);
    record_ctx_free(&r->out[0]);
    record_ctx_free(&r->out[1]);
    free(r->targets);
    free(r->oracle_global);
    free(r->past_w);
    free(r->layer_window);
    aha_backend_free(&r->be);
    aha_router_unfuse(r->fused, r->m.cfg.n_layers);
    aha_model_free(&r->m);
    free(r->model_sha256);
}

// A document's size for the progress bar: its text, or 4 bytes per token id.
static double doc_bytes(const aha_doc *doc) { return doc->text ? (double)doc->len : 4.0 * doc->n_ids; }

// The contexts a resumed trace holds, read back into the run's totals
// through tally(), so that the summary describes the whole trace as an
// uninterrupted run's does. 0 or -1.
static int tally_recorded(recorder *r) {
    aha_tr tr;
    record_ctx *c = &r->out[r->cur];
    if (!r->skip) return 0;
    if (aha_tr_open(&tr, r->o->out) != 0) return -1;
    int64_t *offs = aha_malloc((size_t)tr.n_docs + 1, sizeof *offs, "doc_offsets");
    int rc = !offs || aha_tr_read(&tr, TD_DOC_OFFSETS, 0, 0, tr.n_docs + 1, offs) != 0;
    for (int64_t d = 0; !rc && d < tr.n_docs; d++) {
        const int64_t t0 = offs[d];
        c->T = (int)(offs[d + 1] - t0);
        if (c->T > r->ctx) { // the buffers' size; --ctx is the trace's: a damaged trace
            aha_err("%s: context %lld holds %d tokens, more than --ctx %d", r->o->out, (long long)d, c->T, r->ctx);
            rc = 1;
            break;
        }
        rc = aha_tr_read(&tr, TD_DEP, 0, t0, c->T, c->dep) || (c->aha && aha_tr_read(&tr, TD_GATE, 0, t0, c->T, c->lgate));
        for (int k = 0; !rc && k < r->n_runs; k++) {
            const aha_trace_run *tk = &tr.runs[k];
            rc = aha_tr_read(&tr, TD_RUN_NLL, k, t0, c->T, c->nll[k]) || aha_tr_read(&tr, TD_RUN_KL, k, t0, c->T, c->kl[k]);
            if (k && tk->has_gate) rc = rc || aha_tr_read(&tr, TD_RUN_GATE, k, t0, c->T, c->gate[k]);
            else if (k) memset(c->gate[k], !strcmp(tk->policy, "global"), (size_t)c->L * c->T * c->H); // no gate stored
            // FLOPs are kept per run, not per context: the totals ride on the first
            c->flops[k] = d ? (aha_attn_flops){0, 0} : (aha_attn_flops){tk->flops_executed, tk->flops_full};
        }
        if (!rc) {
            tally(r);
            r->prior_tokens += c->T;
        }
    }
    r->prior_contexts = tr.n_docs;
    free(offs);
    aha_tr_close(&tr);
    return rc ? -1 : 0;
}

static void summary(const recorder *r) {
    const aha_record_opts *o = r->o;
    double el = aha_now_s() - r->t0;
    if (r->all_sinks) // their 0 global is no measurement: said, not left to be read as one
        fprintf(stderr,
                "aha: warning: --sinks %d: %lld of %lld contexts hold at most %d tokens, so every key before "
                "their window is a sink and none is ever out of it: their decisions all count as local\n",
                o->s.sinks, (long long)r->all_sinks, (long long)(r->prior_contexts + r->contexts), o->s.sinks + 1);
    printf("recorded %lld tokens in %lld contexts to %s on %s (%.1f s, %.0f tok/s)\n",
           (long long)r->tokens, (long long)r->contexts, o->out, r->be.desc, el,
           r->tokens / (el > 0 ? el : 1));
    if (r->prior_contexts)
        printf("resumed: with the %lld contexts (%lld tokens) recorded before, the lines below describe the whole "
               "trace, %lld contexts\n", (long long)r->prior_contexts, (long long)r->prior_tokens,
               (long long)(r->prior_contexts + r->contexts));
    printf("dataset %s read as %s (--data-format %s)\n", o->s.data, r->read_as, aha_ds_format_name(o->s.format));
    if (r->n_global_layers < r->m.cfg.n_layers) {
        aha_trace_meta lm = {.n_layers = r->m.cfg.n_layers, .layer_window = r->layer_window,
                             .n_layer_window = r->m.cfg.n_layers};
        char label[160];
        aha_trace_layers_label(&lm, label, sizeof label);
        printf("fractions below: %s (aha report lists the local ones)\n", label);
    }
    if (!r->decisions) return;
    // all decisions: the paper's metric (the default); t >= w: where the
    // window drops keys (an oracle decides global only there).
    for (int tw = 0; tw < 2; tw++) {
        printf("fraction global, oracle (eps %g, sinks %d, ctx %d), %s:", o->eps[0], o->s.sinks, r->ctx,
               tw ? "decisions with t >= w" : "all decisions");
        for (int w = 0; w < o->n_windows; w++) {
            int64_t n = tw ? r->past_w[w] : r->decisions;
            if (n) printf(" w%d %.4f", o->windows[w], (double)r->oracle_global[w] / n);
            else printf(" w%d -", o->windows[w]);
        }
        printf("\n");
    }
    if (r->m.cfg.aha)
        printf("fraction global, learned router (tau %g, sinks %d, ctx %d), all decisions: %.4f\n", r->tau, o->s.sinks,
               r->ctx, (double)r->learned_global / r->decisions);
    const run *f = &r->runs[0];
    double ppl_full = aha_trace_ppl(&f->q);
    for (int k = 1; k < r->n_runs; k++) {
        const run *u = &r->runs[k];
        double full = u->sum_full > 0 ? u->sum_full : 1;
        printf("routed %-6s %s: ppl %.4f (full %.4f, %+.2f%%), mean KL %.5f, global (all decisions) %.4f, "
               "attention FLOPs %.3g of %.3g (%.1f%%",
               u->name, u->router.spec, aha_trace_ppl(&u->q), ppl_full, 100 * (aha_trace_ppl(&u->q) / ppl_full - 1),
               aha_trace_mean_kl(&u->q), (double)u->n_global / u->n_decisions, u->sum_exec, u->sum_full,
               100 * u->sum_exec / full);
        // the oracle decides from d_eps, werr from window errors: their full-attention pass runs first
        if (aha_policies[u->router.kind].full_pass)
            printf("; %.1f%% with the full pass the oracle needs first", 100 * (u->sum_exec + u->sum_full) / full);
        printf(")\n");
    }
}

int aha_record_run(const aha_record_opts *o) {
    recorder r = {0};
    aha_dataset *ds = NULL;
    aha_ds_opts dso = {.format = o->s.format, .text_field = o->s.text_field, .skip_bad = o->skip_bad,
                       .max_docs = o->s.max_docs};
    aha_ds_print data = {0};
    void *own = NULL; // the document being recorded, copied out of its file
    size_t own_cap = 0;
    int rc = -1, init;
    // The dataset first, whole (its fingerprint): bad or empty input fails
    // before any file exists.
    if (aha_ds_open(&ds, o->s.data, &dso) != 0 || aha_ds_fingerprint(o->s.data, &dso, &data) != 0) goto out;
    if ((init = recorder_init(&r, o, ds, &data)) != 0) {
        if (init > 0 && !o->quiet) fprintf(stderr, "%s: complete, nothing left to record\n", o->out);
        rc = init > 0 ? 0 : -1;
        goto out;
    }
    if (tally_recorded(&r) != 0) goto out;
    r.bytes_total = o->quiet || !isatty(2) ? 0 : data.bytes;
    r.t0 = aha_now_s();
    aha_doc doc;
    int more;
    // --max-tokens bounds the whole run: every shard counts the tokens of the
    // documents before its own, whoever records them, so the shards of a run
    // record exactly the unsharded run's contexts, and a resumed run counts
    // those it skips.
    int64_t seen = 0;  // contexts of this shard met, including those a resume skips
    int64_t doc_no = -1; // the document's ordinal in the dataset
    while ((more = aha_ds_next(ds, &doc)) == 1) {
        int32_t *ids;
        size_t n;
        char sha[AHA_SHA256_HEX] = ""; // the digest of the bytes tokenized
        int mine = ++doc_no % (o->shard_n ? o->shard_n : 1) == o->shard_i;
        if (!mine && !o->s.max_tokens) { // another shard's, and nothing to count
            r.bytes_done += doc_bytes(&doc);
            continue;
        }
        if (aha_doc_own(&doc, &own, &own_cap) != 0 || aha_doc_sha256(&doc, sha) != 0 ||
            doc_unchanged(&r, doc_no, &doc, sha) != 0)
            goto out;
        if (aha_doc_ids(&r.m, &doc, &ids, &n) != 0) { // the whole run stops (or skips) here too
            if (!o->skip_bad) goto out;
            if (mine) fprintf(stderr, "aha: %s (skipped)\n", aha_errmsg());
            continue;
        }
        const size_t ctx = (size_t)r.ctx;
        for (size_t c0 = 0; c0 < n; c0 += ctx) {
            int T = (int)(n - c0 < ctx ? n - c0 : ctx);
            if (o->s.max_tokens && r.run_tokens + T > o->s.max_tokens) T = (int)(o->s.max_tokens - r.run_tokens);
            if (T <= 0) break;
            r.run_tokens += T;
            if (!mine || seen++ < r.skip) continue;
            int32_t next = c0 + (size_t)T < n ? ids[c0 + (size_t)T] : -1;
            // The context computed here is written on the writer thread while
            // the next one computes into the other buffers.
            if (record_ctx_doc(&r.out[r.cur], doc_no, doc.source, sha) != 0 ||
                run_context(&r, ids + c0, T, next, doc_no << 32 | (int64_t)(c0 / ctx)) != 0) {
                free(ids);
                goto out;
            }
            tally(&r);
            if (record_writer_start(&r.writer, &r.out[r.cur]) != 0) {
                free(ids);
                goto out;
            }
            r.cur ^= 1;
            r.contexts++;
            r.tokens += T;
            progress(&r, 0);
        }
        free(ids);
        r.bytes_done += doc_bytes(&doc);
        progress(&r, 0);
        if (o->s.max_tokens && r.run_tokens >= o->s.max_tokens) break;
    }
    if (more < 0 || record_writer_wait(&r.writer) != 0) goto out;
    if (!(o->s.max_tokens && r.run_tokens >= o->s.max_tokens) && doc_no + 1 != data.n_docs) {
        aha_err("%s: %lld documents now, %lld at the first read: the dataset changed while it was recorded; "
                "record it again once it is settled",
                o->s.data, (long long)(doc_no + 1), (long long)data.n_docs);
        goto out;
    }
    progress(&r, 1);
    // A folder's later files may be read as other formats than its first.
    if (aha_trace_set_read_as(r.trace, aha_ds_read_as(ds, r.read_as, sizeof r.read_as)) != 0) goto out;
    if (aha_trace_close(r.trace) != 0) {
        r.trace = NULL;
        goto out;
    }
    r.trace = NULL;
    summary(&r);
    rc = 0;
out:
    if (r.writer.busy) { // an error here: the write in flight finishes, the error stays
        char why[1024];
        snprintf(why, sizeof why, "%s", aha_errmsg());
        record_writer_wait(&r.writer);
        aha_err("%s", why);
    }
    aha_trace_free(r.trace); // an unfinished trace stays resumable
    recorder_free(&r);
    aha_ds_close(ds);
    aha_ds_print_free(&data);
    free(own);
    return rc;
}
