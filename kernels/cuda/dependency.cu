// The dependency pass on the device (CUDA twin of kernels/dependency.c as
// aha_attention_head calls it with obs set).
//
// Contract, per (query i, head h), t = p0 + i, with p[j] the causal softmax
// probabilities of the row (scores as tile_score makes them: scaled,
// softcapped; on a natively local layer, s->window = w, p[j] = 0 for
// j <= t - w, as aha_attention leaves the row):
//   d_eps[e] = min { w >= 1 : sum_{sinks <= j <= t-w} p[j] <= eps[e] }, in 1..t+1;
//   werr[k]  = || o_w - o || / || o ||, o = sum_j p[j] v[j], o_w the output
//              renormalised over the window t-w[k]+1..t plus the sinks
//              (1 when the window's mass underflows to 0, 0 when o = 0);
//   far[k]   = sum_{sinks <= j <= t-mw[k]} p[j] (0 when t - mw[k] < sinks) and
//   sink     = sum_{j < min(sinks, t+1)} p[j] (the mass split, obs->n_mass).
//
// Two passes. Pass 1 is the flash kernel (aha_attention_cuda with row_max /
// row_sum): each row's softmax max m and sum l. Pass 2 (this file), one warp
// per row: p[j] = expf(s_j - m) * (1 / l) recomputed in chunks of 32 keys
// (lane = key), an inclusive warp scan (double, like the CPU's running sum)
// of the mass from key `sinks` on, and a ballot per eps finds the first key
// whose cumulative mass exceeds it; the mass split reads the same scan at
// each mass window's last out-of-window key t - w (a shuffle from its lane)
// and warp-sums the sinks' probabilities. With windows, the same forward sweep
// accumulates o (and the sinks' part), then a backward sweep from t down to
// the largest window's start accumulates the suffix sums, evaluating each
// window (sorted ascending) when the sweep reaches its start.
#include <math.h>
#include <string.h>

#include "../dependency.h"
#include "aha_cuda.h"
#include "common.cuh"
#include "tile.cuh"

#define DEP_WARPS 4

typedef struct {
    float thr[AHA_MAX_EPS]; // aha_dep_threshold of each eps, as the CPU pass compares
    unsigned open;          // bit e: eps e can be exceeded (below 1); the others stay d = 1
    int n_eps;
    int win[AHA_MAX_WINDOWS];  // ascending
    int widx[AHA_MAX_WINDOWS]; // their positions in obs->windows
    int n_win;
    int mwin[AHA_MAX_WINDOWS]; // mass split windows, as given
    int n_mass;
    int sinks;
} dep_args;

template <int D>
__device__ __forceinline__ float dep_prob(const float *qs, const float *kr, float scale, float softcap, float m,
                                          float inv) {
    // The same arithmetic as the flash kernel's score: sequential fmaf over d.
    float s = 0.0f;
#pragma unroll 8
    for (int d = 0; d < D; d++) s = fmaf(qs[d], __ldg(kr + d), s);
    return expf(tile_score(s, scale, softcap) - m) * inv;
}

template <int D>
__global__ void __launch_bounds__(DEP_WARPS * 32, 4)
dependency_kernel(const float *q, const float *k, const float *v, int H, int group, int q_stride,
                  int kv_stride, int n, int p0, float scale, float softcap, int window, const float *row_max,
                  const float *row_sum, const dep_args a, uint32_t *dep, float *werr, float *far,
                  float *sink) {
    constexpr int C = D / 32;
    __shared__ float qsm[DEP_WARPS][D];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const long row = (long)blockIdx.x * DEP_WARPS + warp;
    if (row >= (long)n * H) return; // warp-uniform; no block barriers below
    // Head-major rows: a block's warps are consecutive queries of one head,
    // so they read the same keys (L1 / L2 reuse).
    const int i = (int)row % n, h = (int)row / n, t = p0 + i;
    const float *qr = q + (long)i * q_stride + (long)h * D;
    const float *kh = k + (long)(h / group) * D, *vh = v + (long)(h / group) * D;
    float *qs = qsm[warp];
#pragma unroll
    for (int c = 0; c < C; c++) qs[lane + 32 * c] = qr[lane + 32 * c];
    __syncwarp();
    const float m = row_max[(long)i * H + h], inv = 1.0f / row_sum[(long)i * H + h];
    const int s0 = a.sinks < t + 1 ? a.sinks : t + 1;
    // A natively local layer: keys before wlo have p = 0; the sweeps start
    // at wlo's chunk (base0) and what lies before it is 0.
    const int wlo = window && t + 1 > window ? t - window + 1 : 0, base0 = wlo & ~31;
    const bool need_v = a.n_win > 0;
    unsigned pending = a.open; // eps not yet resolved
    uint32_t d_lane = 1; // lane e holds d[e]
    // The mass split scans up to the last out-of-window key of the smallest window.
    int mass_end = -1;
    for (int k = 0; k < a.n_mass; k++) mass_end = max(mass_end, t - a.mwin[k]);
    double carry = 0, o[C], os[C], mass_all = 0, mass_sink = 0, sink_sum = 0;
#pragma unroll
    for (int c = 0; c < C; c++) o[c] = os[c] = 0;
    for (int base = base0; base <= t; base += 32) {
        const bool scan_mass = a.n_mass > 0 && (base < s0 || base <= mass_end);
        if (!need_v && !pending && !scan_mass) break;
        const int key = base + lane;
        const bool valid = key <= t;
        const float p = valid && key >= wlo ? dep_prob<D>(qs, kh + (long)key * kv_stride, scale, softcap, m, inv) : 0.0f;
        if (a.n_mass && base < s0) sink_sum += aha_warp_sum_d(valid && key < s0 ? (double)p : 0.0);
        if (pending || scan_mass) {
            double x = valid && key >= s0 ? (double)p : 0.0;
            for (int off = 1; off < 32; off <<= 1) {
                double y = __shfl_up_sync(0xffffffffu, x, off);
                if (lane >= off) x += y;
            }
            const double cum = carry + x;
            for (int k = 0; k < a.n_mass; k++) { // window k's last out-of-window key in this chunk
                const int end = t - a.mwin[k];
                if (end < base || end >= base + 32) continue;
                const double c = __shfl_sync(0xffffffffu, cum, end - base);
                if (lane == 0) far[((long)k * n + i) * H + h] = end < s0 ? 0.0f : (float)c;
            }
            for (int e = 0; e < a.n_eps; e++) {
                if (!(pending >> e & 1)) continue;
                const unsigned hit = __ballot_sync(0xffffffffu, valid && key >= s0 && cum > a.thr[e]);
                if (!hit) continue;
                const int kk = base + __ffs(hit) - 1; // first key past eps: k* = kk - 1
                const int w = t - (kk - 1);
                if (lane == e) d_lane = (uint32_t)(w < 1 ? 1 : w);
                pending &= ~(1u << e);
            }
            carry = __shfl_sync(0xffffffffu, cum, 31);
        }
        if (need_v) {
            const int nk = min(32, t + 1 - base);
            for (int kk = 0; kk < nk; kk++) {
                const float pk = __shfl_sync(0xffffffffu, p, kk);
                const float *vr = vh + (long)(base + kk) * kv_stride;
                mass_all += pk;
#pragma unroll
                for (int c = 0; c < C; c++) o[c] += (double)pk * vr[lane + 32 * c];
                if (base + kk < a.sinks) {
                    mass_sink += pk;
#pragma unroll
                    for (int c = 0; c < C; c++) os[c] += (double)pk * vr[lane + 32 * c];
                }
            }
        }
    }
    if (lane < a.n_eps) dep[((long)lane * n + i) * H + h] = d_lane;
    if (a.n_mass && lane == 0) {
        sink[(long)i * H + h] = (float)sink_sum;
        for (int k = 0; k < a.n_mass; k++)
            if (t - a.mwin[k] < base0) far[((long)k * n + i) * H + h] = 0.0f; // no key out of window (or none visible)
    }
    if (!need_v) return;
    double nrm = 0;
#pragma unroll
    for (int c = 0; c < C; c++) nrm += o[c] * o[c];
    nrm = sqrt(aha_warp_sum_d(nrm));
    double acc[C], acc_m = 0;
#pragma unroll
    for (int c = 0; c < C; c++) acc[c] = 0;
    int top = t; // keys top+1..t are in acc
    for (int wi = 0; wi < a.n_win; wi++) {
        const int lo = t - a.win[wi] + 1 > 0 ? t - a.win[wi] + 1 : 0;
        double mass, diff = 0;
        if (lo <= a.sinks) { // the window and the sinks cover every key
            mass = mass_all;
#pragma unroll
            for (int c = 0; c < C; c++) {
                double x = o[c] / mass - o[c];
                diff += x * x;
            }
        } else {
            const int from = max(lo, wlo); // keys before wlo add nothing
            while (top >= from) {
                const int nk = min(32, top - from + 1), key = top - lane;
                const float p = lane < nk ? dep_prob<D>(qs, kh + (long)key * kv_stride, scale, softcap, m, inv) : 0.0f;
                for (int kk = 0; kk < nk; kk++) {
                    const float pk = __shfl_sync(0xffffffffu, p, kk);
                    const float *vr = vh + (long)(top - kk) * kv_stride;
                    acc_m += pk;
#pragma unroll
                    for (int c = 0; c < C; c++) acc[c] += (double)pk * vr[lane + 32 * c];
                }
                top -= nk;
            }
            mass = mass_sink + acc_m;
#pragma unroll
            for (int c = 0; c < C; c++) {
                double x = (os[c] + acc[c]) / mass - o[c];
                diff += x * x;
            }
        }
        diff = aha_warp_sum_d(diff);
        if (lane == 0)
            werr[((long)a.widx[wi] * n + i) * H + h] =
                mass <= 0 ? 1.0f : nrm > 0 ? (float)(sqrt(diff) / nrm) : 0.0f;
    }
}

template <int D>
static int dep_launch(const float *q, const float *k, const float *v, const aha_attn_shape *s,
                       int n, int p0, const float *row_max, const float *row_sum,
                       const dep_args *a, uint32_t *dep, float *werr, float *far, float *sink,
                       cudaStream_t st) {
    const long rows = (long)n * s->n_heads;
    AHA_LAUNCH(aha_ceil_div(rows, DEP_WARPS), DEP_WARPS * 32, 0, st, dependency_kernel<D>)(
        q, k, v, s->n_heads, s->n_heads / s->n_kv, s->q_stride, s->kv_stride, n, p0,
        aha_attn_scale(s), s->softcap, s->window, row_max, row_sum, *a, dep, werr, far, sink);
    cudaLaunchCheck();
    return 0;
}

extern "C" int aha_dependency_cuda(const float *q, const float *k, const float *v,
                                   const aha_attn_shape *s, int n, int p0, const float *row_max,
                                   const float *row_sum, const aha_observe *obs, cudaStream_t st) {
    if (n <= 0 || (obs->n_eps == 0 && obs->n_windows == 0 && obs->n_mass == 0)) return 0;
    if (obs->n_eps > AHA_MAX_EPS || obs->n_windows > AHA_MAX_WINDOWS || obs->n_eps < 0 ||
        obs->n_windows < 0 || obs->sinks < 0 || obs->n_mass < 0 || obs->n_mass > AHA_MAX_WINDOWS) {
        aha_err("aha_dependency_cuda: %d eps (max %d), %d + %d windows (max %d), sinks %d",
                obs->n_eps, AHA_MAX_EPS, obs->n_windows, obs->n_mass, AHA_MAX_WINDOWS, obs->sinks);
        return -1;
    }
    if (!tile_shape_ok(s, 0, 1, "aha_dependency_cuda")) return -1;
    dep_args a;
    memset(&a, 0, sizeof a);
    a.n_eps = obs->n_eps;
    for (int e = 0; e < a.n_eps; e++) {
        a.thr[e] = (float)aha_dep_threshold(obs->eps[e]);
        if (!isinf(a.thr[e])) a.open |= 1u << e;
    }
    a.n_win = obs->n_windows;
    a.sinks = obs->sinks;
    a.n_mass = obs->n_mass;
    for (int k = 0; k < a.n_mass; k++) a.mwin[k] = obs->mass_windows[k];
    for (int w = 0; w < a.n_win; w++) { // insertion sort, ascending, stable
        int j = w;
        while (j > 0 && a.win[j - 1] > obs->windows[w]) {
            a.win[j] = a.win[j - 1];
            a.widx[j] = a.widx[j - 1];
            j--;
        }
        a.win[j] = obs->windows[w];
        a.widx[j] = w;
    }
    switch (s->head_dim) {
    case 64: return dep_launch<64>(q, k, v, s, n, p0, row_max, row_sum, &a, obs->dep, obs->werr, obs->far, obs->sink, st);
    case 96: return dep_launch<96>(q, k, v, s, n, p0, row_max, row_sum, &a, obs->dep, obs->werr, obs->far, obs->sink, st);
    case 128: return dep_launch<128>(q, k, v, s, n, p0, row_max, row_sum, &a, obs->dep, obs->werr, obs->far, obs->sink, st);
    case 256: return dep_launch<256>(q, k, v, s, n, p0, row_max, row_sum, &a, obs->dep, obs->werr, obs->far, obs->sink, st);
    }
    aha_err("aha_dependency_cuda: head_dim %d not built (64, 96, 128, 256)", s->head_dim);
    return -1;
}
