// Attention on the tensor cores, variant 3 (of attention_routed.cu): Q, K, V
// in f16 or bf16, QK^T and PV as mma.sync.m16n8k16 with f32 accumulate, the
// scores, softmax state and output kept in registers (the FlashAttention-2
// arrangement). Same contracts as v1 -- full causal (within a natively local
// layer's window), and routed over the per-head index lists; scores scaled
// and softcapped as tile_score -- with outputs within the inputs' rounding
// (the probabilities are rounded to the input type before PV). The runtime
// uses it for --dtype f16 / bf16 at head_dim 64 and 128 (the registers of
// 256's fragments do not fit; v1 runs those); the dependency pass stays in
// f32 (v1).
//
// A block is 4 warps x 16 queries of one head and one list; it streams tiles
// of 64 keys through two shared-memory stages: cp.async fetches tile i + 1
// while the warps compute on tile i. K and V are kept row major (rows padded
// by 8 halves, so the 8 rows an ldmatrix reads fall in distinct banks); K's
// B fragments are ldmatrix, V's ldmatrix.trans. Warp w holds its queries' A
// fragments for the whole run; per tile S = Q K^T (16 x 64) lands in the
// accumulator layout, which, rounded, is already PV's A layout (mma.cuh).
#include <math.h>

#include "aha_cuda.h"
#include "common.cuh"
#include "mma.cuh"
#include "tile.cuh"

#define MA_WARPS 4
#define MA_QB (MA_WARPS * 16) // queries per block
#define MA_BK 64              // keys per tile
#define MA_LD(D) ((D) + 8)    // K / V row stride in shared memory (halves)

// Two stages of a K tile and a V tile.
template <int D> static constexpr size_t ma_smem() { return sizeof(uint16_t) * 4 * MA_BK * MA_LD(D); }

__device__ __forceinline__ uint32_t ld32(const uint16_t *p) { return *(const uint32_t *)p; }

template <int BF16, int D, bool ROUTED>
__global__ void __launch_bounds__(MA_WARPS * 32)
flash_mma_kernel(float *out, const uint16_t *q, const uint16_t *k, const uint16_t *v, int H, int group,
                 int q_stride, int kv_stride, int n, int p0, float scale, float softcap, const int *idx,
                 const int *count, int window, int sinks) {
    AHA_DYN_SMEM(uint16_t, smem);
    constexpr int LD = MA_LD(D), NB = MA_BK / 8, DB = D / 8, KB = D / 16, TILE = MA_BK * LD;
    __shared__ int qidx[MA_QB];
    const int h = blockIdx.y, kind = tile_kind(ROUTED, window);
    const float scale_log2 = 1.4426950408889634f * scale; // exp(x) = exp2(x log2 e)
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const int g = lane >> 2, t = lane & 3;
    const int nq = tile_queries<MA_QB, ROUTED>(qidx, h, kind, H, n, idx, count);
    if (nq == 0) return;
    const uint16_t *kh = k + (long)(h / group) * D, *vh = v + (long)(h / group) * D;
    // This lane's rows g and g + 8 of the warp's 16 queries, and their A fragments.
    int qi[2], pos[2];
    uint32_t qa[KB][4];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        qi[r] = qidx[warp * 16 + g + 8 * r];
        pos[r] = qi[r] >= 0 ? p0 + qi[r] : -1;
        const uint16_t *qr = q + (long)(qi[r] >= 0 ? qi[r] : 0) * q_stride + (long)h * D + 2 * t;
#pragma unroll
        for (int kb = 0; kb < KB; kb++) {
            qa[kb][r] = qi[r] >= 0 ? ld32(qr + kb * 16) : 0u;
            qa[kb][2 + r] = qi[r] >= 0 ? ld32(qr + kb * 16 + 8) : 0u;
        }
    }
    int wlast = -1; // the warp's last position: later key tiles are skipped (warp-uniform)
    for (int j = 0; j < 16; j++) wlast = max(wlast, qidx[warp * 16 + j] >= 0 ? p0 + qidx[warp * 16 + j] : -1);
    // The key tiles: [r[0], r[1]) (sinks before the band) then [r[2], r[3]).
    int kr[4];
    tile_key_ranges(kind, p0 + qidx[0], p0 + qidx[nq - 1], window, sinks, kr);
    const int n0 = (kr[1] - kr[0] + MA_BK - 1) / MA_BK, ntile = n0 + (kr[3] - kr[2] + MA_BK - 1) / MA_BK;
    auto tile_base = [&](int i) { return i < n0 ? kr[0] + i * MA_BK : kr[2] + (i - n0) * MA_BK; };
    auto tile_keys = [&](int i) { return min(MA_BK, (i < n0 ? kr[1] : kr[3]) - tile_base(i)); };
    // Tile i into stage i % 2: 16-byte chunks, zeros past the tile's keys.
    auto fetch = [&](int i) {
        uint16_t *Ks = smem + (i & 1) * 2 * TILE, *Vs = Ks + TILE;
        const int base = tile_base(i), nk = tile_keys(i);
        for (int e = tid; e < MA_BK * D / 8; e += blockDim.x) {
            const int j = e / (D / 8), c = e % (D / 8) * 8;
            const long off = j < nk ? (long)(base + j) * kv_stride + c : 0;
            cp_async16(Ks + j * LD + c, kh + off, j < nk ? 16 : 0);
            cp_async16(Vs + j * LD + c, vh + off, j < nk ? 16 : 0);
        }
        cp_async_commit();
    };
    float o[DB][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int db = 0; db < DB; db++) o[db][0] = o[db][1] = o[db][2] = o[db][3] = 0.0f;
    // ldmatrix row of this lane: matrix j = lane / 8, row lane % 8.
    const int mj = lane >> 3, mrow = lane & 7;
    if (ntile) fetch(0);
    for (int i = 0; i < ntile; i++) {
        if (i + 1 < ntile) fetch(i + 1);
        else cp_async_commit(); // an empty group: the wait below stays "all but the newest"
        cp_async_wait<1>();
        __syncthreads(); // tile i landed for every thread
        const int base = tile_base(i), nk = tile_keys(i);
        const uint16_t *Ks = smem + (i & 1) * 2 * TILE, *Vs = Ks + TILE;
        if (base <= wlast) {
            // S = Q K^T: 16 x 64 per warp, log2-scaled, masked. One ldmatrix.x4
            // gives the B fragments of key blocks nb, nb + 1 at dims kb * 16.
            float s[NB][4];
#pragma unroll
            for (int nb = 0; nb < NB; nb++) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
#pragma unroll
            for (int kb = 0; kb < KB; kb++)
#pragma unroll
                for (int nb = 0; nb < NB; nb += 2) {
                    uint32_t bf[4];
                    ldmatrix_x4<false>(bf, Ks + ((nb + (mj >> 1)) * 8 + mrow) * LD + kb * 16 + (mj & 1) * 8);
                    mma_16816<BF16>(s[nb], qa[kb], bf);
                    mma_16816<BF16>(s[nb + 1], qa[kb], bf + 2);
                }
            float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int rr = e >> 1, key = base + nb * 8 + 2 * t + (e & 1);
                    const bool vis = key - base < nk && tile_visible(key, pos[rr], kind, window, sinks);
                    s[nb][e] = !vis ? -INFINITY
                               : softcap > 0.0f ? 1.4426950408889634f * tile_score(s[nb][e], scale, softcap)
                                                : s[nb][e] * scale_log2;
                    tmax[rr] = fmaxf(tmax[rr], s[nb][e]);
                }
            // Online softmax per row (a row's 64 scores sit on the 4 lanes of a group).
            float corr[2];
#pragma unroll
            for (int rr = 0; rr < 2; rr++) {
                tmax[rr] = fmaxf(tmax[rr], __shfl_xor_sync(0xffffffffu, tmax[rr], 1));
                tmax[rr] = fmaxf(tmax[rr], __shfl_xor_sync(0xffffffffu, tmax[rr], 2));
                corr[rr] = 1.0f;
                if (tmax[rr] != -INFINITY) {
                    const float mn = fmaxf(m[rr], tmax[rr]);
                    corr[rr] = exp2f(m[rr] - mn);
                    m[rr] = mn;
                }
                l[rr] *= corr[rr];
            }
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float p = s[nb][e] == -INFINITY ? 0.0f : exp2f(s[nb][e] - m[e >> 1]);
                    s[nb][e] = p;
                    l[e >> 1] += p;
                }
#pragma unroll
            for (int db = 0; db < DB; db++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[db][e] *= corr[e >> 1];
            // O += P V: P's accumulator fragments of keys 16kk.. are PV's A
            // fragment; one ldmatrix.x4.trans gives V's B fragments of dim
            // blocks db, db + 1.
#pragma unroll
            for (int kk = 0; kk < MA_BK / 16; kk++) {
                const uint32_t pa[4] = {mma_pack<BF16>(s[2 * kk][0], s[2 * kk][1]),
                                        mma_pack<BF16>(s[2 * kk][2], s[2 * kk][3]),
                                        mma_pack<BF16>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                        mma_pack<BF16>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int db = 0; db < DB; db += 2) {
                    uint32_t bf[4];
                    ldmatrix_x4<true>(bf, Vs + (kk * 16 + (mj & 1) * 8 + mrow) * LD + (db + (mj >> 1)) * 8);
                    mma_16816<BF16>(o[db], pa, bf);
                    mma_16816<BF16>(o[db + 1], pa, bf + 2);
                }
            }
        }
        __syncthreads(); // stage i % 2 consumed before tile i + 2 is fetched into it
    }
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 1);
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 2);
        if (pos[rr] < 0) continue;
        const float inv = 1.0f / l[rr];
        float *dst = out + (long)qi[rr] * H * D + (long)h * D + 2 * t;
#pragma unroll
        for (int db = 0; db < DB; db++)
            *(float2 *)(dst + db * 8) = make_float2(o[db][2 * rr] * inv, o[db][2 * rr + 1] * inv);
    }
}

extern "C" int aha_attention_mma_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

template <int BF16, int D, bool ROUTED>
static int mma_launch(dim3 grid, cudaStream_t st, float *out, const void *q, const void *k, const void *v,
                      const aha_attn_shape *s, int n, int p0, const int *idx, const int *count, int window,
                      int sinks) {
    constexpr size_t smem = ma_smem<D>();
    static unsigned long long attr_done; // per device
    if (aha_smem_attr(flash_mma_kernel<BF16, D, ROUTED>, (int)smem, &attr_done)) return -1;
    AHA_LAUNCH(grid, MA_WARPS * 32, smem, st, flash_mma_kernel<BF16, D, ROUTED>)(
        out, (const uint16_t *)q, (const uint16_t *)k, (const uint16_t *)v, s->n_heads, s->n_heads / s->n_kv,
        s->q_stride, s->kv_stride, n, p0, aha_attn_scale(s), s->softcap, idx, count, window, sinks);
    cudaLaunchCheck();
    return 0;
}

// 32-bit fragment loads of Q, 16-byte cp.async of K / V rows and 8-byte
// stores of the output need these strides and pointers.
static int mma_shape_ok(const aha_attn_shape *s, int routed, const float *out, const void *q, const void *k,
                        const void *v) {
    if (!tile_shape_ok(s, routed, 1, "aha attention (mma)")) return 0;
    if (!aha_attention_mma_supports(s->head_dim) || s->q_stride % 2 || s->kv_stride % 8) {
        aha_err("aha attention (mma): head_dim %d (64, 128), q stride %d (even), kv stride %d (of 8)",
                s->head_dim, s->q_stride, s->kv_stride);
        return 0;
    }
    const uintptr_t o = (uintptr_t)out, qa = (uintptr_t)q, ka = (uintptr_t)k, va = (uintptr_t)v;
    if (o % 8 || qa % 4 || ka % 16 || va % 16) {
        aha_err("aha attention (mma): misaligned pointers (out %% 8 = %d, q %% 4 = %d, k %% 16 = %d, v %% 16 = %d; "
                "all must be 0)", (int)(o % 8), (int)(qa % 4), (int)(ka % 16), (int)(va % 16));
        return 0;
    }
    return 1;
}

template <bool ROUTED>
static int mma_dispatch(dim3 grid, cudaStream_t st, float *out, const void *q, const void *k, const void *v,
                         const aha_attn_shape *s, int n, int p0, int bf16, const int *idx, const int *count,
                         int window, int sinks) {
#define MA_GO(B, D_) mma_launch<B, D_, ROUTED>(grid, st, out, q, k, v, s, n, p0, idx, count, window, sinks)
    if (bf16) return s->head_dim == 64 ? MA_GO(1, 64) : MA_GO(1, 128);
    return s->head_dim == 64 ? MA_GO(0, 64) : MA_GO(0, 128);
#undef MA_GO
}

extern "C" int aha_attention_mma_cuda(float *out, const void *q, const void *k, const void *v,
                                      const aha_attn_shape *s, int n, int p0, int bf16, cudaStream_t st) {
    if (n <= 0) return 0;
    if (!mma_shape_ok(s, 0, out, q, k, v)) return -1;
    return mma_dispatch<false>(dim3(aha_ceil_div(n, MA_QB), s->n_heads, 1), st, out, q, k, v, s, n, p0, bf16, NULL,
                               NULL, s->window, 0);
}

extern "C" int aha_attention_routed_mma_cuda(float *out, const void *q, const void *k, const void *v,
                                             const aha_attn_shape *s, int n, int p0, int bf16, int window,
                                             int sinks, const uint8_t *gate, aha_route_ws *ws, cudaStream_t st) {
    if (n <= 0) return 0;
    if (!mma_shape_ok(s, 1, out, q, k, v)) return -1;
    if (window < 1 || sinks < 0) {
        aha_err("aha_attention_routed_mma_cuda: window %d, sinks %d", window, sinks);
        return -1;
    }
    if (aha_route_compact_cuda(gate, n, s->n_heads, s->head_dim, p0, window, sinks, ws, st)) return -1;
    return mma_dispatch<true>(dim3(aha_ceil_div(n, MA_QB), s->n_heads, 2), st, out, q, k, v, s, n, p0, bf16,
                              ws->idx, ws->count, window, sinks);
}
