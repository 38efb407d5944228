// Attention on the tensor cores (variant 2 of kernels/cuda/attention_routed.cu):
// the same contracts -- full causal, and routed over the per-head index
// lists (global queries causal, local ones window + sinks) -- with QK^T and
// PV as TF32 wmma products (f32 accumulate). Inputs are rounded to TF32 (10
// mantissa bits), so outputs match the CPU within ~1e-3 relative, not 1e-5:
// the runtime keeps the fp32 kernels for f32 and uses variant 3
// (attention_mma.cu) for f16 / bf16; this one is benchmarked against them,
// on llama's scores (a score scale, softcap or native window is refused).
//
// A block is 4 warps x 16 queries = 64 queries of one head and one list; it
// streams tiles of 64 keys (K, V in shared memory as f32). Warp w: S = Q_w K^T
// (16 x 64) into shared memory; two lanes per query row apply the mask and the
// online softmax (P written over S, the row's O rescaled); then O += P V with
// O kept in shared memory (16 x D per warp) between tiles.
#include <math.h>
#ifndef AHA_CUDA_EMU
#include <mma.h>
#endif

#include "aha_cuda_dev.h"
#include "common.cuh"
#include "tile.cuh"

using namespace nvcuda;

#define TC_WARPS 4
#define TC_QB (TC_WARPS * 16) // queries per block
#define TC_BK 64              // keys per tile
#define TC_LD(D) ((D) + 4)    // row stride of Q, K, V, O in shared memory
#define TC_SLD (TC_BK + 4)    // row stride of S / P

template <int D> static constexpr size_t tc_smem() {
    return sizeof(float) * ((size_t)(TC_QB + 2 * TC_BK) * TC_LD(D) + TC_WARPS * 16 * (TC_SLD + TC_LD(D)));
}

typedef wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::accumulator, 16, 16, 8, float> frag_c;

template <typename F> __device__ __forceinline__ void to_tf32(F &f) {
#pragma unroll
    for (int i = 0; i < f.num_elements; i++) f.x[i] = wmma::__float_to_tf32(f.x[i]);
}

template <int D, bool ROUTED>
__global__ void __launch_bounds__(TC_WARPS * 32)
flash_tc_kernel(float *out, const float *q, const float *k, const float *v, int H, int group, int q_stride,
                int kv_stride, int n, int p0, float scale, const int *idx, const int *count, int window,
                int sinks) {
    AHA_DYN_SMEM(float, smem);
    constexpr int LD = TC_LD(D);
    float *Qs = smem;                    // [QB][LD]
    float *Ks = Qs + TC_QB * LD;         // [BK][LD]
    float *Vs = Ks + TC_BK * LD;         // [BK][LD]
    float *Ss = Vs + TC_BK * LD;         // [WARPS][16][SLD]
    float *Os = Ss + TC_WARPS * 16 * TC_SLD; // [WARPS][16][LD]
    __shared__ int qidx[TC_QB];
    const int h = blockIdx.y, kind = ROUTED ? (int)blockIdx.z : 0;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const int nq = tile_queries<TC_QB, ROUTED>(qidx, h, kind, H, n, idx, count);
    if (nq == 0) return;
    const float *qh = q + (long)h * D;
    const float *kh = k + (long)(h / group) * D, *vh = v + (long)(h / group) * D;
    tile_load_q<D, TC_QB>(Qs, LD, qidx, qh, q_stride);
    float *S = Ss + warp * 16 * TC_SLD, *O = Os + warp * 16 * LD;
    for (int e = lane; e < 16 * LD; e += 32) O[e] = 0.0f;
    int kr[4];
    tile_key_ranges(kind, p0 + qidx[0], p0 + qidx[nq - 1], window, sinks, kr);
    const int r0a = kr[0], r0b = kr[1], r1a = kr[2], r1b = kr[3];
    // This lane's query row (two lanes per row, each 32 of the 64 columns).
    const int row = lane >> 1, half = lane & 1;
    const int qi = qidx[warp * 16 + row];
    const int pos = qi >= 0 ? p0 + qi : -1;
    float m = -INFINITY, l = 0.0f;
    for (int r = 0; r < 2; r++) {
        const int a = r ? r1a : r0a, b = r ? r1b : r0b;
        for (int base = a; base < b; base += TC_BK) {
            const int nk = min(TC_BK, b - base);
            __syncthreads();
            for (int e = tid; e < TC_BK * D; e += blockDim.x) {
                const int j = e / D, d = e % D;
                const bool in = j < nk;
                Ks[j * LD + d] = in ? kh[(long)(base + j) * kv_stride + d] : 0.0f;
                Vs[j * LD + d] = in ? vh[(long)(base + j) * kv_stride + d] : 0.0f;
            }
            __syncthreads();
            // S = Q_w K^T: 16 x 64.
#pragma unroll
            for (int nb = 0; nb < TC_BK / 16; nb++) {
                frag_c acc;
                wmma::fill_fragment(acc, 0.0f);
#pragma unroll 4
                for (int kb = 0; kb < D / 8; kb++) {
                    frag_a fa;
                    frag_bt fb;
                    wmma::load_matrix_sync(fa, Qs + (warp * 16) * LD + kb * 8, LD);
                    wmma::load_matrix_sync(fb, Ks + (nb * 16) * LD + kb * 8, LD);
                    to_tf32(fa);
                    to_tf32(fb);
                    wmma::mma_sync(acc, fa, fb, acc);
                }
                wmma::store_matrix_sync(S + nb * 16, acc, TC_SLD, wmma::mem_row_major);
            }
            __syncwarp();
            // Mask + online softmax on this lane's 32 columns; P over S.
            float *srow = S + row * TC_SLD + half * 32;
            float tmax = -INFINITY;
            for (int c = 0; c < 32; c++) {
                const int key = base + half * 32 + c;
                const bool vis = half * 32 + c < nk && tile_visible(key, pos, kind, window, sinks);
                const float sv = vis ? srow[c] * scale : -INFINITY;
                srow[c] = sv;
                tmax = fmaxf(tmax, sv);
            }
            tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
            float corr = 1.0f;
            if (tmax != -INFINITY) {
                const float mn = fmaxf(m, tmax);
                corr = expf(m - mn);
                m = mn;
            }
            float psum = 0.0f;
            for (int c = 0; c < 32; c++) {
                const float p = srow[c] == -INFINITY ? 0.0f : expf(srow[c] - m);
                srow[c] = p;
                psum += p;
            }
            l = l * corr + psum;
            float *orow = O + row * LD + half * (D / 2);
            for (int d = 0; d < D / 2; d++) orow[d] *= corr;
            __syncwarp();
            // O += P V: 16 x D.
#pragma unroll
            for (int db = 0; db < D / 16; db++) {
                frag_c acc;
                wmma::load_matrix_sync(acc, O + db * 16, LD, wmma::mem_row_major);
#pragma unroll
                for (int kb = 0; kb < TC_BK / 8; kb++) {
                    frag_a fa;
                    frag_b fb;
                    wmma::load_matrix_sync(fa, S + kb * 8, TC_SLD);
                    wmma::load_matrix_sync(fb, Vs + (kb * 8) * LD + db * 16, LD);
                    to_tf32(fa);
                    to_tf32(fb);
                    wmma::mma_sync(acc, fa, fb, acc);
                }
                wmma::store_matrix_sync(O + db * 16, acc, LD, wmma::mem_row_major);
            }
            __syncwarp();
        }
    }
    const float lt = l + __shfl_xor_sync(0xffffffffu, l, 1);
    if (pos >= 0) {
        const float inv = 1.0f / lt;
        float *dst = out + (long)qi * H * D + (long)h * D + half * (D / 2);
        const float *orow = O + row * LD + half * (D / 2);
        for (int d = 0; d < D / 2; d++) dst[d] = orow[d] * inv;
    }
}

extern "C" int aha_attention_tc_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

template <int D, bool ROUTED>
static int tc_launch(dim3 grid, cudaStream_t st, float *out, const float *q, const float *k, const float *v,
                     const aha_attn_shape *s, int n, int p0, const int *idx, const int *count, int window,
                     int sinks) {
    constexpr size_t smem = tc_smem<D>();
    static unsigned long long attr_done; // per device
    if (aha_smem_attr(flash_tc_kernel<D, ROUTED>, (int)smem, &attr_done)) return -1;
    AHA_LAUNCH(grid, TC_WARPS * 32, smem, st, flash_tc_kernel<D, ROUTED>)(
        out, q, k, v, s->n_heads, s->n_heads / s->n_kv, s->q_stride, s->kv_stride, n, p0, 1.0f / sqrtf((float)D),
        idx, count, window, sinks);
    cudaLaunchCheck();
    return 0;
}

template <bool ROUTED>
static int tc_dispatch(dim3 grid, cudaStream_t st, float *out, const float *q, const float *k, const float *v,
                       const aha_attn_shape *s, int n, int p0, const int *idx, const int *count, int window,
                       int sinks) {
    if (!tile_shape_ok(s, ROUTED, 0, "aha attention (tensor cores)")) return -1;
    if (s->head_dim == 64) return tc_launch<64, ROUTED>(grid, st, out, q, k, v, s, n, p0, idx, count, window, sinks);
    if (s->head_dim == 128) return tc_launch<128, ROUTED>(grid, st, out, q, k, v, s, n, p0, idx, count, window, sinks);
    aha_err("aha attention (tensor cores): head_dim %d not built (64, 128)", s->head_dim);
    return -1;
}

extern "C" int aha_attention_tc_cuda(float *out, const float *q, const float *k, const float *v,
                                     const aha_attn_shape *s, int n, int p0, cudaStream_t st) {
    if (n <= 0) return 0;
    return tc_dispatch<false>(dim3(aha_ceil_div(n, TC_QB), s->n_heads, 1), st, out, q, k, v, s, n, p0, NULL,
                              NULL, 0, 0);
}

extern "C" int aha_attention_routed_tc_cuda(float *out, const float *q, const float *k, const float *v,
                                            const aha_attn_shape *s, int n, int p0, int window, int sinks,
                                            const uint8_t *gate, aha_route_ws *ws, cudaStream_t st) {
    if (n <= 0) return 0;
    if (!aha_attention_tc_supports(s->head_dim) || window < 1 || sinks < 0) {
        aha_err("aha_attention_routed_tc_cuda: head_dim %d, window %d, sinks %d", s->head_dim, window, sinks);
        return -1;
    }
    if (aha_route_compact_cuda(gate, n, s->n_heads, s->head_dim, p0, window, sinks, ws, st)) return -1;
    return tc_dispatch<true>(dim3(aha_ceil_div(n, TC_QB), s->n_heads, 2), st, out, q, k, v, s, n, p0, ws->idx,
                             ws->count, window, sinks);
}
