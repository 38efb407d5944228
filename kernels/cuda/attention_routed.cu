// Routed flash attention (CUDA twin of kernels/attention_routed.c) and full
// causal attention (twin of aha_attention without the dependency pass).
//
// Contract. out[i, h*D .. h*D+D) for each query i < n at position p = p0 + i
// and head h (KV head h / (H / KV)):
//   global (gate[i, h] = 1, or full attention): softmax over keys 0..p;
//   local  (gate 0): keys max(0, p-w+1)..p plus keys 0..min(sinks, p-w+1)-1;
//   full attention on a natively local layer (s->window = w): keys
//   max(0, p-w+1)..p (the local list's rule, no sinks); never routed.
// Scores are tile_score's: dot(q, k) * aha_attn_scale(s), softcapped when
// s->softcap is set; FLOPs count 4*D per visible key, exactly as the CPU twin
// (aha_route_visible), in unsigned integers on the device.
//
// Work really skipped: a 16-query tile of a head almost always holds one
// global query, so tiles of positions would skip nothing. Instead each
// head's queries are compacted into two ascending index lists (global,
// local) by route_compact_kernel; blocks of the global list run causal flash
// attention over keys 0..last, blocks of the local list run over the band
// [first - w + 1, last] and the sinks only.
//
// Kernel v1 (this file): fp32 on CUDA cores, online softmax. A block is 4
// warps x 4 queries = 16 queries of one head and one list; it streams tiles
// of 32 keys (K rows padded to D+4 floats in shared memory, V, both shared by
// the 16 queries). In a tile, lane j scores key j against the warp's 4
// queries with 16-byte shared loads; the probabilities go through shared
// memory to the PV product, where lane l owns dimensions l*D/32 .. and reads
// 4 probabilities and one V vector per load. Variant 2, on the tensor cores
// (TF32 wmma), is dev/attention_tc.cu; variant 3 (f16 / bf16 mma.sync, the
// runtime's for --dtype f16 / bf16) is attention_mma.cu.
#include <math.h>

#include "aha_cuda.h"
#include "common.cuh"
#include "tile.cuh"

#define FA_WARPS 4
#define FA_QPW 4                      // queries per warp
#define FA_QB (FA_WARPS * FA_QPW)     // queries per block
#define FA_BK 32                      // keys per tile

#define FA_KS(D) ((D) + 4)             // K row stride in shared memory (16-byte rows, no conflicts)

template <int D>
static constexpr size_t fa_smem() {
    return sizeof(float) * ((size_t)FA_QB * D + FA_BK * FA_KS(D) + FA_BK * D + FA_WARPS * FA_QPW * FA_BK);
}

// C consecutive floats from shared memory: one 16- or 8-byte access where it fits.
template <int C> __device__ __forceinline__ void ld_vec(float *r, const float *p) {
    if constexpr (C == 4) {
        const float4 t = *(const float4 *)p;
        r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else if constexpr (C == 2) {
        const float2 t = *(const float2 *)p;
        r[0] = t.x, r[1] = t.y;
    } else {
#pragma unroll
        for (int c = 0; c < C; c++) r[c] = p[c];
    }
}

// kind 0 = global list (or full attention), 1 = local list (or a natively
// local layer's full attention). OUT = false:
// the softmax statistics alone (row_max / row_sum), no PV product.
template <int D, bool ROUTED, bool OUT = true>
__global__ void __launch_bounds__(FA_WARPS * 32)
flash_attn_kernel(float *out, const float *q, const float *k, const float *v, int H, int group,
                  int q_stride, int kv_stride, int n, int p0, float scale, float softcap, const int *idx,
                  const int *count, int window, int sinks, float *row_max, float *row_sum) {
    AHA_DYN_SMEM(float, smem);
    constexpr int C = D / 32, KS = FA_KS(D);
    float *Qs = smem;                     // [QB][D]
    float *Ks = Qs + FA_QB * D;           // [BK][KS]
    float *Vs = Ks + FA_BK * KS;          // [BK][D]
    float *Ps = Vs + FA_BK * D;           // [WARPS][QPW][BK]
    __shared__ int qidx[FA_QB];
    const int h = blockIdx.y, kind = tile_kind(ROUTED, window);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const int nq = tile_queries<FA_QB, ROUTED>(qidx, h, kind, H, n, idx, count);
    if (nq == 0) return;
    const float *qh = q + (long)h * D;
    const float *kh = k + (long)(h / group) * D, *vh = v + (long)(h / group) * D;
    tile_load_q<D, FA_QB>(Qs, D, qidx, qh, q_stride);
    // Key ranges: [r0a, r0b) (the sinks before the band) then [r1a, r1b).
    int kr[4];
    tile_key_ranges(kind, p0 + qidx[0], p0 + qidx[nq - 1], window, sinks, kr);
    const int r0a = kr[0], r0b = kr[1], r1a = kr[2], r1b = kr[3];
    int pos[FA_QPW];
    float m[FA_QPW], l[FA_QPW], o[FA_QPW][C]; // lane owns dims lane*C .. lane*C+C-1
#pragma unroll
    for (int j = 0; j < FA_QPW; j++) {
        const int qi = qidx[warp * FA_QPW + j];
        pos[j] = qi >= 0 ? p0 + qi : -1;
        m[j] = -INFINITY;
        l[j] = 0.0f;
#pragma unroll
        for (int c = 0; c < C; c++) o[j][c] = 0.0f;
    }
    float *P = Ps + warp * FA_QPW * FA_BK;
    const float *Qw = Qs + warp * FA_QPW * D;
    for (int r = 0; r < 2; r++) {
        const int a = r ? r1a : r0a, b = r ? r1b : r0b;
        for (int base = a; base < b; base += FA_BK) {
            const int nk = min(FA_BK, b - base);
            __syncthreads(); // previous tile consumed
            for (int e = tid; e < FA_BK * D; e += blockDim.x) {
                const int j = e / D, d = e % D;
                const bool in = j < nk;
                Ks[j * KS + d] = in ? kh[(long)(base + j) * kv_stride + d] : 0.0f;
                if (OUT) Vs[j * D + d] = in ? vh[(long)(base + j) * kv_stride + d] : 0.0f;
            }
            __syncthreads();
            const int key = base + lane;
            // Scores of key `lane` against the warp's queries: 16-byte reads of
            // K (own row) and Q (broadcast).
            float s[FA_QPW];
#pragma unroll
            for (int j = 0; j < FA_QPW; j++) s[j] = 0.0f;
            const float *kr = Ks + lane * KS;
#pragma unroll 4
            for (int d = 0; d < D; d += 4) {
                const float4 k4 = *(const float4 *)(kr + d);
#pragma unroll
                for (int j = 0; j < FA_QPW; j++) {
                    const float4 q4 = *(const float4 *)(Qw + j * D + d);
                    s[j] = fmaf(q4.x, k4.x, s[j]);
                    s[j] = fmaf(q4.y, k4.y, s[j]);
                    s[j] = fmaf(q4.z, k4.z, s[j]);
                    s[j] = fmaf(q4.w, k4.w, s[j]);
                }
            }
            bool any[FA_QPW];
#pragma unroll
            for (int j = 0; j < FA_QPW; j++) {
                any[j] = false;
                if (pos[j] < 0 || base > pos[j]) continue; // warp-uniform
                const float sj = tile_score(s[j], scale, softcap);
                const bool vis = lane < nk && tile_visible(key, pos[j], kind, window, sinks);
                const float tmax = aha_warp_max(vis ? sj : -INFINITY);
                if (tmax == -INFINITY) continue;
                any[j] = true;
                const float mn = fmaxf(m[j], tmax), corr = expf(m[j] - mn);
                const float p = vis ? expf(sj - mn) : 0.0f;
                l[j] = l[j] * corr + p;
#pragma unroll
                for (int c = 0; c < C; c++) o[j][c] *= corr;
                m[j] = mn;
                if (OUT) P[j * FA_BK + lane] = p;
            }
            if (!OUT) continue;
            __syncwarp();
            // o += P V: four keys at a time (rows past nk are zero in Vs and P).
            const int nk4 = (nk + 3) & ~3;
            for (int kk = 0; kk < nk4; kk += 4) {
                float4 p4[FA_QPW];
#pragma unroll
                for (int j = 0; j < FA_QPW; j++)
                    p4[j] = any[j] ? *(const float4 *)(P + j * FA_BK + kk) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    float vv[C];
                    ld_vec<C>(vv, Vs + (kk + u) * D + lane * C);
#pragma unroll
                    for (int j = 0; j < FA_QPW; j++) {
                        const float pj = u == 0 ? p4[j].x : u == 1 ? p4[j].y : u == 2 ? p4[j].z : p4[j].w;
#pragma unroll
                        for (int c = 0; c < C; c++) o[j][c] = fmaf(pj, vv[c], o[j][c]);
                    }
                }
            }
            __syncwarp();
        }
    }
#pragma unroll
    for (int j = 0; j < FA_QPW; j++) {
        const float lt = aha_warp_sum(l[j]);
        if (pos[j] < 0) continue;
        const int i = pos[j] - p0;
        const float inv = 1.0f / lt;
        if (OUT) {
            float *orow = out + (long)i * H * D + (long)h * D + lane * C;
#pragma unroll
            for (int c = 0; c < C; c++) orow[c] = o[j][c] * inv;
        }
        if (row_max && lane == 0) { // (a routed call asks for none)
            row_max[(long)i * H + h] = m[j];
            row_sum[(long)i * H + h] = lt;
        }
    }
}

// One block per head: ascending index lists of its global and local queries
// (ballot + block scan), and the FLOP counts of aha_route_visible.
__global__ void __launch_bounds__(1024) route_compact_kernel(const uint8_t *gate, int n, int H, int D, int p0,
                                     int window, int sinks, int *idx, int *count,
                                     unsigned long long *flops) {
    const int h = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    __shared__ int wg[32], wl[32];
    __shared__ unsigned long long red[2][32];
    int *ig = idx + (long)h * n, *il = idx + ((long)H + h) * n;
    int carry_g = 0, carry_l = 0;
    unsigned long long e = 0, f = 0;
    const unsigned lt_mask = (1u << lane) - 1;
    for (int base = 0; base < n; base += blockDim.x) {
        const int i = base + threadIdx.x;
        const bool valid = i < n;
        const bool g = valid && gate[(long)i * H + h];
        const unsigned bg = __ballot_sync(0xffffffffu, g), bl = __ballot_sync(0xffffffffu, valid && !g);
        if (lane == 0) {
            wg[warp] = __popc(bg);
            wl[warp] = __popc(bl);
        }
        __syncthreads();
        int og = carry_g, ol = carry_l, tg = 0, tl = 0;
        for (int w = 0; w < nwarps; w++) {
            if (w < warp) {
                og += wg[w];
                ol += wl[w];
            }
            tg += wg[w];
            tl += wl[w];
        }
        if (valid) {
            if (g) ig[og + __popc(bg & lt_mask)] = i;
            else il[ol + __popc(bl & lt_mask)] = i;
            e += (unsigned long long)aha_route_visible(p0 + i, g, window, sinks);
            f += (unsigned long long)(p0 + i + 1);
        }
        carry_g += tg;
        carry_l += tl;
        __syncthreads(); // wg / wl reused
    }
    for (int o = 16; o > 0; o >>= 1) {
        e += __shfl_xor_sync(0xffffffffu, e, o);
        f += __shfl_xor_sync(0xffffffffu, f, o);
    }
    if (lane == 0) {
        red[0][warp] = e;
        red[1][warp] = f;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long te = 0, tf = 0;
        for (int w = 0; w < nwarps; w++) {
            te += red[0][w];
            tf += red[1][w];
        }
        atomicAdd(&flops[0], 4ull * D * te);
        atomicAdd(&flops[1], 4ull * D * tf);
        count[h * 2] = carry_g;
        count[h * 2 + 1] = carry_l;
    }
}

extern "C" int aha_attention_cuda_supports(int head_dim) {
    return head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 256;
}

template <int D, bool ROUTED, bool OUT>
static int launch(dim3 grid, cudaStream_t st, float *out, const float *q, const float *k,
                  const float *v, const aha_attn_shape *s, int n, int p0, const int *idx,
                  const int *count, int window, int sinks, float *row_max, float *row_sum) {
    constexpr size_t smem = fa_smem<D>();
    static unsigned long long attr_done; // per device, per instantiation
    if (aha_smem_attr(flash_attn_kernel<D, ROUTED, OUT>, (int)smem, &attr_done)) return -1;
    AHA_LAUNCH(grid, FA_WARPS * 32, smem, st, flash_attn_kernel<D, ROUTED, OUT>)(
        out, q, k, v, s->n_heads, s->n_heads / s->n_kv, s->q_stride, s->kv_stride, n, p0,
        aha_attn_scale(s), s->softcap, idx, count, window, sinks, row_max, row_sum);
    cudaLaunchCheck();
    return 0;
}

template <bool ROUTED, bool OUT = true>
static int dispatch(dim3 grid, cudaStream_t st, float *out, const float *q, const float *k,
                    const float *v, const aha_attn_shape *s, int n, int p0, const int *idx,
                    const int *count, int window, int sinks, float *row_max, float *row_sum) {
#define FA_GO(D_) launch<D_, ROUTED, OUT>(grid, st, out, q, k, v, s, n, p0, idx, count, window, sinks, row_max, row_sum)
    if (!tile_shape_ok(s, ROUTED, 1, "aha attention (CUDA)")) return -1;
    switch (s->head_dim) {
    case 64: return FA_GO(64);
    case 96: return FA_GO(96);
    case 128: return FA_GO(128);
    case 256: return FA_GO(256);
    }
#undef FA_GO
    aha_err("aha attention (CUDA): head_dim %d not built (64, 96, 128, 256)", s->head_dim);
    return -1;
}

extern "C" int aha_attention_cuda(float *out, const float *q, const float *k, const float *v,
                                  const aha_attn_shape *s, int n, int p0, float *row_max,
                                  float *row_sum, cudaStream_t st) {
    if (n <= 0) return 0;
    dim3 grid(aha_ceil_div(n, FA_QB), s->n_heads, 1);
    if (!out) {
        if (!row_max || !row_sum) {
            aha_err("aha_attention_cuda: neither an output nor row statistics asked for");
            return -1;
        }
        return dispatch<false, false>(grid, st, out, q, k, v, s, n, p0, NULL, NULL, s->window, 0, row_max, row_sum);
    }
    return dispatch<false>(grid, st, out, q, k, v, s, n, p0, NULL, NULL, s->window, 0, row_max, row_sum);
}

extern "C" int aha_route_ws_alloc(aha_route_ws *ws, int n_max, int n_heads) {
    ws->n_max = n_max;
    ws->n_heads = n_heads;
    ws->idx = NULL, ws->count = NULL, ws->flops = NULL; // aha_route_ws_free frees what was made
    cudaCheck(cudaMalloc(&ws->idx, sizeof(int) * 2 * (size_t)n_heads * n_max));
    cudaCheck(cudaMalloc(&ws->count, sizeof(int) * 2 * (size_t)n_heads));
    cudaCheck(cudaMalloc(&ws->flops, sizeof(unsigned long long) * 2));
    cudaCheck(cudaMemset(ws->flops, 0, sizeof(unsigned long long) * 2));
    cudaCheck(cudaDeviceSynchronize()); // that memset ran on the legacy stream: done before any other stream reads
    return 0;
}

extern "C" void aha_route_ws_free(aha_route_ws *ws) {
    cudaFree(ws->idx);
    cudaFree(ws->count);
    cudaFree(ws->flops);
    ws->idx = NULL;
    ws->count = NULL;
    ws->flops = NULL;
}

extern "C" int aha_route_ws_flops(aha_route_ws *ws, aha_attn_flops *f, cudaStream_t st) {
    unsigned long long h[2];
    cudaCheck(cudaMemcpyAsync(h, ws->flops, sizeof h, cudaMemcpyDeviceToHost, st));
    cudaCheck(cudaStreamSynchronize(st));
    cudaCheck(cudaMemsetAsync(ws->flops, 0, sizeof h, st));
    f->executed += (double)h[0];
    f->full += (double)h[1];
    return 0;
}

extern "C" int aha_route_compact_cuda(const uint8_t *gate, int n, int n_heads, int head_dim, int p0,
                                      int window, int sinks, aha_route_ws *ws, cudaStream_t st) {
    if (n > ws->n_max || n_heads != ws->n_heads) {
        aha_err("aha_route_compact_cuda: %d queries x %d heads, workspace for %d x %d", n,
                n_heads, ws->n_max, ws->n_heads);
        return -1;
    }
    AHA_LAUNCH(n_heads, 1024, 0, st, route_compact_kernel)(gate, n, n_heads, head_dim, p0, window, sinks,
                                                            ws->idx, ws->count, ws->flops);
    cudaLaunchCheck();
    return 0;
}

extern "C" int aha_attention_routed_cuda(float *out, const float *q, const float *k,
                                         const float *v, const aha_attn_shape *s, int n, int p0,
                                         int window, int sinks, const uint8_t *gate,
                                         aha_route_ws *ws, cudaStream_t st) {
    if (n <= 0) return 0;
    if (n > ws->n_max) {
        aha_err("aha_attention_routed_cuda: %d queries, workspace for %d", n, ws->n_max);
        return -1;
    }
    if (s->n_heads != ws->n_heads || window < 1 || sinks < 0) {
        aha_err("aha_attention_routed_cuda: bad heads %d (ws %d), window %d or sinks %d",
                s->n_heads, ws->n_heads, window, sinks);
        return -1;
    }
    if (!tile_shape_ok(s, 1, 1, "aha_attention_routed_cuda")) return -1;
    if (!aha_attention_cuda_supports(s->head_dim)) {
        aha_err("aha attention (CUDA): head_dim %d not built (64, 96, 128, 256)", s->head_dim);
        return -1;
    }
    // Index lists are laid out with stride n (this call's count), not n_max.
    AHA_LAUNCH(s->n_heads, 1024, 0, st, route_compact_kernel)(gate, n, s->n_heads, s->head_dim, p0, window,
                                                       sinks, ws->idx, ws->count, ws->flops);
    cudaLaunchCheck();
    dim3 grid(aha_ceil_div(n, FA_QB), s->n_heads, 2);
    return dispatch<true>(grid, st, out, q, k, v, s, n, p0, ws->idx, ws->count, window, sinks,
                          NULL, NULL);
}
