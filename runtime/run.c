// Runs on the CPU or a CUDA device (run.h): the CPU side of the protocol,
// and the dispatch to gpu.h for the device.
#include "run.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "ops.h"

int aha_backend_init(aha_backend *b, const aha_model *m, const char *device, const char *dtype) {
    memset(b, 0, sizeof *b);
    b->m = m;
    aha_gpu_dtype dt = AHA_GPU_F32;
    if (dtype && aha_gpu_dtype_parse(dtype, &dt) != 0) return -1;
    if (!device || !strcmp(device, "cpu")) {
        if (dt == AHA_GPU_F16) {
            aha_err("--dtype %s: the CPU computes in f32 or bf16 (f16 is for --device cuda)", dtype);
            return -1;
        }
        if (dt == AHA_GPU_BF16) { // f32 stays the default and the reference
            if (!(b->cpu_bf16 = aha_calloc(1, sizeof *b->cpu_bf16, "bf16 backend"))) return -1;
            if (aha_cpu_bf16_init(b->cpu_bf16, m) != 0) {
                free(b->cpu_bf16), b->cpu_bf16 = NULL;
                return -1;
            }
            snprintf(b->name, sizeof b->name, "cpu:bf16");
            snprintf(b->desc, sizeof b->desc, "CPU (bf16 products: %s)", aha_mm_bf16_describe(b->cpu_bf16->mm));
            return 0;
        }
        snprintf(b->name, sizeof b->name, "cpu");
        snprintf(b->desc, sizeof b->desc, "CPU (f32)");
        return 0;
    }
    if (strcmp(device, "cuda") != 0) {
        aha_err("--device: unknown device '%s' (cpu, cuda)", device);
        return -1;
    }
    if (!(b->gpu = aha_gpu_model_init(m, dt))) return -1;
    char what[128], types[96];
    size_t tile, bytes = aha_gpu_model_resident(b->gpu, &tile, types, sizeof types);
    aha_gpu_describe(what, sizeof what);
    snprintf(b->name, sizeof b->name, "cuda:%s", aha_gpu_dtype_name(dt));
    snprintf(b->desc, sizeof b->desc, "%s, %s products; weights resident on the device: %.1f MiB (%s) + %.1f MiB decode tile",
             what, aha_gpu_dtype_name(dt), bytes / 1048576.0, types, tile / 1048576.0);
    return 0;
}

void aha_backend_free(aha_backend *b) {
    aha_gpu_model_free(b->gpu);
    if (b->cpu_bf16) aha_cpu_bf16_free(b->cpu_bf16);
    free(b->cpu_bf16);
    memset(b, 0, sizeof *b);
}

static void slot_free(aha_run_slot *s) {
    free(s->dep), free(s->werr), free(s->mass_far), free(s->mass_sink), free(s->gate), free(s->router), free(s->logits), free(s->nll), free(s->kl);
    memset(s, 0, sizeof *s);
}

int aha_ctx_resolve(const aha_model *m, int *ctx, int dflt) {
    const int trained = m->cfg.max_ctx;
    if (*ctx == 0) *ctx = dflt < trained ? dflt : trained;
    if (*ctx > trained) {
        aha_err("%s: a context of %d tokens exceeds the model's trained context (%d tokens); use --ctx %d or less",
                m->path, *ctx, trained, trained);
        return -1;
    }
    return 0;
}

void aha_context_targets(const int32_t *ids, int T, int32_t next, int32_t *targets) {
    for (int t = 0; t < T; t++) targets[t] = t + 1 < T ? ids[t + 1] : next;
}

int aha_sinks_check(int sinks, int ctx) {
    if (sinks < ctx) return 0;
    aha_err("--sinks must be less than the context, %d tokens (got %d: every key would be a sink)", ctx, sinks);
    return -1;
}

int aha_run_init(aha_run *r, const aha_backend *b, int max_ctx, int max_batch) {
    memset(r, 0, sizeof *r);
    r->b = b;
    int ctx = max_ctx; // positions past the trained context are refused, not extrapolated
    if (max_ctx < 1 || aha_ctx_resolve(b->m, &ctx, max_ctx) != 0) return -1;
    r->max_batch = max_batch;
    for (int k = 0; k < 2; k++)
        if (!(r->note[k].scored = aha_calloc((size_t)max_batch, 1, "targets"))) return -1;
    if (b->gpu) return (r->g = aha_gpu_init(b->gpu, max_ctx, max_batch)) ? 0 : -1;
    if (aha_state_init(&r->st, b->m, max_ctx, max_batch) != 0) return -1;
    r->st.bf16 = b->cpu_bf16 ? b->cpu_bf16->mm : NULL;
    const aha_config *c = &b->m->cfg;
    const size_t B = (size_t)r->st.max_batch, LBH = (size_t)c->n_layers * B * c->n_heads;
    for (int k = 0; k < 2; k++) {
        aha_run_slot *s = &r->slot[k];
        s->gate = aha_calloc(LBH, 1, "decisions");
        s->router = aha_calloc(LBH, sizeof(float), "router logits");
        s->logits = aha_calloc((size_t)c->vocab, sizeof(float), "logits");
        s->nll = aha_calloc(B, sizeof(float), "nll");
        s->kl = aha_calloc(B, sizeof(float), "kl");
        if (!s->gate || !s->router || !s->logits || !s->nll || !s->kl) return -1;
    }
    return 0;
}

void aha_run_free(aha_run *r) {
    if (r->g) aha_gpu_free(r->g);
    else if (r->b) aha_state_free(&r->st);
    slot_free(&r->slot[0]);
    slot_free(&r->slot[1]);
    free(r->note[0].scored);
    free(r->note[1].scored);
    memset(r, 0, sizeof *r);
}

void aha_run_reset(aha_run *r, int len) {
    if (r->g) aha_gpu_reset(r->g, len);
    else aha_state_reset(&r->st, r->b->m, len);
}

// Room in s for a probe's dependency outputs.
static int slot_reserve(aha_run_slot *s, size_t LBH, int n_eps, int n_werr, int n_mass) {
    if (n_eps > s->eps_cap) {
        free(s->dep);
        if (!(s->dep = aha_calloc((size_t)n_eps * LBH, sizeof(uint32_t), "distances"))) return -1;
        s->eps_cap = n_eps;
    }
    if (n_werr > s->werr_cap) {
        free(s->werr);
        if (!(s->werr = aha_calloc((size_t)n_werr * LBH, sizeof(float), "window errors"))) return -1;
        s->werr_cap = n_werr;
    }
    if (n_mass > s->mass_cap) {
        free(s->mass_far), free(s->mass_sink);
        s->mass_sink = aha_calloc(LBH, sizeof(float), "mass split");
        if (!(s->mass_far = aha_calloc((size_t)n_mass * LBH, sizeof(float), "mass split")) || !s->mass_sink) return -1;
        s->mass_cap = n_mass;
    }
    return 0;
}

// Note in the slot this submit fills what its outputs are checked against
// at collect: which tokens have a target, the position of the first.
static void note_call(aha_run *r, const aha_call *c, int n, int pos) {
    aha_run_note *o = &r->note[r->next];
    for (int t = 0; t < n && t < r->max_batch; t++) o->scored[t] = c && c->targets && c->targets[t] >= 0;
    o->pos = pos;
    o->targets = c && c->targets;
    o->last = c && c->last_logits;
    o->n_werr = c && c->probe && !c->probe->router ? c->probe->n_werr : 0;
}

int aha_run_submit(aha_run *r, const int32_t *tokens, int n, const aha_call *c, const aha_run *ref) {
    static const aha_call plain = {NULL, 0, 0, NULL};
    const int pos = r->g ? aha_gpu_n_past(r->g) : r->st.n_past;
    if (r->g) {
        if (aha_gpu_submit(r->g, tokens, n, c, ref ? ref->g : NULL) != 0) return -1;
        note_call(r, c, n, pos);
        r->next ^= 1;
        return 0;
    }
    if (!c) c = &plain;
    const aha_config *cfg = &r->b->m->cfg;
    const int V = cfg->vocab, rows = c->targets || c->all_rows ? n : 1;
    aha_run_slot *s = &r->slot[r->next];
    if (s->busy) {
        aha_err("two calls already in flight on this run: collect one first");
        return -1;
    }
    if (ref && (ref->b != r->b || ref->rows != n || !c->targets)) {
        aha_err("KL reference: not a run of this backend, or its last call was not the same %d "
                "scored tokens", n);
        return -1;
    }
    for (int i = 0; c->targets && i < n; i++)
        if (c->targets[i] >= V) {
            aha_err("target token id %d out of range (vocab %d)", c->targets[i], V);
            return -1;
        }
    aha_probe p, *pp = NULL;
    if (c->probe) {
        const size_t LBH = (size_t)cfg->n_layers * r->st.max_batch * cfg->n_heads;
        const int observe = !c->probe->router;
        if (slot_reserve(s, LBH, observe ? c->probe->n_eps : 0, observe ? c->probe->n_werr : 0,
                         observe ? c->probe->n_mass : 0) != 0)
            return -1;
        p = *c->probe;
        if (!observe) p.n_eps = p.n_werr = p.n_mass = 0; // a run routes or observes, as its CUDA twin does
        p.dep = s->dep, p.werr = s->werr, p.gate = s->gate, p.flops = (aha_attn_flops){0, 0};
        p.mass_far = s->mass_far, p.mass_sink = s->mass_sink;
        pp = &p;
    }
    const aha_model *fm = r->b->cpu_bf16 ? &r->b->cpu_bf16->model : r->b->m; // bf16: its matrices
    if (aha_forward_probe(fm, &r->st, tokens, n, rows == n, pp) != 0) return -1;
    r->rows = rows;
    s->n = n;
    s->flops = pp ? p.flops : (aha_attn_flops){0, 0};
    if (c->last_logits) memcpy(s->logits, r->st.logits + (size_t)(rows - 1) * V, sizeof(float) * V);
    if (cfg->aha) memcpy(s->router, r->st.router, sizeof(float) * n * cfg->n_layers * cfg->n_heads);
    // Rows are independent, so threads change no value; one thread alone left
    // the other idle through a pass over every logit (n x V: 8.6G at 32768 on
    // a 262144-entry vocabulary).
    if (c->targets) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            const float *row = r->st.logits + (size_t)i * V;
            s->nll[i] = c->targets[i] < 0 ? NAN : aha_logsumexp(row, V) - row[c->targets[i]];
            s->kl[i] = ref ? aha_kl_logits(ref->st.logits + (size_t)i * V, row, V) : 0.0f;
        }
    }
    s->busy = 1;
    note_call(r, c, n, pos);
    r->next ^= 1;
    return 0;
}

const float *aha_run_last_werr(const aha_run *r) { return r->g ? NULL : r->slot[r->next ^ 1].werr; }

// The outputs of a call are finite: the CPU's forward pass stops at the
// first NaN or Inf it makes, a device's is checked by output here.
static int check_outputs(const aha_run *r, const aha_call_out *o, int k) {
    const aha_config *c = &r->b->m->cfg;
    const int L = c->n_layers, H = c->n_heads, n = o->n, W = r->note[k].n_werr;
    const long p0 = r->note[k].pos;
    const char *path = r->b->m->path, *stop = "the run stops rather than record it";
    for (int t = 0; r->note[k].targets && t < n; t++) {
        if (isfinite(o->nll[t]) || (isnan(o->nll[t]) && !r->note[k].scored[t])) continue; // NaN: no target
        aha_err("%s: NaN or Inf in the NLL at position %ld: %s", path, p0 + t, stop);
        return -1;
    }
    long i;
    if (r->note[k].targets && (i = aha_nonfinite(o->kl, n)) >= 0) {
        aha_err("%s: NaN or Inf in the KL at position %ld: %s", path, p0 + i, stop);
        return -1;
    }
    if (r->note[k].last && (i = aha_nonfinite(o->logits, c->vocab)) >= 0) {
        aha_err("%s: NaN or Inf in the logits at position %ld: %s", path, p0 + n - 1, stop);
        return -1;
    }
    if (W && (i = aha_nonfinite(o->werr, (long)L * W * n * H)) >= 0) { // [L, W, n, H]
        aha_err("%s: NaN or Inf in the window errors at layer %ld, head %ld, position %ld: %s", path,
                i / H / n / W, i % H, p0 + i / H % n, stop);
        return -1;
    }
    if (c->aha && (i = aha_nonfinite(o->router, (long)n * L * H)) >= 0) { // [n, L, H]
        aha_err("%s: NaN or Inf in the router logits at layer %ld, head %ld, position %ld: %s", path,
                i / H % L, i % H, p0 + i / H / L, stop);
        return -1;
    }
    return 0;
}

int aha_run_collect(aha_run *r, aha_call_out *out) {
    const int k = r->oldest;
    if (r->g) {
        if (aha_gpu_collect(r->g, out) != 0) return -1;
    } else {
        aha_run_slot *s = &r->slot[k];
        if (!s->busy) {
            aha_err("nothing submitted to collect");
            return -1;
        }
        *out = (aha_call_out){s->n, s->dep, s->werr, s->gate, s->router, s->logits, s->nll, s->kl, s->flops, s->mass_far, s->mass_sink};
        s->busy = 0;
    }
    r->oldest ^= 1;
    return check_outputs(r, out, k);
}

int aha_run_step(aha_run *r, const int32_t *tokens, int n, const aha_call *c, aha_call_out *out) {
    return aha_run_submit(r, tokens, n, c, NULL) == 0 ? aha_run_collect(r, out) : -1;
}

double aha_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int interrupt_fd;
static const char *interrupt_msg;

static void interrupted(int sig) {
    if (interrupt_msg) (void)!write(interrupt_fd, interrupt_msg, strlen(interrupt_msg)); // it ends either way
    signal(sig, SIG_DFL);
    raise(sig);
}

void aha_on_interrupt(int fd, const char *msg) {
    interrupt_fd = fd, interrupt_msg = msg;
    const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction now;
        // ignored when we started (a script's background job ignores Ctrl-C): it stays so
        if (sigaction(sigs[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN) signal(sigs[i], msg ? interrupted : SIG_DFL);
    }
}

void aha_set_threads(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}
