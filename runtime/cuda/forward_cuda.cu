// The forward pass on the device: runtime/forward.c's layer loop, every
// projection and the LM head a product with the matrix in its stored type
// (aha_matmul_w_cuda: decoded tiles into cuBLAS), and the kernels of
// kernels/cuda/ for the rest. Semantics are aha_forward_probe's (see gpu.h);
// this file mirrors forward.c step by step, so read the two side by side.
// Mixture-of-experts blocks are the CPU's only (model_cuda.cu refuses them).
// With f16 / bf16 products attention runs on the tensor cores
// (kernels/cuda/attention_mma.cu) from f16 / bf16 copies of Q and the KV
// cache; the dependency pass keeps f32. Natively local layers (Gemma,
// Mistral, Qwen2 windows) attend within their window in every mode: routed
// runs route the global layers only, as forward.c.
//
// Asynchrony: a call's outputs are copied into one of two pinned host slots
// at its end and an event marks the slot; nothing in a call waits for the
// device, so the host works on chunk b while the device runs chunk b + 1.
// Host-decided routers (global, local, random, heads) are evaluated at submit
// into the slot and copied up with the call. The residual adds of pre-norm
// blocks ride on the output GEMMs (beta = 1). Not here: cublasLt's bias
// epilogue (qwen2's q/k/v biases stay one elementwise pass), CUDA graphs for
// decode.
#include <math.h>

#include "gpu_impl.cuh"

// One call's host side: staged inputs and copied-back outputs (pinned).
typedef struct {
    cudaEvent_t done;        // recorded after the call's last copy
    int busy;                // submitted, not yet collected
    int n, n_eps, n_werr;    // of the call in the slot
    int n_mass;              // its windows of the mass split (0: none)
    int32_t *tokens;         // [B] staged for the upload
    int32_t *targets;        // [B]
    uint8_t *gate_in;        // [L, B, H] host-decided gates
    uint8_t *gate;           // [L, B, H] the decisions attention followed
    float *router;           // [B, L, H]
    float *logits;           // [vocab] the last token's
    float *nll, *kl;         // [B]
    unsigned long long *flops;// [2] executed, full (routed: counted on the device)
    aha_attn_flops host_flops;// full attention: counted on the host
    uint32_t *dep;           // [L, eps_cap, B, H]
    float *werr;             // [L, werr_cap, B, H]
    float *mass;             // mass split: far [L, n_mass, n, H], then sinks [L, n, H]
    int eps_cap, werr_cap, mass_cap; // mass_cap: planes of [L, B, H] (n_mass + 1)
    unsigned long long *bad; // [1] the call's first NaN or Inf (aha_nonfinite_cuda), all ones: none
    int pos0, first;         // the call's first position; its first row of logits
} slot;

struct aha_gpu {
    aha_gpu_model *w;
    int max_ctx, max_batch;  // tokens of cache, most tokens per call (B)
    int n_past;              // tokens submitted into the cache
    int rope_long;           // longrope: this context uses the long factors (aha_gpu_reset)
    int rows;                // logits rows the last submitted call left on the device
    float *k_cache, *v_cache;// [L, max_ctx, KV*D] after norm and RoPE
    void *k16, *v16;         // [L, max_ctx, KV*D] f16 / bf16 copies: --dtype f16 / bf16 runs
                             // attention on the tensor cores (NULL: f32, or a head_dim without them)
    void *q16;               // [B, H*D] the queries for it
    float *x, *xn;           // [B, dim] residual stream, normed input / block output
    float *q;                // [B, H*D (+H)] queries (+ router logits)
    float *att;              // [B, H*D]
    float *ffn_gate, *ffn_up;// [B, ffn]
    float *logits;           // [B, vocab]
    float *router;           // [B, L, H]
    float *row_max, *row_sum;// [B, H] softmax statistics for the dependency pass
    void *act16;             // [B, max(dim, ffn, H*D)] f16/bf16 GEMM input
    long act16_elems;        // values act16 holds
    int32_t *tokens, *targets;// [B]
    uint8_t *gate;           // [L, B, H]
    uint32_t *dep1;          // [B, H] oracle routing's d_eps
    uint32_t *dep;           // [L, eps_cap, B, H]
    float *werr;             // [L, werr_cap, B, H]
    float *mass;             // as slot's mass, on the device
    int eps_cap, werr_cap, mass_cap;
    float *nll, *kl;         // [B]
    unsigned long long *bad; // [1] where a NaN or Inf first appeared in the call (forward.h's stages)
    aha_route_ws ws;         // routed attention's index lists and FLOP counters
    slot slots[2];
    int next, oldest;        // slot of the next submit, of the oldest uncollected call
    float *h_logits, *h_router; // aha_gpu_forward_probe's host copies
    dev_allocs mem;
};

static void slot_free(slot *s) {
    if (s->done) cudaEventDestroy(s->done);
    void *pinned[] = {s->tokens, s->targets, s->gate_in, s->gate, s->router, s->logits, s->nll,
                      s->kl, s->flops, s->dep, s->werr, s->mass, s->bad};
    for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++)
        if (pinned[i]) cudaFreeHost(pinned[i]);
    memset(s, 0, sizeof *s);
}

static void *pinned(size_t bytes) {
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError(); // recorded by the runtime: not the next launch check's error
        aha_err("cannot pin %zu bytes of host memory", bytes);
        return NULL;
    }
    memset(p, 0, bytes ? bytes : 1);
    return p;
}

static int slot_init(slot *s, const aha_config *c, int B) {
    const size_t LBH = (size_t)c->n_layers * B * c->n_heads;
    if (cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming) != cudaSuccess) {
        aha_err("cannot create a CUDA event");
        return -1;
    }
    s->tokens = (int32_t *)pinned(sizeof(int32_t) * B);
    s->targets = (int32_t *)pinned(sizeof(int32_t) * B);
    s->gate_in = (uint8_t *)pinned(LBH);
    s->gate = (uint8_t *)pinned(LBH);
    s->router = (float *)pinned(sizeof(float) * LBH);
    s->logits = (float *)pinned(sizeof(float) * c->vocab);
    s->nll = (float *)pinned(sizeof(float) * B);
    s->kl = (float *)pinned(sizeof(float) * B);
    s->flops = (unsigned long long *)pinned(2 * sizeof(unsigned long long));
    s->bad = (unsigned long long *)pinned(sizeof(unsigned long long));
    return s->tokens && s->targets && s->gate_in && s->gate && s->router && s->logits && s->nll &&
                   s->kl && s->flops && s->bad
               ? 0
               : -1;
}

// *p with room for want items of size bytes (*cap counts them), on the
// device or pinned on the host; contents are not kept. A failure leaves no
// buffer and no capacity, so a later smaller request allocates again.
static int grow(void **p, int *cap, int want, size_t size, int host) {
    if (want <= *cap) return 0;
    if (*p) host ? cudaFreeHost(*p) : cudaFree(*p);
    *p = NULL;
    *cap = 0;
    if (host) *p = pinned(size * want);
    else if (cudaMalloc(p, size * want) != cudaSuccess) {
        (void)cudaGetLastError(); // recorded by the runtime: not the next launch check's error
        aha_err("out of device memory (%zu bytes more)", size * want);
    }
    if (!*p) return -1;
    *cap = want;
    return 0;
}

// Room for n_eps thresholds, n_werr windows and n_mass planes of the mass
// split, on the device and in the free slot s: grown on first use (only
// observing runs need it).
static int reserve_probe(aha_gpu *g, slot *s, int n_eps, int n_werr, int n_mass) {
    const aha_config *c = &g->w->m->cfg;
    const size_t LBH = (size_t)c->n_layers * g->max_batch * c->n_heads;
    if (n_eps > g->eps_cap || n_werr > g->werr_cap || n_mass > g->mass_cap) // the device buffers may be in use
        CU(cudaStreamSynchronize(g->w->st));
    return grow((void **)&g->dep, &g->eps_cap, n_eps, sizeof(uint32_t) * LBH, 0) ||
                   grow((void **)&g->werr, &g->werr_cap, n_werr, sizeof(float) * LBH, 0) ||
                   grow((void **)&s->dep, &s->eps_cap, n_eps, sizeof(uint32_t) * LBH, 1) ||
                   grow((void **)&s->werr, &s->werr_cap, n_werr, sizeof(float) * LBH, 1) ||
                   grow((void **)&g->mass, &g->mass_cap, n_mass, sizeof(float) * LBH, 0) ||
                   grow((void **)&s->mass, &s->mass_cap, n_mass, sizeof(float) * LBH, 1)
               ? -1
               : 0;
}

extern "C" void aha_gpu_free(aha_gpu *g) {
    if (!g) return;
    cudaStreamSynchronize(g->w->st);
    dev_free_all(&g->mem);
    cudaFree(g->dep);
    cudaFree(g->werr);
    cudaFree(g->mass);
    aha_route_ws_free(&g->ws);
    slot_free(&g->slots[0]);
    slot_free(&g->slots[1]);
    free(g->h_logits);
    free(g->h_router);
    free(g);
}

extern "C" aha_gpu *aha_gpu_init(aha_gpu_model *w, int max_ctx, int max_batch) {
    const aha_config *c = &w->m->cfg;
    if (max_ctx <= 0 || max_batch <= 0) {
        aha_err("context (%d) and batch (%d) must be positive", max_ctx, max_batch);
        return NULL;
    }
    aha_gpu *g = (aha_gpu *)calloc(1, sizeof *g);
    if (!g) return NULL;
    g->w = w;
    g->max_ctx = max_ctx;
    g->max_batch = max_batch < max_ctx ? max_batch : max_ctx;
    const size_t B = g->max_batch, L = c->n_layers, H = c->n_heads, D = c->head_dim;
    const size_t hd = H * D, kvd = (size_t)c->n_kv_heads * D, dim = c->dim, ffn = c->ffn_dim;
    const size_t qw = hd + (c->aha ? H : 0);
    size_t widest = dim > ffn ? dim : ffn;
    widest = widest > hd ? widest : hd;
    dev_allocs *a = &g->mem;
    a->st = w->st;
    g->k_cache = (float *)dev_alloc(a, sizeof(float) * L * max_ctx * kvd);
    g->v_cache = (float *)dev_alloc(a, sizeof(float) * L * max_ctx * kvd);
    g->x = (float *)dev_alloc(a, sizeof(float) * B * dim);
    g->xn = (float *)dev_alloc(a, sizeof(float) * B * dim);
    g->q = (float *)dev_alloc(a, sizeof(float) * B * qw);
    g->att = (float *)dev_alloc(a, sizeof(float) * B * hd);
    g->ffn_gate = (float *)dev_alloc(a, sizeof(float) * B * ffn);
    g->ffn_up = (float *)dev_alloc(a, sizeof(float) * B * ffn);
    g->logits = (float *)dev_alloc(a, sizeof(float) * B * c->vocab);
    g->router = (float *)dev_alloc(a, sizeof(float) * B * L * H);
    g->row_max = (float *)dev_alloc(a, sizeof(float) * B * H);
    g->row_sum = (float *)dev_alloc(a, sizeof(float) * B * H);
    g->act16 = dev_alloc(a, 2 * B * widest);
    g->act16_elems = (long)(B * widest);
    g->tokens = (int32_t *)dev_alloc(a, sizeof(int32_t) * B);
    g->targets = (int32_t *)dev_alloc(a, sizeof(int32_t) * B);
    g->gate = (uint8_t *)dev_alloc(a, L * B * H);
    g->dep1 = (uint32_t *)dev_alloc(a, sizeof(uint32_t) * B * H);
    g->nll = (float *)dev_alloc(a, sizeof(float) * B);
    g->kl = (float *)dev_alloc(a, sizeof(float) * B);
    g->bad = (unsigned long long *)dev_alloc(a, sizeof(unsigned long long));
    const int tc = w->dt != AHA_GPU_F32 && aha_attention_mma_supports((int)D);
    if (tc) {
        g->k16 = dev_alloc(a, 2 * L * max_ctx * kvd);
        g->v16 = dev_alloc(a, 2 * L * max_ctx * kvd);
        g->q16 = dev_alloc(a, 2 * B * hd);
    }
    int ok = g->k_cache && g->v_cache && g->x && g->xn && g->q && g->att && g->ffn_gate &&
             g->ffn_up && g->logits && g->router && g->row_max && g->row_sum && g->act16 &&
             g->tokens && g->targets && g->gate && g->dep1 && g->nll && g->kl && g->bad &&
             (!tc || (g->k16 && g->v16 && g->q16));
    ok = ok && aha_route_ws_alloc(&g->ws, (int)B, (int)H) == 0;
    ok = ok && slot_init(&g->slots[0], c, (int)B) == 0 && slot_init(&g->slots[1], c, (int)B) == 0;
    if (!ok) {
        char why[512]; // the lower layer's message (aha_err must not read its own buffer)
        snprintf(why, sizeof why, "%s", aha_errmsg());
        (void)cudaGetLastError(); // the runtime recorded the failed allocation: not the next launch check's error
        aha_err("--device cuda: cannot allocate a state for context %d, batch %d (%s)", max_ctx, max_batch, why);
        aha_gpu_free(g);
        return NULL;
    }
    return g;
}

extern "C" void aha_gpu_reset(aha_gpu *g, int len) {
    g->n_past = 0;
    g->rope_long = aha_rope_long(g->w->m, len);
}
extern "C" int aha_gpu_n_past(const aha_gpu *g) { return g->n_past; }
extern "C" const float *aha_gpu_logits(const aha_gpu *g) { return g->h_logits; }
extern "C" const float *aha_gpu_router(const aha_gpu *g) { return g->h_router; }

// y[n, w->rows] (+)= x[n, w->cols] w^T (+ bias), as aha_matmul_w; y row
// stride w->rows. add = 1 accumulates into y (cuBLAS's beta = 1).
static int matmul(aha_gpu *g, float *y, const float *x, const aha_weight *w, const float *bias, int n,
                  int add = 0) {
    const aha_gpu_model *M = g->w;
    const aha_mm_cuda mm = {M->blas, gpu_op(M->dt), M->tile, M->tile_elems, g->act16, g->act16_elems};
    return aha_matmul_w_cuda(y, x, w, bias, n, add, &mm, M->st);
}

// Pre-norm: xn = norm(x).
static int pre_norm(aha_gpu *g, int n, const float *w) {
    const aha_config *c = &g->w->m->cfg;
    return aha_rmsnorm_cuda(g->xn, g->x, w, n, c->dim, 1, c->dim, c->norm_eps, g->w->st);
}

// A block's output projection into the residual stream: x += in @ w^T, by
// the GEMM itself (beta = 1), or x += norm(in @ w^T) with a post-norm.
static int project_out(aha_gpu *g, int n, const float *in, const aha_weight *w, const float *post) {
    const aha_config *c = &g->w->m->cfg;
    cudaStream_t st = g->w->st;
    if (!post) return matmul(g, g->x, in, w, NULL, n, 1);
    OK(matmul(g, g->xn, in, w, NULL, n));
    OK(aha_rmsnorm_cuda(g->xn, g->xn, post, n, c->dim, 1, c->dim, c->norm_eps, st));
    return aha_add_cuda(g->x, g->xn, (long)n * c->dim, st);
}

static int attention_block(aha_gpu *g, int l, int n, const aha_probe *probe, slot *s) {
    const aha_config *c = &g->w->m->cfg;
    const dev_layer *L = &g->w->layers[l];
    cudaStream_t st = g->w->st;
    const int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim;
    const int hd = H * D, kvd = KV * D, qw = hd + (c->aha ? H : 0), p0 = g->n_past;
    float *K = g->k_cache + (size_t)l * g->max_ctx * kvd, *V = g->v_cache + (size_t)l * g->max_ctx * kvd;
    float *kc = K + (size_t)p0 * kvd, *vc = V + (size_t)p0 * kvd;
    OK(matmul(g, g->q, g->xn, &L->wq, NULL, n));
    OK(matmul(g, kc, g->xn, &L->wk, L->bk, n));
    OK(matmul(g, vc, g->xn, &L->wv, L->bv, n));
    if (L->br) OK(aha_add_bias_cuda(g->q + hd, L->br, n, H, qw, st)); // a fitted router's bias
    if (c->aha) // raw router rows (+ that bias), before q's bias, norm or RoPE: router[t, l, :]
        CU(cudaMemcpy2DAsync(g->router + (size_t)l * H, sizeof(float) * c->n_layers * H, g->q + hd,
                             sizeof(float) * qw, sizeof(float) * H, n, cudaMemcpyDeviceToDevice, st));
    if (L->bq) OK(aha_add_bias_cuda(g->q, L->bq, n, hd, qw, st));
    if (c->qk_norm == AHA_QK_NORM_FULL) {
        OK(aha_rmsnorm_cuda(g->q, g->q, L->q_norm, n, qw, 1, hd, c->norm_eps, st));
        OK(aha_rmsnorm_cuda(kc, kc, L->k_norm, n, kvd, 1, kvd, c->norm_eps, st));
    } else if (c->qk_norm == AHA_QK_NORM_HEAD) {
        OK(aha_rmsnorm_cuda(g->q, g->q, L->q_norm, n, qw, H, D, c->norm_eps, st));
        OK(aha_rmsnorm_cuda(kc, kc, L->k_norm, n, kvd, KV, D, c->norm_eps, st));
    }
    const int adjacent = c->rope_pairing == AHA_ROPE_ADJACENT;
    const float *inv = g->rope_long && L->inv_freq_long ? L->inv_freq_long : L->inv_freq;
    if (inv) { // NULL: a NoPE layer
        OK(aha_rope_cuda(g->q, n, qw, H, D, p0, inv, adjacent, st));
        OK(aha_rope_cuda(kc, n, kvd, KV, D, p0, inv, adjacent, st));
    }
    const aha_layer *HL = &g->w->m->layers[l];
    const int window = HL->window;
    aha_attn_shape shape = {H, KV, D, qw, kvd, HL->scale, c->attn_softcap, window, 0},
                   s16 = {H, KV, D, hd, kvd, HL->scale, c->attn_softcap, window, 0};
    const size_t nH = (size_t)n * H;
    // Tensor cores (--dtype f16 / bf16): Q and the new cache rows rounded to
    // the weights' type. The dependency pass (and the oracle's) stays in f32
    // on the f32 cache; every attention output comes from the mma kernel, so
    // the full and routed runs of a sweep differ by routing alone.
    const int tc = g->k16 != NULL, bf16 = g->w->dt == AHA_GPU_BF16;
    const size_t off16 = 2 * (size_t)l * g->max_ctx * kvd;
    void *K16 = tc ? (char *)g->k16 + off16 : NULL, *V16 = tc ? (char *)g->v16 + off16 : NULL;
    if (tc) {
        OK(aha_f32_to_half_cuda(g->q16, hd, g->q, qw, n, hd, bf16, st));
        OK(aha_f32_to_half_cuda((char *)K16 + 2 * (size_t)p0 * kvd, kvd, kc, kvd, n, kvd, bf16, st));
        OK(aha_f32_to_half_cuda((char *)V16 + 2 * (size_t)p0 * kvd, kvd, vc, kvd, n, kvd, bf16, st));
    }
    // Routed policies act on the global layers only: a natively local layer
    // runs its own window in every mode and its gates are 0 (local).
    if (!probe || !probe->router || window) {
        const int observe = probe && !probe->router && probe->n_eps; // as forward.c: no eps, no pass
        if (observe || !tc) // with tc: the f32 statistics alone (no PV)
            OK(aha_attention_cuda(tc ? NULL : g->att, g->q, K, V, &shape, n, p0, observe ? g->row_max : NULL,
                                  observe ? g->row_sum : NULL, st));
        if (observe) {
            const size_t far = (size_t)l * s->n_mass * nH, sink = (size_t)s->n_mass * g->w->m->cfg.n_layers * nH + l * nH;
            aha_observe obs = {.eps = probe->eps, .n_eps = probe->n_eps, .windows = probe->werr_windows,
                               .n_windows = s->n_werr, .sinks = probe->sinks,
                               .dep = g->dep + (size_t)l * s->n_eps * nH, .werr = g->werr + (size_t)l * s->n_werr * nH,
                               .mass_windows = probe->mass_windows, .n_mass = s->n_mass,
                               .far = s->n_mass ? g->mass + far : NULL, .sink = s->n_mass ? g->mass + sink : NULL};
            OK(aha_dependency_cuda(g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, &obs, st));
        }
        if (tc) OK(aha_attention_mma_cuda(g->att, g->q16, K16, V16, &s16, n, p0, bf16, st));
        double f = aha_attention_full_flops(&shape, n, p0);
        s->host_flops.executed += f;
        s->host_flops.full += f;
        if (probe && probe->router) CU(cudaMemsetAsync(g->gate + (size_t)l * nH, 0, nH, st));
    } else {
        const aha_router *r = probe->router;
        uint8_t *gate = g->gate + (size_t)l * nH;
        if (r->kind == AHA_ROUTER_ORACLE) { // the full probabilities decide (their statistics alone)
            OK(aha_attention_cuda(NULL, g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, st));
            aha_observe obs = {.eps = &r->eps, .n_eps = 1, .sinks = probe->sinks, .dep = g->dep1};
            OK(aha_dependency_cuda(g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, &obs, st));
            OK(aha_gate_oracle_cuda(gate, g->dep1, n, H, probe->window, st));
        } else if (r->kind == AHA_ROUTER_LEARNED) {
            OK(aha_gate_learned_cuda(gate, g->q + hd, qw, n, H, r->tau, st));
        } // else uploaded at submit
        if (tc)
            OK(aha_attention_routed_mma_cuda(g->att, g->q16, K16, V16, &s16, n, p0, bf16, probe->window,
                                             probe->sinks, gate, &g->ws, st));
        else
            OK(aha_attention_routed_cuda(g->att, g->q, K, V, &shape, n, p0, probe->window, probe->sinks,
                                         gate, &g->ws, st));
    }
    OK(aha_nonfinite_cuda(g->att, (long)n * hd, 1 + 3 * l, g->bad, st));
    return project_out(g, n, g->att, &L->wo, L->post_attn_norm);
}

static int mlp_block(aha_gpu *g, int l, int n) {
    const aha_config *c = &g->w->m->cfg;
    const dev_layer *L = &g->w->layers[l];
    OK(matmul(g, g->ffn_gate, g->xn, &L->w_gate, NULL, n));
    OK(matmul(g, g->ffn_up, g->xn, &L->w_up, NULL, n));
    if (c->ffn_gelu) OK(aha_geglu_cuda(g->ffn_gate, g->ffn_up, (long)n * c->ffn_dim, g->w->st));
    else OK(aha_swiglu_cuda(g->ffn_gate, g->ffn_up, (long)n * c->ffn_dim, g->w->st));
    return project_out(g, n, g->ffn_gate, &L->w_down, L->post_ffn_norm);
}

static int check_call(const aha_gpu *g, const int32_t *tokens, int n, const aha_call *call,
                      const aha_gpu *ref) {
    const aha_config *c = &g->w->m->cfg;
    const aha_probe *p = call->probe;
    if (n < 1 || n > g->max_batch || g->n_past + n > g->max_ctx) {
        aha_err("%d tokens do not fit (batch %d, %d of %d context positions used)", n, g->max_batch,
                g->n_past, g->max_ctx);
        return -1;
    }
    if (c->rope_scaling == AHA_SCALING_LONGROPE && !g->rope_long && g->n_past + n > c->rope_orig_ctx) {
        aha_err("longrope: the context grew past %d tokens after it began with the short factors (HF recomputes "
                "it with the long ones): declare its length when it begins (aha_gpu_reset)",
                c->rope_orig_ctx);
        return -1;
    }
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->vocab || (call->targets && call->targets[t] >= c->vocab)) {
            aha_err("token id %d out of range (vocab %d)", tokens[t] < 0 || tokens[t] >= c->vocab
                                                               ? tokens[t] : call->targets[t], c->vocab);
            return -1;
        }
    if (p && (p->n_eps > AHA_MAX_EPS || p->n_werr > AHA_MAX_WINDOWS || p->n_eps < 0 || p->n_werr < 0 ||
              p->n_mass > AHA_MAX_WINDOWS || p->n_mass < 0)) {
        aha_err("at most %d eps and %d windows per pass", AHA_MAX_EPS, AHA_MAX_WINDOWS);
        return -1;
    }
    if (ref && (ref->w != g->w || ref->rows != n || !call->targets)) {
        aha_err("KL reference: not a state of this model, or its last call was not the same %d "
                "scored tokens", n);
        return -1;
    }
    if (g->slots[g->next].busy) {
        aha_err("two calls already in flight on this state: collect one first");
        return -1;
    }
    return 0;
}

extern "C" int aha_gpu_submit(aha_gpu *g, const int32_t *tokens, int n, const aha_call *call,
                              const aha_gpu *ref) {
    static const aha_call plain = {NULL, 0, 0, NULL};
    if (!call) call = &plain;
    OK(check_call(g, tokens, n, call, ref));
    const aha_config *c = &g->w->m->cfg;
    const aha_probe *p = call->probe;
    const aha_router *r = p ? p->router : NULL;
    const int observe = p && !r && p->n_eps > 0;
    cudaStream_t st = g->w->st;
    const size_t L = c->n_layers, H = c->n_heads, nH = (size_t)n * H, V = c->vocab;
    slot *s = &g->slots[g->next];
    OK(reserve_probe(g, s, observe ? p->n_eps : 0, observe ? p->n_werr : 0,
                     observe && p->n_mass ? p->n_mass + 1 : 0));
    s->n = n;
    s->n_eps = observe ? p->n_eps : 0;
    s->n_werr = observe ? p->n_werr : 0;
    s->n_mass = observe ? p->n_mass : 0;
    s->host_flops = (aha_attn_flops){0, 0};
    memcpy(s->tokens, tokens, sizeof(int32_t) * n);
    CU(cudaMemcpyAsync(g->tokens, s->tokens, sizeof(int32_t) * n, cudaMemcpyHostToDevice, st));
    if (r && r->kind != AHA_ROUTER_ORACLE && r->kind != AHA_ROUTER_LEARNED) {
        for (size_t l = 0; l < L; l++) // a natively local layer's gates: 0, on the device
            if (!g->w->m->layers[l].window)
                aha_router_decide(r, (int)l, n, g->n_past, p->doc, p->window, NULL, 0, NULL, NULL,
                                  s->gate_in + l * nH);
        CU(cudaMemcpyAsync(g->gate, s->gate_in, L * nH, cudaMemcpyHostToDevice, st));
    }
    // forward.h's stages, each checked for a NaN or Inf on the way (read at collect)
    CU(cudaMemsetAsync(g->bad, 0xff, sizeof(unsigned long long), st));
    const long nd = (long)n * c->dim;
    OK(aha_embed_cuda(g->x, &g->w->tok_emb, g->tokens, n, c->embed_scale, st));
    OK(aha_nonfinite_cuda(g->x, nd, 0, g->bad, st));
    const size_t row = sizeof(float) * c->dim;
    for (size_t l = 0; l < L; l++) {
        const dev_layer *DL = &g->w->layers[l];
        if (DL->attn_norm) OK(pre_norm(g, n, DL->attn_norm));
        else CU(cudaMemcpyAsync(g->xn, g->x, row * n, cudaMemcpyDeviceToDevice, st));
        OK(attention_block(g, (int)l, n, p, s));
        OK(aha_nonfinite_cuda(g->x, nd, 2 + 3 * (unsigned)l, g->bad, st));
        if (DL->ffn_norm) OK(pre_norm(g, n, DL->ffn_norm));
        else CU(cudaMemcpyAsync(g->xn, g->x, row * n, cudaMemcpyDeviceToDevice, st));
        OK(mlp_block(g, (int)l, n));
        OK(aha_nonfinite_cuda(g->x, nd, 3 + 3 * (unsigned)l, g->bad, st));
    }
    // Every row's logits when scoring or asked to, else the last token's only.
    const int rows = call->targets || call->all_rows ? n : 1, first = n - rows;
    OK(aha_rmsnorm_cuda(g->xn, g->x + (size_t)first * c->dim, g->w->out_norm, rows, c->dim, 1, c->dim,
                        c->norm_eps, st));
    OK(matmul(g, g->logits, g->xn, &g->w->lm_head, NULL, rows));
    if (c->final_softcap) OK(aha_softcap_cuda(g->logits, (long)rows * V, c->final_softcap, st));
    OK(aha_nonfinite_cuda(g->logits, (long)rows * V, AHA_STAGE_LOGITS(c->n_layers), g->bad, st));
    CU(cudaMemcpyAsync(s->bad, g->bad, sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
    s->pos0 = g->n_past;
    s->first = first;
    g->rows = rows;
    if (call->last_logits)
        CU(cudaMemcpyAsync(s->logits, g->logits + (size_t)(rows - 1) * V, sizeof(float) * V,
                           cudaMemcpyDeviceToHost, st));
    if (call->targets) {
        memcpy(s->targets, call->targets, sizeof(int32_t) * n);
        CU(cudaMemcpyAsync(g->targets, s->targets, sizeof(int32_t) * n, cudaMemcpyHostToDevice, st));
        OK(aha_score_cuda(g->nll, g->kl, g->logits, ref ? ref->logits : NULL, g->targets, n, (int)V, st));
        CU(cudaMemcpyAsync(s->nll, g->nll, sizeof(float) * n, cudaMemcpyDeviceToHost, st));
        if (ref) CU(cudaMemcpyAsync(s->kl, g->kl, sizeof(float) * n, cudaMemcpyDeviceToHost, st));
        else memset(s->kl, 0, sizeof(float) * n);
    }
    if (c->aha)
        CU(cudaMemcpyAsync(s->router, g->router, sizeof(float) * nH * L, cudaMemcpyDeviceToHost, st));
    if (s->n_eps)
        CU(cudaMemcpyAsync(s->dep, g->dep, sizeof(uint32_t) * s->n_eps * nH * L, cudaMemcpyDeviceToHost, st));
    if (s->n_werr)
        CU(cudaMemcpyAsync(s->werr, g->werr, sizeof(float) * s->n_werr * nH * L, cudaMemcpyDeviceToHost, st));
    if (s->n_mass)
        CU(cudaMemcpyAsync(s->mass, g->mass, sizeof(float) * (s->n_mass + 1) * nH * L, cudaMemcpyDeviceToHost, st));
    if (r) {
        CU(cudaMemcpyAsync(s->gate, g->gate, L * nH, cudaMemcpyDeviceToHost, st));
        CU(cudaMemcpyAsync(s->flops, g->ws.flops, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
        CU(cudaMemsetAsync(g->ws.flops, 0, 2 * sizeof(unsigned long long), st));
    }
    CU(cudaEventRecord(s->done, st));
    s->busy = 1 + (r != NULL); // 2: flops from the device
    g->next ^= 1;
    g->n_past += n;
    return 0;
}

extern "C" int aha_gpu_collect(aha_gpu *g, aha_call_out *out) {
    slot *s = &g->slots[g->oldest];
    if (!s->busy) {
        aha_err("nothing submitted to collect");
        return -1;
    }
    CU(cudaEventSynchronize(s->done));
    CU(cudaGetLastError());
    if (*s->bad != ~0ull) { // forward.h's stage, index and kind of the first NaN or Inf
        const int stage = (int)(*s->bad >> 40);
        s->busy = 0;
        g->oldest ^= 1;
        return aha_nonfinite_err(g->w->m, stage, (long)(*s->bad >> 1 & ((1ull << 39) - 1)), (int)(*s->bad & 1),
                                 s->pos0 + (stage == AHA_STAGE_LOGITS(g->w->m->cfg.n_layers) ? s->first : 0));
    }
    out->n = s->n;
    out->dep = s->dep;
    out->werr = s->werr;
    out->mass_far = s->n_mass ? s->mass : NULL;
    out->mass_sink = s->n_mass ? s->mass + (size_t)s->n_mass * s->n * g->w->m->cfg.n_layers * g->w->m->cfg.n_heads : NULL;
    out->gate = s->gate;
    out->router = s->router;
    out->logits = s->logits;
    out->nll = s->nll;
    out->kl = s->kl;
    out->flops = s->host_flops;
    if (s->busy == 2) {
        out->flops.executed += (double)s->flops[0];
        out->flops.full += (double)s->flops[1];
    }
    s->busy = 0;
    g->oldest ^= 1;
    return 0;
}

extern "C" int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits,
                                     aha_probe *probe) {
    const aha_config *c = &g->w->m->cfg;
    const size_t L = c->n_layers, H = c->n_heads, nH = (size_t)n * H, V = c->vocab;
    if (!g->h_logits) g->h_logits = (float *)calloc((size_t)g->max_batch * V, sizeof(float));
    if (!g->h_router) g->h_router = (float *)calloc((size_t)g->max_batch * L * H, sizeof(float));
    if (!g->h_logits || !g->h_router) {
        aha_err("out of memory for the logits");
        return -1;
    }
    // collect takes the oldest call: with another in flight it would be that one's
    if (g->slots[0].busy || g->slots[1].busy) {
        aha_err("aha_gpu_forward_probe: a submitted call is not collected yet: collect it first");
        return -1;
    }
    aha_call call = {probe, !all_logits, all_logits, NULL};
    aha_call_out out;
    OK(aha_gpu_submit(g, tokens, n, &call, NULL));
    OK(aha_gpu_collect(g, &out));
    if (all_logits) { // on the state's stream (not the legacy default one), then wait
        CU(cudaMemcpyAsync(g->h_logits, g->logits, sizeof(float) * nH / H * V, cudaMemcpyDeviceToHost, g->w->st));
        CU(cudaStreamSynchronize(g->w->st));
    } else {
        memcpy(g->h_logits, out.logits, sizeof(float) * V);
    }
    if (c->aha) memcpy(g->h_router, out.router, sizeof(float) * nH * L);
    if (!probe) return 0;
    if (probe->router) memcpy(probe->gate, out.gate, L * nH);
    else if (probe->n_eps) memcpy(probe->dep, out.dep, sizeof(uint32_t) * probe->n_eps * nH * L);
    if (!probe->router && probe->n_eps && probe->werr)
        memcpy(probe->werr, out.werr, sizeof(float) * probe->n_werr * nH * L);
    if (!probe->router && probe->n_eps && probe->n_mass) {
        memcpy(probe->mass_far, out.mass_far, sizeof(float) * probe->n_mass * nH * L);
        memcpy(probe->mass_sink, out.mass_sink, sizeof(float) * nH * L);
    }
    probe->flops.executed += out.flops.executed;
    probe->flops.full += out.flops.full;
    return 0;
}
