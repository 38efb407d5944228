// The forward pass on the device: runtime/forward.c's layer loop with cuBLAS
// for every projection and the LM head, and the kernels of kernels/cuda/ for
// the rest. Semantics are aha_forward_probe's (see gpu.h); this file mirrors
// forward.c step by step, so read the two side by side.
//
// Not yet here (issue 5): copying trace outputs back asynchronously while
// the next chunk runs (this version synchronises at the end of each call),
// cublasLt epilogues, CUDA graphs for decode.
#ifndef AHA_CUDA_EMU
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "err.h"
#include "gpu.h"
}
#include "cuda/aha_cuda.h"
#include "cuda/common.cuh"

// Errors inside a forward call: report with aha_err and return -1 rather
// than exit, so that the CLI can print one line.
#define CU(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            aha_err("CUDA error at %s:%d: %s%s%s", __FILE__, __LINE__, cudaGetErrorString(e_), \
                    *aha_cuda_hint(e_) ? ": " : "", aha_cuda_hint(e_));                 \
            return -1;                                                                  \
        }                                                                               \
    } while (0)
#define CUB(call)                                                                       \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
            aha_err("cuBLAS error %d at %s:%d: %s", (int)s_, __FILE__, __LINE__,         \
                    aha_cublas_hint(s_));                                               \
            return -1;                                                                  \
        }                                                                               \
    } while (0)
#define OK(call)                                                                        \
    do {                                                                                \
        if ((call) != 0) return -1;                                                     \
    } while (0)

typedef struct {
    const void *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down; // dtype
    const float *attn_norm, *bq, *bk, *bv, *q_norm, *k_norm, *post_attn_norm, *ffn_norm,
        *post_ffn_norm; // f32
} dev_layer;

struct aha_gpu {
    const aha_model *m;
    aha_gpu_dtype dt;
    int max_ctx, max_batch, n_past;
    cudaStream_t st;
    cublasHandle_t blas;
    dev_layer *layers;
    const void *tok_emb_f32; // f32 (the gather source)
    const void *lm_head;     // dtype
    const float *out_norm, *inv_freq;
    // activations (f32) and caches
    float *k_cache, *v_cache, *x, *xn, *q, *att, *ffn_gate, *ffn_up, *logits, *router;
    float *row_max, *row_sum;
    void *act16;             // f16/bf16 copy of a GEMM input
    int32_t *tokens;
    uint8_t *gate;           // [n, H]
    uint32_t *dep, *dep1;    // [n_eps(<=32), n, H], [n, H] (oracle)
    float *werr;             // [n_windows(<=32), n, H]
    aha_route_ws ws;
    float *h_logits, *h_router; // host mirrors
    uint8_t *h_gate;
    void **allocs;           // every cudaMalloc, for aha_gpu_free
    int n_allocs, cap_allocs;
};

static void *dmalloc(aha_gpu *g, size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        aha_err("out of device memory (%zu bytes more)", bytes);
        return NULL;
    }
    if (g->n_allocs == g->cap_allocs) {
        g->cap_allocs = g->cap_allocs ? 2 * g->cap_allocs : 64;
        g->allocs = (void **)realloc(g->allocs, sizeof(void *) * g->cap_allocs);
    }
    g->allocs[g->n_allocs++] = p;
    cudaMemset(p, 0, bytes ? bytes : 1);
    return p;
}

// A host float32 tensor on the device as dtype (NULL stays NULL).
static const void *upload(aha_gpu *g, const float *h, size_t n, aha_gpu_dtype dt, float *stage) {
    if (!h) return NULL;
    const size_t es = dt == AHA_GPU_F32 ? 4 : 2;
    void *d = dmalloc(g, n * es);
    if (!d) return NULL;
    if (dt == AHA_GPU_F32) {
        if (cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice) != cudaSuccess) return NULL;
        return d;
    }
    // Through a device staging buffer in slices of 64M values.
    const size_t slice = (size_t)1 << 26;
    for (size_t off = 0; off < n; off += slice) {
        size_t c = n - off < slice ? n - off : slice;
        if (cudaMemcpy(stage, h + off, c * 4, cudaMemcpyHostToDevice) != cudaSuccess) return NULL;
        if (dt == AHA_GPU_F16) aha_f32_to_f16_cuda((char *)d + off * 2, stage, (long)c, 0);
        else aha_f32_to_bf16_cuda((char *)d + off * 2, stage, (long)c, 0);
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return NULL;
    return d;
}

extern "C" int aha_gpu_available(char *why, size_t why_len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (count == 0) {
        snprintf(why, why_len, "cudaGetDeviceCount returned 0");
        return 0;
    }
    snprintf(why, why_len, "%d device(s)", count);
    return 1;
}

extern "C" int aha_gpu_dtype_parse(const char *s, aha_gpu_dtype *dt) {
    if (!strcmp(s, "f32") || !strcmp(s, "float32")) *dt = AHA_GPU_F32;
    else if (!strcmp(s, "f16") || !strcmp(s, "float16")) *dt = AHA_GPU_F16;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *dt = AHA_GPU_BF16;
    else {
        aha_err("unknown device dtype '%s' (f32, f16, bf16)", s);
        return -1;
    }
    return 0;
}

extern "C" const char *aha_gpu_dtype_name(aha_gpu_dtype dt) {
    return dt == AHA_GPU_F32 ? "f32" : dt == AHA_GPU_F16 ? "f16" : "bf16";
}

extern "C" void aha_gpu_free(aha_gpu *g) {
    if (!g) return;
    if (g->st) cudaStreamSynchronize(g->st);
    for (int i = 0; i < g->n_allocs; i++) cudaFree(g->allocs[i]);
    if (g->ws.idx) aha_route_ws_free(&g->ws);
    if (g->blas) cublasDestroy(g->blas);
    if (g->st) cudaStreamDestroy(g->st);
    free(g->allocs);
    free(g->layers);
    free(g->h_logits);
    free(g->h_router);
    free(g->h_gate);
    free(g);
}

extern "C" aha_gpu *aha_gpu_init(const aha_model *m, int max_ctx, int max_batch,
                                 aha_gpu_dtype dt) {
    const aha_config *c = &m->cfg;
    char why[160];
    if (!aha_gpu_available(why, sizeof why)) {
        aha_err("--device cuda: no CUDA device (%s)", why);
        return NULL;
    }
    if (!aha_attention_cuda_supports(c->head_dim)) {
        aha_err("--device cuda: head_dim %d has no CUDA attention kernel (64, 96, 128)", c->head_dim);
        return NULL;
    }
    if (max_ctx <= 0 || max_batch <= 0) {
        aha_err("context (%d) and batch (%d) must be positive", max_ctx, max_batch);
        return NULL;
    }
    aha_gpu *g = (aha_gpu *)calloc(1, sizeof *g);
    if (!g) return NULL;
    g->m = m;
    g->dt = dt;
    g->max_ctx = max_ctx;
    g->max_batch = max_batch < max_ctx ? max_batch : max_ctx;
    const size_t B = g->max_batch, L = c->n_layers, H = c->n_heads, D = c->head_dim;
    const size_t hd = H * D, kvd = (size_t)c->n_kv_heads * D, dim = c->dim, ffn = c->ffn_dim;
    const size_t qw = hd + (c->aha ? H : 0);
    if (cudaStreamCreate(&g->st) != cudaSuccess || cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(g->blas, g->st) != CUBLAS_STATUS_SUCCESS) {
        aha_err("--device cuda: cannot create a stream / cuBLAS handle");
        aha_gpu_free(g);
        return NULL;
    }
    float *stage = (float *)dmalloc(g, sizeof(float) << 26);
    g->layers = (dev_layer *)calloc(L, sizeof(dev_layer));
    int ok = stage && g->layers;
    for (size_t l = 0; ok && l < L; l++) {
        const aha_layer *s = &m->layers[l];
        dev_layer *d = &g->layers[l];
        d->wq = upload(g, s->wq, qw * dim, dt, stage);
        d->wk = upload(g, s->wk, kvd * dim, dt, stage);
        d->wv = upload(g, s->wv, kvd * dim, dt, stage);
        d->wo = upload(g, s->wo, dim * hd, dt, stage);
        d->w_gate = upload(g, s->w_gate, ffn * dim, dt, stage);
        d->w_up = upload(g, s->w_up, ffn * dim, dt, stage);
        d->w_down = upload(g, s->w_down, dim * ffn, dt, stage);
        const size_t qn = c->arch == AHA_ARCH_OLMO2 ? hd : D, kn = c->arch == AHA_ARCH_OLMO2 ? kvd : D;
        d->attn_norm = (const float *)upload(g, s->attn_norm, dim, AHA_GPU_F32, stage);
        d->bq = (const float *)upload(g, s->bq, hd, AHA_GPU_F32, stage);
        d->bk = (const float *)upload(g, s->bk, kvd, AHA_GPU_F32, stage);
        d->bv = (const float *)upload(g, s->bv, kvd, AHA_GPU_F32, stage);
        d->q_norm = (const float *)upload(g, s->q_norm, qn, AHA_GPU_F32, stage);
        d->k_norm = (const float *)upload(g, s->k_norm, kn, AHA_GPU_F32, stage);
        d->post_attn_norm = (const float *)upload(g, s->post_attn_norm, dim, AHA_GPU_F32, stage);
        d->ffn_norm = (const float *)upload(g, s->ffn_norm, dim, AHA_GPU_F32, stage);
        d->post_ffn_norm = (const float *)upload(g, s->post_ffn_norm, dim, AHA_GPU_F32, stage);
        ok = d->wq && d->wk && d->wv && d->wo && d->w_gate && d->w_up && d->w_down;
    }
    if (ok) {
        g->tok_emb_f32 = upload(g, m->tok_emb, (size_t)c->vocab * dim, AHA_GPU_F32, stage);
        g->lm_head = upload(g, m->lm_head, (size_t)c->vocab * dim, dt, stage);
        g->out_norm = (const float *)upload(g, m->out_norm, dim, AHA_GPU_F32, stage);
        g->inv_freq = (const float *)upload(g, m->inv_freq, D / 2, AHA_GPU_F32, stage);
        g->k_cache = (float *)dmalloc(g, sizeof(float) * L * max_ctx * kvd);
        g->v_cache = (float *)dmalloc(g, sizeof(float) * L * max_ctx * kvd);
        g->x = (float *)dmalloc(g, sizeof(float) * B * dim);
        g->xn = (float *)dmalloc(g, sizeof(float) * B * dim);
        g->q = (float *)dmalloc(g, sizeof(float) * B * qw);
        g->att = (float *)dmalloc(g, sizeof(float) * B * hd);
        g->ffn_gate = (float *)dmalloc(g, sizeof(float) * B * ffn);
        g->ffn_up = (float *)dmalloc(g, sizeof(float) * B * ffn);
        g->logits = (float *)dmalloc(g, sizeof(float) * B * c->vocab);
        g->router = (float *)dmalloc(g, sizeof(float) * B * L * H);
        g->row_max = (float *)dmalloc(g, sizeof(float) * B * H);
        g->row_sum = (float *)dmalloc(g, sizeof(float) * B * H);
        size_t widest = dim > ffn ? dim : ffn;
        widest = widest > hd ? widest : hd;
        g->act16 = dmalloc(g, 2 * B * widest);
        g->tokens = (int32_t *)dmalloc(g, sizeof(int32_t) * B);
        g->gate = (uint8_t *)dmalloc(g, B * H);
        g->dep = (uint32_t *)dmalloc(g, sizeof(uint32_t) * AHA_MAX_EPS * B * H);
        g->dep1 = (uint32_t *)dmalloc(g, sizeof(uint32_t) * B * H);
        g->werr = (float *)dmalloc(g, sizeof(float) * AHA_MAX_WINDOWS * B * H);
        g->h_logits = (float *)calloc(B * c->vocab, sizeof(float));
        g->h_router = (float *)calloc(B * L * H, sizeof(float));
        g->h_gate = (uint8_t *)calloc(B * H, 1);
        ok = g->tok_emb_f32 && g->lm_head && g->out_norm && g->inv_freq && g->k_cache && g->v_cache &&
             g->x && g->xn && g->q && g->att && g->ffn_gate && g->ffn_up && g->logits && g->router &&
             g->row_max && g->row_sum && g->act16 && g->tokens && g->gate && g->dep && g->dep1 &&
             g->werr && g->h_logits && g->h_router && g->h_gate;
        ok = ok && aha_route_ws_alloc(&g->ws, (int)B, (int)H) == 0;
    }
    if (!ok) {
        aha_err("--device cuda: cannot upload the model (%s)", cudaGetErrorString(cudaGetLastError()));
        aha_gpu_free(g);
        return NULL;
    }
    return g;
}

extern "C" void aha_gpu_reset(aha_gpu *g) { g->n_past = 0; }
extern "C" int aha_gpu_n_past(const aha_gpu *g) { return g->n_past; }
extern "C" const float *aha_gpu_logits(const aha_gpu *g) { return g->h_logits; }
extern "C" const float *aha_gpu_router(const aha_gpu *g) { return g->h_router; }

// y[n, out] = x[n, in] @ w[out, in]^T (+ bias), as aha_matmul; y row stride out.
static int matmul(aha_gpu *g, float *y, const float *x, const void *w, const float *bias, int n,
                  int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    if (g->dt == AHA_GPU_F32) {
        CUB(cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, (const float *)w, in, x,
                        in, &zero, y, out));
    } else {
        const cudaDataType t = g->dt == AHA_GPU_F16 ? CUDA_R_16F : CUDA_R_16BF;
        if (g->dt == AHA_GPU_F16) OK(aha_f32_to_f16_cuda(g->act16, x, (long)n * in, g->st));
        else OK(aha_f32_to_bf16_cuda(g->act16, x, (long)n * in, g->st));
        CUB(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, t, in, g->act16, t, in,
                         &zero, y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (bias) OK(aha_add_bias_cuda(y, bias, n, out, out, g->st));
    return 0;
}

// Pre-norm: xn = norm(x). Post-norm: x += norm(xn) (or x += xn without one).
static int residual(aha_gpu *g, int n, const float *pre, const float *post) {
    const aha_config *c = &g->m->cfg;
    if (pre) return aha_rmsnorm_cuda(g->xn, g->x, pre, n, c->dim, 1, c->dim, c->norm_eps, g->st);
    if (post) OK(aha_rmsnorm_cuda(g->xn, g->xn, post, n, c->dim, 1, c->dim, c->norm_eps, g->st));
    return aha_add_cuda(g->x, g->xn, (long)n * c->dim, g->st);
}

static int attention_block(aha_gpu *g, int l, int n, aha_probe *probe) {
    const aha_config *c = &g->m->cfg;
    const dev_layer *L = &g->layers[l];
    const int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, dim = c->dim;
    const int hd = H * D, kvd = KV * D, qw = hd + (c->aha ? H : 0), p0 = g->n_past;
    float *K = g->k_cache + (size_t)l * g->max_ctx * kvd, *V = g->v_cache + (size_t)l * g->max_ctx * kvd;
    float *kc = K + (size_t)p0 * kvd, *vc = V + (size_t)p0 * kvd;
    OK(matmul(g, g->q, g->xn, L->wq, NULL, n, dim, qw));
    OK(matmul(g, kc, g->xn, L->wk, L->bk, n, dim, kvd));
    OK(matmul(g, vc, g->xn, L->wv, L->bv, n, dim, kvd));
    if (c->aha) // raw router rows, before any bias, norm or RoPE: router[t, l, :]
        CU(cudaMemcpy2DAsync(g->router + (size_t)l * H, sizeof(float) * c->n_layers * H, g->q + hd,
                             sizeof(float) * qw, sizeof(float) * H, n, cudaMemcpyDeviceToDevice, g->st));
    if (L->bq) OK(aha_add_bias_cuda(g->q, L->bq, n, hd, qw, g->st));
    if (c->arch == AHA_ARCH_OLMO2) {
        OK(aha_rmsnorm_cuda(g->q, g->q, L->q_norm, n, qw, 1, hd, c->norm_eps, g->st));
        OK(aha_rmsnorm_cuda(kc, kc, L->k_norm, n, kvd, 1, kvd, c->norm_eps, g->st));
    } else if (L->q_norm) {
        OK(aha_rmsnorm_cuda(g->q, g->q, L->q_norm, n, qw, H, D, c->norm_eps, g->st));
        OK(aha_rmsnorm_cuda(kc, kc, L->k_norm, n, kvd, KV, D, c->norm_eps, g->st));
    }
    const int adjacent = c->rope_pairing == AHA_ROPE_ADJACENT;
    OK(aha_rope_cuda(g->q, n, qw, H, D, p0, g->inv_freq, adjacent, g->st));
    OK(aha_rope_cuda(kc, n, kvd, KV, D, p0, g->inv_freq, adjacent, g->st));
    aha_attn_shape shape = {H, KV, D, qw, kvd};
    const size_t nH = (size_t)n * H;
    if (!probe || !probe->router) {
        const int observe = probe && probe->n_eps; // as forward.c: no eps, no pass
        OK(aha_attention_cuda(g->att, g->q, K, V, &shape, n, p0, observe ? g->row_max : NULL,
                              observe ? g->row_sum : NULL, g->st));
        if (observe) {
            aha_observe obs = {probe->eps, probe->n_eps, probe->werr_windows,
                               probe->werr ? probe->n_werr : 0, probe->sinks, g->dep, g->werr};
            OK(aha_dependency_cuda(g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, &obs, g->st));
            if (probe->n_eps)
                CU(cudaMemcpyAsync(probe->dep + (size_t)l * probe->n_eps * nH, g->dep,
                                   sizeof(uint32_t) * probe->n_eps * nH, cudaMemcpyDeviceToHost, g->st));
            if (obs.n_windows)
                CU(cudaMemcpyAsync(probe->werr + (size_t)l * probe->n_werr * nH, g->werr,
                                   sizeof(float) * probe->n_werr * nH, cudaMemcpyDeviceToHost, g->st));
        }
        if (probe) {
            double f = aha_attention_full_flops(&shape, n, p0);
            probe->flops.executed += f;
            probe->flops.full += f;
        }
    } else {
        const aha_router *r = probe->router;
        uint8_t *gate_out = probe->gate + (size_t)l * nH;
        if (r->kind == AHA_ROUTER_ORACLE) { // the full probabilities decide
            OK(aha_attention_cuda(g->att, g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, g->st));
            aha_observe obs = {&r->eps, 1, NULL, 0, probe->sinks, g->dep1, NULL};
            OK(aha_dependency_cuda(g->q, K, V, &shape, n, p0, g->row_max, g->row_sum, &obs, g->st));
            OK(aha_gate_oracle_cuda(g->gate, g->dep1, n, H, probe->window, g->st));
        } else if (r->kind == AHA_ROUTER_LEARNED) {
            OK(aha_gate_learned_cuda(g->gate, g->q + hd, qw, n, H, r->tau, g->st));
        } else { // global, local, random, heads: decided on the host, no device data needed
            aha_router_decide(r, l, n, p0, probe->doc, probe->window, NULL, 0, NULL, g->h_gate);
            CU(cudaMemcpyAsync(g->gate, g->h_gate, nH, cudaMemcpyHostToDevice, g->st));
            CU(cudaStreamSynchronize(g->st)); // h_gate is reused by the next layer
        }
        OK(aha_attention_routed_cuda(g->att, g->q, K, V, &shape, n, p0, probe->window, probe->sinks,
                                     g->gate, &g->ws, g->st));
        CU(cudaMemcpyAsync(gate_out, g->gate, nH, cudaMemcpyDeviceToHost, g->st));
    }
    return matmul(g, g->xn, g->att, L->wo, NULL, n, hd, dim);
}

static int mlp_block(aha_gpu *g, int l, int n) {
    const aha_config *c = &g->m->cfg;
    const dev_layer *L = &g->layers[l];
    OK(matmul(g, g->ffn_gate, g->xn, L->w_gate, NULL, n, c->dim, c->ffn_dim));
    OK(matmul(g, g->ffn_up, g->xn, L->w_up, NULL, n, c->dim, c->ffn_dim));
    OK(aha_swiglu_cuda(g->ffn_gate, g->ffn_up, (long)n * c->ffn_dim, g->st));
    return matmul(g, g->xn, g->ffn_gate, L->w_down, NULL, n, c->ffn_dim, c->dim);
}

extern "C" int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits,
                                     aha_probe *probe) {
    const aha_config *c = &g->m->cfg;
    if (n < 1 || n > g->max_batch || g->n_past + n > g->max_ctx) {
        aha_err("%d tokens do not fit (batch %d, %d of %d context positions used)", n, g->max_batch,
                g->n_past, g->max_ctx);
        return -1;
    }
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->vocab) {
            aha_err("token id %d out of range (vocab %d)", tokens[t], c->vocab);
            return -1;
        }
    if (probe && (probe->n_eps > AHA_MAX_EPS || probe->n_werr > AHA_MAX_WINDOWS)) {
        aha_err("at most %d eps and %d windows per pass", AHA_MAX_EPS, AHA_MAX_WINDOWS);
        return -1;
    }
    CU(cudaMemcpyAsync(g->tokens, tokens, sizeof(int32_t) * n, cudaMemcpyHostToDevice, g->st));
    OK(aha_embed_cuda(g->x, (const float *)g->tok_emb_f32, g->tokens, n, c->dim, g->st));
    const size_t row = sizeof(float) * c->dim;
    for (int l = 0; l < c->n_layers; l++) {
        const dev_layer *L = &g->layers[l];
        if (L->attn_norm) OK(residual(g, n, L->attn_norm, NULL));
        else CU(cudaMemcpyAsync(g->xn, g->x, row * n, cudaMemcpyDeviceToDevice, g->st));
        OK(attention_block(g, l, n, probe));
        OK(residual(g, n, NULL, L->post_attn_norm));
        if (L->ffn_norm) OK(residual(g, n, L->ffn_norm, NULL));
        else CU(cudaMemcpyAsync(g->xn, g->x, row * n, cudaMemcpyDeviceToDevice, g->st));
        OK(mlp_block(g, l, n));
        OK(residual(g, n, NULL, L->post_ffn_norm));
    }
    const int first = all_logits ? 0 : n - 1, rows = n - first;
    OK(aha_rmsnorm_cuda(g->xn, g->x + (size_t)first * c->dim, g->out_norm, rows, c->dim, 1, c->dim,
                        c->norm_eps, g->st));
    OK(matmul(g, g->logits, g->xn, g->lm_head, NULL, rows, c->dim, c->vocab));
    CU(cudaMemcpyAsync(g->h_logits, g->logits, sizeof(float) * rows * c->vocab, cudaMemcpyDeviceToHost,
                       g->st));
    if (c->aha)
        CU(cudaMemcpyAsync(g->h_router, g->router, sizeof(float) * n * c->n_layers * c->n_heads,
                           cudaMemcpyDeviceToHost, g->st));
    CU(cudaStreamSynchronize(g->st));
    if (probe && probe->router) OK(aha_route_ws_flops(&g->ws, &probe->flops, g->st));
    g->n_past += n;
    return 0;
}
