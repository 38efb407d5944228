// The recording loop: documents -> contexts -> lockstep forward passes (the
// full-attention run with the dependency pass, plus one routed run per
// window) -> one trace document per context.
#include "record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "dataset.h"
#include "err.h"
#include "forward.h"
#include "model.h"
#include "ops.h"
#include "router.h"
#include "trace.h"
#include "utf8.h"

typedef struct {
    aha_state st;       // its own KV cache: runs see different attention
    char name[32];      // "full", "w128", ...
    int window;         // 0 for the full run
    float *nll, *kl;    // [ctx] per token of the current context
    uint8_t *gate;      // [L, T, H] decisions followed (routed runs)
    uint8_t *chunk_gate;// [L, batch, H]
    aha_attn_flops flops;// of the current context
    double sum_nll, sum_kl, sum_exec, sum_full; // over the whole run
    int64_t n_scored, n_global, n_decisions;
} run;

typedef struct {
    const aha_record_opts *o;
    aha_model m;
    aha_router router;
    aha_trace *trace;
    run *runs;            // [n_runs]; runs[0] is full attention
    int n_runs;
    uint32_t *dep;        // [n_eps, L, T, H]
    float *werr;          // [n_windows, L, T, H] (--werr)
    uint8_t *lgate;       // [L, T, H] learned decisions (AHA models)
    float *llogit;        // [L, T, H] learned router logits
    uint32_t *chunk_dep;  // [L, n_eps, batch, H]
    float *chunk_werr;    // [L, n_windows, batch, H]
    char *text_buf;       // token pieces of the context, NUL-separated
    size_t text_cap;
    const char **texts;   // [ctx] into text_buf
    int64_t contexts, tokens, skip; // done, and to skip when resuming
    int64_t *oracle_global; // [n_windows] d_eps[0] > w counts
    int64_t learned_global, decisions;
    double t0, bytes_total, bytes_done;
} recorder;

// The token pieces of a context as NUL-terminated UTF-8 (the ids in decimal
// when the model has no tokenizer).
static int set_texts(recorder *r, const int32_t *ids, int T) {
    size_t need = 0, len = 0;
    for (int t = 0; t < T; t++) {
        len = 0;
        if (r->m.tok) aha_tok_piece(r->m.tok, ids[t], &len);
        need += 3 * len + 12;
    }
    if (need > r->text_cap) {
        char *b = realloc(r->text_buf, need);
        if (!b) {
            aha_err("out of memory for token texts");
            return -1;
        }
        r->text_buf = b, r->text_cap = need;
    }
    size_t off = 0;
    for (int t = 0; t < T; t++) {
        r->texts[t] = r->text_buf + off;
        if (!r->m.tok) {
            off += (size_t)snprintf(r->text_buf + off, 12, "%d", ids[t]) + 1;
            continue;
        }
        const char *p = aha_tok_piece(r->m.tok, ids[t], &len);
        // byte-level pieces can split a character: store valid UTF-8 for readers
        off += aha_utf8_sanitize(p ? p : "", p ? len : 0, r->text_buf + off);
    }
    return 0;
}

// Copy a chunk laid out [L, k, n, H] into a context buffer [k, L, T, H] at t0.
#define SCATTER(dst, src, K, n, t0)                                                    \
    for (int l = 0; l < L; l++)                                                        \
        for (int k_ = 0; k_ < (K); k_++)                                               \
            memcpy(dst + (((size_t)k_ * L + l) * T + (t0)) * H,                        \
                   src + (((size_t)l * (K) + k_) * (n)) * H, sizeof *dst * (size_t)(n) * H)

static int run_context(recorder *r, const int32_t *ids, int T, int32_t next_token) {
    const aha_record_opts *o = r->o;
    const int L = r->m.cfg.n_layers, H = r->m.cfg.n_heads, V = r->m.cfg.vocab;
    for (int k = 0; k < r->n_runs; k++) {
        r->runs[k].st.n_past = 0;
        r->runs[k].flops = (aha_attn_flops){0, 0};
    }
    for (int b0 = 0; b0 < T; b0 += o->batch) {
        const int n = T - b0 < o->batch ? T - b0 : o->batch;
        aha_probe full = {o->eps, o->n_eps, o->windows, o->werr ? o->n_windows : 0, o->sinks,
                          r->chunk_dep, r->chunk_werr, NULL, 0, 0, NULL, {0, 0}};
        if (aha_forward_probe(&r->m, &r->runs[0].st, ids + b0, n, 1, &full) != 0) return -1;
        r->runs[0].flops.executed += full.flops.executed;
        r->runs[0].flops.full += full.flops.full;
        SCATTER(r->dep, r->chunk_dep, o->n_eps, n, b0);
        if (o->werr) SCATTER(r->werr, r->chunk_werr, o->n_windows, n, b0);
        if (r->m.cfg.aha) {
            const float cut = logf(o->tau / (1 - o->tau));
            for (int i = 0; i < n; i++)
                for (int l = 0; l < L; l++)
                    for (int h = 0; h < H; h++) {
                        float x = r->runs[0].st.router[((size_t)i * L + l) * H + h];
                        size_t at = ((size_t)l * T + b0 + i) * H + h;
                        r->llogit[at] = x;
                        r->lgate[at] = x > cut;
                    }
        }
        for (int k = 1; k < r->n_runs; k++) {
            run *u = &r->runs[k];
            aha_probe p = {0};
            p.sinks = o->sinks, p.router = &r->router, p.window = u->window;
            p.doc = r->contexts, p.gate = u->chunk_gate;
            if (aha_forward_probe(&r->m, &u->st, ids + b0, n, 1, &p) != 0) return -1;
            u->flops.executed += p.flops.executed;
            u->flops.full += p.flops.full;
            for (int l = 0; l < L; l++)
                memcpy(u->gate + ((size_t)l * T + b0) * H, u->chunk_gate + (size_t)l * n * H,
                       (size_t)n * H);
        }
        for (int i = 0; i < n; i++) {
            int t = b0 + i;
            int32_t target = t + 1 < T ? ids[t + 1] : next_token;
            for (int k = 0; k < r->n_runs; k++) {
                run *u = &r->runs[k];
                const float *row = u->st.logits + (size_t)i * V;
                u->nll[t] = target < 0 ? NAN : aha_logsumexp(row, V) - row[target];
                u->kl[t] = k ? aha_kl_logits(r->runs[0].st.logits + (size_t)i * V, row, V) : 0.0f;
                if (target >= 0) u->sum_nll += u->nll[t], u->n_scored++;
                u->sum_kl += u->kl[t];
            }
        }
    }
    return 0;
}

static void tally(recorder *r, int T) {
    const aha_record_opts *o = r->o;
    const int L = r->m.cfg.n_layers, H = r->m.cfg.n_heads;
    for (int l = 0; l < L; l++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                size_t at = ((size_t)l * T + t) * H + h;
                uint32_t d = r->dep[at]; // first eps
                for (int w = 0; w < o->n_windows; w++) r->oracle_global[w] += d > (uint32_t)o->windows[w];
                if (r->m.cfg.aha) r->learned_global += r->lgate[at];
                for (int k = 1; k < r->n_runs; k++) r->runs[k].n_global += r->runs[k].gate[at];
            }
    r->decisions += (int64_t)L * T * H;
    for (int k = 0; k < r->n_runs; k++) {
        r->runs[k].sum_exec += r->runs[k].flops.executed;
        r->runs[k].sum_full += r->runs[k].flops.full;
        r->runs[k].n_decisions += (int64_t)L * T * H;
    }
}

static int append_context(recorder *r, const int32_t *ids, int T) {
    const aha_record_opts *o = r->o;
    aha_trace_run_doc rd[1 + AHA_MAX_WINDOWS];
    for (int k = 0; k < r->n_runs; k++)
        rd[k] = (aha_trace_run_doc){r->runs[k].nll, r->runs[k].kl, k ? r->runs[k].gate : NULL,
                                    r->runs[k].flops.executed, r->runs[k].flops.full};
    if (set_texts(r, ids, T) != 0) return -1;
    aha_trace_doc d = {T, ids, r->texts, r->m.cfg.aha ? r->lgate : NULL,
                       r->m.cfg.aha ? r->llogit : NULL, r->dep, o->werr ? r->werr : NULL, rd};
    return aha_trace_append(r->trace, &d);
}

// A progress bar on stderr when it is a terminal, at most 4 times a second.
static void progress(recorder *r, int final) {
    static double last;
    double now = aha_now_s();
    if (r->o->quiet || !isatty(2) || (!final && now - last < 0.25)) return;
    last = now;
    double el = now - r->t0, rate = r->tokens / (el > 0 ? el : 1e-9);
    double frac = r->bytes_total > 0 ? r->bytes_done / r->bytes_total : 0;
    if (r->o->max_tokens && (double)r->tokens / r->o->max_tokens > frac)
        frac = (double)r->tokens / r->o->max_tokens;
    int bar = (int)(frac * 30);
    char eta[32] = "--:--";
    if (frac > 0 && !final) {
        int sec = (int)(el * (1 - frac) / frac);
        snprintf(eta, sizeof eta, "%d:%02d", sec / 60, sec % 60);
    }
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%  %lld contexts  %lld tokens  %.0f tok/s  ETA %s ", bar,
            "##############################", 30 - bar, "", 100 * frac, (long long)r->contexts,
            (long long)r->tokens, rate, eta);
    if (final) fprintf(stderr, "\n");
}

static int recorder_init(recorder *r, const aha_record_opts *o) {
    memset(r, 0, sizeof *r);
    r->o = o;
    if (aha_model_load(&r->m, o->model) != 0) return -1;
    const aha_config *c = &r->m.cfg;
    if (o->route &&
        aha_router_parse(&r->router, o->route, c->n_layers, c->n_heads, c->aha, o->tau, o->eps[0], o->seed) != 0)
        return -1;
    const size_t L = (size_t)c->n_layers, H = (size_t)c->n_heads, ctx = (size_t)o->ctx, B = (size_t)o->batch;
    r->n_runs = 1 + o->n_routed;
    r->runs = aha_calloc((size_t)r->n_runs, sizeof *r->runs, "runs");
    if (!r->runs) return -1;
    for (int k = 0; k < r->n_runs; k++) {
        run *u = &r->runs[k];
        u->window = k ? o->routed_windows[k - 1] : 0;
        snprintf(u->name, sizeof u->name, k ? "w%d" : "full", u->window);
        if (aha_state_init(&u->st, &r->m, o->ctx, o->batch) != 0) return -1;
        u->nll = aha_calloc(ctx, sizeof(float), "nll");
        u->kl = aha_calloc(ctx, sizeof(float), "kl");
        u->gate = aha_calloc(L * ctx, H, "gates");
        u->chunk_gate = aha_calloc(L * B, H, "gates");
        if (!u->nll || !u->kl || !u->gate || !u->chunk_gate) return -1;
    }
    r->dep = aha_calloc((size_t)o->n_eps * L * ctx, H * sizeof(uint32_t), "distances");
    r->chunk_dep = aha_calloc((size_t)o->n_eps * L * B, H * sizeof(uint32_t), "distances");
    r->werr = aha_calloc((size_t)(o->werr ? o->n_windows : 1) * L * ctx, H * sizeof(float), "window errors");
    r->chunk_werr = aha_calloc((size_t)(o->werr ? o->n_windows : 1) * L * B, H * sizeof(float), "window errors");
    r->lgate = aha_calloc(L * ctx, H, "gates");
    r->llogit = aha_calloc(L * ctx, H * sizeof(float), "router logits");
    r->texts = aha_calloc(ctx, sizeof *r->texts, "token texts");
    r->oracle_global = aha_calloc((size_t)o->n_windows + 1, sizeof(int64_t), "counters");
    if (!r->dep || !r->chunk_dep || !r->werr || !r->chunk_werr || !r->lgate || !r->llogit ||
        !r->texts || !r->oracle_global)
        return -1;
    aha_trace_meta meta = {o->model, aha_arch_name(c->arch), c->n_layers, c->n_heads,
                           c->n_kv_heads, c->head_dim, c->vocab, c->aha,
                           o->route ? o->route : (c->aha ? "learned" : "none"), o->tau, o->eps,
                           o->n_eps, o->windows, o->n_windows, o->sinks, o->werr, o->mode,
                           o->data, o->command_line, 0};
    if (o->resume) {
        int64_t tokens_done;
        if (aha_trace_resume(&r->trace, o->out, &meta, &r->skip, &tokens_done) != 0) return -1;
        if (!o->quiet)
            fprintf(stderr, "resuming %s after %lld contexts (%lld tokens)\n", o->out,
                    (long long)r->skip, (long long)tokens_done);
    } else if (aha_trace_create(&r->trace, o->out, &meta, o->force) != 0) {
        return -1;
    }
    // Run order in the trace is the order of rd[] in append_context: full first.
    if (aha_trace_add_run(r->trace, "full", "global", 0) != 0) return -1;
    for (int k = 1; k < r->n_runs; k++)
        if (aha_trace_add_run(r->trace, r->runs[k].name, o->route, r->runs[k].window) != 0) return -1;
    return 0;
}

static void recorder_free(recorder *r) {
    for (int k = 0; r->runs && k < r->n_runs; k++) {
        aha_state_free(&r->runs[k].st);
        free(r->runs[k].nll), free(r->runs[k].kl), free(r->runs[k].gate), free(r->runs[k].chunk_gate);
    }
    free(r->runs);
    free(r->dep), free(r->chunk_dep), free(r->werr), free(r->chunk_werr);
    free(r->lgate), free(r->llogit), free(r->texts), free(r->text_buf), free(r->oracle_global);
    aha_router_free(&r->router);
    aha_model_free(&r->m);
}

// Total bytes of the dataset, for the progress bar's ETA (a cheap first pass).
static double dataset_bytes(const aha_record_opts *o, const aha_ds_opts *dso) {
    aha_dataset *d;
    aha_doc doc;
    double total = 0;
    if (aha_ds_open(&d, o->data, dso) != 0) return 0;
    while (aha_ds_next(d, &doc) == 1) total += doc.text ? (double)doc.len : 4.0 * doc.n_ids;
    aha_ds_close(d);
    return total;
}

// Token ids of one document (with BOS when the tokenizer wants one).
static int doc_ids(recorder *r, const aha_doc *doc, int32_t **ids, size_t *n) {
    if (doc->ids) {
        *ids = aha_malloc(doc->n_ids ? doc->n_ids : 1, sizeof(int32_t), doc->name);
        if (!*ids) return -1;
        for (size_t i = 0; i < doc->n_ids; i++) {
            if (doc->ids[i] >= r->m.cfg.vocab) {
                aha_err("%s: token id %d out of range (vocab %d)", doc->name, doc->ids[i], r->m.cfg.vocab);
                free(*ids);
                return -1;
            }
            (*ids)[i] = doc->ids[i];
        }
        *n = doc->n_ids;
        return 0;
    }
    int32_t *raw;
    size_t n_raw;
    if (!r->m.tok) { // text needs a tokenizer; token files do not
        aha_err("%s", r->m.tok_error);
        return -1;
    }
    if (aha_tok_encode(r->m.tok, doc->text, doc->len, &raw, &n_raw) != 0) {
        aha_err_prefix(doc->name);
        return -1;
    }
    int bos = aha_tok_add_bos(r->m.tok) && aha_tok_bos(r->m.tok) >= 0;
    *ids = aha_malloc(n_raw + 1, sizeof(int32_t), doc->name);
    if (!*ids) {
        free(raw);
        return -1;
    }
    if (bos) (*ids)[0] = aha_tok_bos(r->m.tok);
    memcpy(*ids + bos, raw, n_raw * sizeof(int32_t));
    *n = n_raw + (size_t)bos;
    free(raw);
    return 0;
}

static void summary(const recorder *r) {
    const aha_record_opts *o = r->o;
    double el = aha_now_s() - r->t0;
    printf("recorded %lld tokens in %lld contexts to %s (%.1f s, %.0f tok/s)\n",
           (long long)r->tokens, (long long)r->contexts, o->out, el, r->tokens / (el > 0 ? el : 1));
    if (!r->decisions) return;
    printf("fraction global, oracle (eps %g):", o->eps[0]);
    for (int w = 0; w < o->n_windows; w++)
        printf(" w%d %.4f", o->windows[w], (double)r->oracle_global[w] / r->decisions);
    printf("\n");
    if (r->m.cfg.aha)
        printf("fraction global, learned router (tau %g): %.4f\n", o->tau,
               (double)r->learned_global / r->decisions);
    const run *f = &r->runs[0];
    double ppl_full = exp(f->sum_nll / (f->n_scored ? f->n_scored : 1));
    for (int k = 1; k < r->n_runs; k++) {
        const run *u = &r->runs[k];
        printf("routed %-6s %s: ppl %.4f (full %.4f, %+.2f%%), mean KL %.5f, global %.4f, "
               "attention FLOPs %.3g of %.3g (%.1f%%)\n",
               u->name, o->route, exp(u->sum_nll / (u->n_scored ? u->n_scored : 1)), ppl_full,
               100 * (exp(u->sum_nll / (u->n_scored ? u->n_scored : 1)) / ppl_full - 1),
               u->sum_kl / (u->n_scored ? u->n_scored : 1), (double)u->n_global / u->n_decisions,
               u->sum_exec, u->sum_full, 100 * u->sum_exec / (u->sum_full > 0 ? u->sum_full : 1));
    }
}

int aha_record_run(const aha_record_opts *o) {
    recorder r;
    aha_dataset *ds = NULL;
    aha_ds_opts dso = {AHA_DS_AUTO, o->text_field, o->skip_bad, o->max_docs};
    int rc = -1;
    if (aha_ds_format_parse(o->format, &dso.format) != 0) return -1;
    // Open the dataset first: bad or empty input fails before any file exists.
    if (aha_ds_open(&ds, o->data, &dso) != 0) return -1;
    if (recorder_init(&r, o) != 0) goto out;
    r.bytes_total = o->quiet || !isatty(2) ? 0 : dataset_bytes(o, &dso);
    r.t0 = aha_now_s();
    aha_doc doc;
    int more;
    int64_t seen = 0; // contexts met, including skipped ones
    while ((more = aha_ds_next(ds, &doc)) == 1) {
        int32_t *ids;
        size_t n;
        if (doc_ids(&r, &doc, &ids, &n) != 0) {
            if (!o->skip_bad) goto out;
            fprintf(stderr, "aha: %s (skipped)\n", aha_errmsg());
            continue;
        }
        for (size_t c0 = 0; c0 < n; c0 += (size_t)o->ctx, seen++) {
            int T = (int)(n - c0 < (size_t)o->ctx ? n - c0 : (size_t)o->ctx);
            if (seen < r.skip) continue;
            if (o->max_tokens && r.tokens + T > o->max_tokens) T = (int)(o->max_tokens - r.tokens);
            if (T <= 0) break;
            int32_t next = c0 + (size_t)T < n ? ids[c0 + (size_t)T] : -1;
            if (run_context(&r, ids + c0, T, next) != 0 || append_context(&r, ids + c0, T) != 0) {
                free(ids);
                goto out;
            }
            tally(&r, T);
            r.contexts++;
            r.tokens += T;
            progress(&r, 0);
        }
        free(ids);
        r.bytes_done += doc.text ? (double)doc.len : 4.0 * doc.n_ids;
        progress(&r, 0);
        if (o->max_tokens && r.tokens >= o->max_tokens) break;
    }
    if (more < 0) goto out;
    progress(&r, 1);
    if (aha_trace_close(r.trace) != 0) {
        r.trace = NULL;
        goto out;
    }
    r.trace = NULL;
    summary(&r);
    rc = 0;
out:
    aha_trace_free(r.trace); // an unfinished trace stays resumable
    recorder_free(&r);
    aha_ds_close(ds);
    return rc;
}
