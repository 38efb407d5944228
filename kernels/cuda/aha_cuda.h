// The CUDA twins of kernels/ops.h, kernels/attention.h and kernels/dependency.h:
// same contracts, device pointers, one stream argument. C-callable, so that
// runtime code in C (built with -DAHA_CUDA) can drive them. Every launcher
// returns 0, or -1 with one aha_err line (common/err.h) for a shape it does
// not support or a failed CUDA call; none exits the process.
//
// Pointers marked (dev) are device memory; everything else is host memory.
#pragma once
#ifndef AHA_CUDA_EMU
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif
#include <stdint.h>

#include "../attention.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "dtype.h" // C linkage: its functions are common/dtype.c's

// ---- kernels/cuda/weight.cu: weights in their stored type ---------------
// An aha_weight (common/dtype.h) whose data is device memory: the stored rows
// as the file holds them. Every type of common/dtype.h is decoded, bit for bit
// as aha_dtype_decode.
// out[nr, cols] = rows r0 .. r0+nr-1 of w in op (AHA_F32, AHA_F16 or AHA_BF16:
// float, __half, __nv_bfloat16; the half types rounded from the decoded f32).
int aha_weight_rows_cuda(void *out, aha_dtype op, const aha_weight *w, int r0, int nr, cudaStream_t st);
// x[t, cols] = scale * row tokens[t] of emb (scale 0: as stored), t < n: the
// embedding lookup (aha_weight_rows, then forward.c's embedding scale).
// tokens (dev) already validated.
int aha_embed_cuda(float *x, const aha_weight *emb, const int32_t *tokens, int n, float scale, cudaStream_t st);

// What a product y = x w^T needs besides its operands.
typedef struct {
    cublasHandle_t blas; // bound to the stream the products run on
    aha_dtype op;        // operand type: AHA_F32, AHA_F16 or AHA_BF16 (f32 accumulate)
    void *tile;          // (dev) tile_elems values of op: a tile of decoded weight rows
    long tile_elems;     // (aha_mm_tile_elems of the largest matrix)
    void *act;           // (dev) x rounded to op when op is a half type
    long act_elems;      // values act holds
} aha_mm_cuda;
// Values of op a tile of w takes, at most cap (whole rows): 0 when w is
// stored in op and feeds cuBLAS as it is.
long aha_mm_tile_elems(const aha_weight *w, aha_dtype op, long cap);
// y[n, rows] (+)= x[n, cols] w^T (+ bias[rows]), the twin of aha_matmul_w:
// add = 1 accumulates into y (cuBLAS's beta = 1). w in op feeds cuBLAS
// directly; any other type is decoded a tile of rows at a time (mm->tile)
// into op, one cuBLAS product per tile. f32 accumulate; with a half op, x
// is rounded to it first (mm->act).
int aha_matmul_w_cuda(float *y, const float *x, const aha_weight *w, const float *bias, int n, int add,
                      const aha_mm_cuda *mm, cudaStream_t st);

// ---- kernels/cuda/ops.cu ------------------------------------------------
// RMSNorm of n_tok * groups rows of n values; row (t, g) starts at
// x + t * tok_stride + g * n and is written at the same offset of out (out
// may be x). w[n] is shared by the groups. groups = 1: full width (olmo2's
// q/k norm, the block norms); groups = H: per head (qwen3's q/k norm). Sum of
// squares in double and the scale in float, as aha_rmsnorm.
int aha_rmsnorm_cuda(float *out, const float *x, const float *w, int n_tok, int tok_stride,
                     int groups, int n, float eps, cudaStream_t st);
// aha_rope on n_tok rows (row t at x + t * tok_stride, position pos0 + t),
// n_heads heads of head_dim each; inv_freq[head_dim / 2] (dev).
int aha_rope_cuda(float *x, int n_tok, int tok_stride, int n_heads, int head_dim, int pos0,
                  const float *inv_freq, int adjacent, cudaStream_t st);
// gate[i] = silu(gate[i]) * up[i], i < n.
int aha_swiglu_cuda(float *gate, const float *up, long n, cudaStream_t st);
// gate[i] = gelu_tanh(gate[i]) * up[i], i < n (GeGLU, aha_geglu's form).
int aha_geglu_cuda(float *gate, const float *up, long n, cudaStream_t st);
// x[i] = cap * tanh(x[i] / cap), i < n: the final logit softcap (aha_softcap).
int aha_softcap_cuda(float *x, long n, float cap, cudaStream_t st);
// The first NaN or Inf, aha_nonfinite's twin across calls: for each
// non-finite x[i], i < n, *first = min(*first, stage << 40 | i << 1 |
// isnan(x[i])), so a stage checked earlier wins, then the lowest index
// (*first starts at all ones: none). stage < 2^24, n < 2^39.
int aha_nonfinite_cuda(const float *x, long n, unsigned stage, unsigned long long *first, cudaStream_t st);
// y[t * ld + i] += bias[i] for t < n, i < out; x[i] += y[i] (the residual add).
int aha_add_bias_cuda(float *y, const float *bias, int n, int out, int ld, cudaStream_t st);
int aha_add_cuda(float *x, const float *y, long n, cudaStream_t st);
// Learned router gate: gate[i, h] = logits[i * logit_stride + h] > logf(tau / (1 - tau)),
// the cut computed on the host exactly as aha_router_decide does.
int aha_gate_learned_cuda(uint8_t *gate, const float *logits, int logit_stride, int n, int H,
                          float tau, cudaStream_t st);
// Oracle gate: gate[i, h] = dep[i, h] > window.
int aha_gate_oracle_cuda(uint8_t *gate, const uint32_t *dep, int n, int H, int window,
                         cudaStream_t st);
// Scoring, the twin of aha_logsumexp / aha_kl_logits per row of logits[n,
// vocab]: nll[i] = logsumexp(row i) - row i[targets[i]] (NaN where
// targets[i] < 0); kl[i] = KL(softmax(ref row i) || softmax(row i)) when ref
// is not NULL. targets (dev) already validated.
int aha_score_cuda(float *nll, float *kl, const float *logits, const float *ref,
                   const int32_t *targets, int n, int vocab, cudaStream_t st);
// f32 -> f16 (bf16 = 0) or bf16 (1), rounded to nearest even, f16
// saturating at +-65504 (no Inf from a finite value; NaN stays NaN): rows x cols
// values, row r read at src + r * src_ld and written at dst + r * dst_ld
// (dst is __half / __nv_bfloat16). For the GEMM inputs and weights (one row)
// and the tensor-core attention's Q and KV cache.
int aha_f32_to_half_cuda(void *dst, long dst_ld, const float *src, long src_ld, long rows, long cols, int bf16,
                         cudaStream_t st);

// ---- kernels/cuda/attention_routed.cu -----------------------------------
// Head dims the attention kernels are built for.
int aha_attention_cuda_supports(int head_dim);

// Full causal attention, the twin of aha_attention without obs: out[n, H*D]
// (row stride H*D), queries q[n] at positions p0.. over keys 0..p0+n-1.
// row_max, row_sum (dev, [n, H]) when not NULL receive each row's softmax
// max and sum: the first pass of the dependency pass. out = NULL: those
// statistics alone (no PV product; the tensor-core path's f32 first pass).
int aha_attention_cuda(float *out, const float *q, const float *k, const float *v,
                       const aha_attn_shape *s, int n, int p0, float *row_max, float *row_sum,
                       cudaStream_t st);

// Per-head index lists and FLOP counters of routed attention (dev memory).
typedef struct {
    int n_max, n_heads;
    int *idx;                 // [2, H, n_max]: global then local query indices, ascending
    int *count;               // [H, 2]: how many global / local
    unsigned long long *flops;// [2]: executed, full (accumulated, 4*D per visible key)
} aha_route_ws;
int aha_route_ws_alloc(aha_route_ws *ws, int n_max, int n_heads);
void aha_route_ws_free(aha_route_ws *ws);
// Adds the accumulated counters into f and zeroes them (synchronises st).
int aha_route_ws_flops(aha_route_ws *ws, aha_attn_flops *f, cudaStream_t st);

// Routed attention, the twin of aha_attention_routed: gate (dev, [n, H]).
// Per head, the global queries are compacted into an index list and run as
// full causal flash attention; the local ones run over their window + sinks
// only. Executed / full FLOPs accumulate in ws->flops.
int aha_attention_routed_cuda(float *out, const float *q, const float *k, const float *v,
                              const aha_attn_shape *s, int n, int p0, int window, int sinks,
                              const uint8_t *gate, aha_route_ws *ws, cudaStream_t st);

// The index lists and FLOP counts alone (what aha_attention_routed_cuda runs
// first); the other routed kernels (attention_mma.cu, dev/attention_tc.cu) share them.
int aha_route_compact_cuda(const uint8_t *gate, int n, int n_heads, int head_dim, int p0, int window,
                           int sinks, aha_route_ws *ws, cudaStream_t st);

// ---- kernels/cuda/attention_mma.cu: tensor-core variant 3 (f16 / bf16) ---
// The same contracts with q, k, v in f16 (bf16 = 0) or bf16 (1), strides of
// aha_attn_shape in elements (q_stride even, kv_stride a multiple of 8),
// f32 accumulate and f32 out; the probabilities are rounded to the input
// type before PV. head_dim 64 or 128. The runtime's attention for --dtype
// f16 / bf16.
int aha_attention_mma_supports(int head_dim);
int aha_attention_mma_cuda(float *out, const void *q, const void *k, const void *v, const aha_attn_shape *s,
                           int n, int p0, int bf16, cudaStream_t st);
int aha_attention_routed_mma_cuda(float *out, const void *q, const void *k, const void *v,
                                  const aha_attn_shape *s, int n, int p0, int bf16, int window, int sinks,
                                  const uint8_t *gate, aha_route_ws *ws, cudaStream_t st);

// ---- kernels/cuda/dependency.cu -----------------------------------------
// The dependency pass, second pass: from row_max / row_sum of
// aha_attention_cuda, each row's probabilities are recomputed, their
// cumulative mass (from key `sinks` on) scanned for d_eps, and the window
// output errors evaluated. obs->eps / obs->windows are host arrays;
// obs->dep ([n_eps, n, H]) and obs->werr ([n_windows, n, H]) are device arrays.
int aha_dependency_cuda(const float *q, const float *k, const float *v, const aha_attn_shape *s,
                        int n, int p0, const float *row_max, const float *row_sum,
                        const aha_observe *obs, cudaStream_t st);

// Keys visible to query position p: the FLOP rule of aha_attention_routed,
// on the device (attention_routed.cu) and the host (dev/route_host.c).
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int aha_route_visible(int p, int global, int window, int sinks) {
    if (global || p + 1 <= window) return p + 1;
    int lo = p - window + 1;
    return window + (sinks < lo ? sinks : lo);
}

#ifdef __cplusplus
}
#endif
