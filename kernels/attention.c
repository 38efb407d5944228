#include "attention.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "dependency.h"
#include "ops.h"

#define WBLOCK 64 // queries per band of keys on a natively local layer

// Few queries (decode, the tail of a chunk) take dot products over the keys
// in place: BLAS packs all of K and V for one row (at 2048 keys, 3x the
// arithmetic's time). Three steps, each one head's numbers whatever the split,
// so the whole-head path (aha_attention_head: observed, routed all-global)
// and the split one (aha_attention, unobserved) agree bit for bit. Keys of
// query i: lo(i) .. p0+i.
#define FEW_COLS 64 // output columns one few_values call sums (a whole row at head_dim 64)

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

// q . k: one 8-lane accumulator over D, its lanes summed as
// ((0+1)+(2+3))+((4+5)+(6+7)), the order dot8's tree gives, so a key's score
// does not depend on which of the two computed it.
static float dot_d(const float *q, const float *k, int D) {
    __m256 a = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= D; d += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), a);
    float l[8];
    _mm256_storeu_ps(l, a);
    float s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (; d < D; d++) s += q[d] * k[d];
    return s;
}

// q . k of 8 keys (D a multiple of 8): an accumulator per key, then one
// transpose-and-add tree for all eight; a horizontal sum per key cost as
// much as the key's FMAs (decode at 2048 keys: a fifth of the step).
static __m256 dot8(const float *q, const float *k, long stride, int D) {
    __m256 a[8];
    for (int u = 0; u < 8; u++) a[u] = _mm256_setzero_ps();
    for (int d = 0; d < D; d += 8) {
        const __m256 qv = _mm256_loadu_ps(q + d);
        for (int u = 0; u < 8; u++) a[u] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + u * stride + d), a[u]);
    }
    // hadd: [x01 x23 y01 y23 | x45 x67 y45 y67]; twice: keys 0-3 (and 4-7) by 128-bit half
    const __m256 s0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 s1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20), _mm256_permute2f128_ps(s0, s1, 0x31));
}

// o[0..63] = sum over keys lo..len-1 of p_j v_j: 8 chains of FMAs, each v
// row's 64 floats (a whole D=64 row, every byte of its cache lines) at once.
static void axpy64(float *o, const float *p, const float *v, long stride, int lo, int len) {
    __m256 a[8];
    for (int u = 0; u < 8; u++) a[u] = _mm256_setzero_ps();
    for (int j = lo; j < len; j++) {
        const __m256 pj = _mm256_set1_ps(p[j]);
        const float *vj = v + j * stride;
        for (int u = 0; u < 8; u++) a[u] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * u), a[u]);
    }
    for (int u = 0; u < 8; u++) _mm256_storeu_ps(o + 8 * u, a[u]);
}
#else
static float dot_d(const float *q, const float *k, int D) {
    float s = 0;
    for (int d = 0; d < D; d++) s += q[d] * k[d];
    return s;
}
#endif

static int few_lo(const aha_attn_shape *s, int len) {
    return s->window && len > s->window ? len - s->window : 0;
}

// att[i, j] = scale q_i . k_j for keys j in [j0, j1) that query i sees.
static void few_scores(float *att, int T, const float *qh, const float *kh, const aha_attn_shape *s, int n,
                       int p0, int j0, int j1) {
    const float scale = aha_attn_scale(s);
    for (int i = 0; i < n; i++) {
        const int len = p0 + i + 1, lo = few_lo(s, len), a = j0 > lo ? j0 : lo, b = j1 < len ? j1 : len;
        const float *qi = qh + (long)i * s->q_stride;
        float *row = att + (long)i * T;
        int j = a;
#if defined(__AVX2__) && defined(__FMA__)
        for (; s->head_dim % 8 == 0 && j + 8 <= b; j += 8)
            _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_set1_ps(scale),
                                                    dot8(qi, kh + (long)j * s->kv_stride, s->kv_stride, s->head_dim)));
#endif
        for (; j < b; j++) row[j] = scale * dot_d(qi, kh + (long)j * s->kv_stride, s->head_dim);
    }
}

static void few_softmax(float *att, int T, const aha_attn_shape *s, int i, int p0) {
    const int len = p0 + i + 1, lo = few_lo(s, len);
    if (s->softcap) aha_softcap(att + (long)i * T + lo, len - lo, s->softcap);
    aha_softmax(att + (long)i * T + lo, len - lo);
}

// Output columns c*64.. of the head (fewer in a last band of a head_dim that
// is not a multiple of 64; any band without AVX2).
static void few_values(float *out, const float *att, int T, const float *vh, const aha_attn_shape *s, int n,
                       int p0, int c) {
    const int d0 = c * FEW_COLS, m = s->head_dim - d0 < FEW_COLS ? s->head_dim - d0 : FEW_COLS;
    for (int i = 0; i < n; i++) {
        const int len = p0 + i + 1, lo = few_lo(s, len);
        const float *pr = att + (long)i * T, *v = vh + d0;
        float *o = out + (long)i * s->n_heads * s->head_dim + d0;
#if defined(__AVX2__) && defined(__FMA__)
        if (m == FEW_COLS) {
            axpy64(o, pr, v, s->kv_stride, lo, len);
            continue;
        }
#endif
        for (int d = 0; d < m; d++) o[d] = 0.0f;
        for (int j = lo; j < len; j++)
            for (int d = 0; d < m; d++) o[d] += pr[j] * v[(long)j * s->kv_stride + d];
    }
}

size_t aha_attention_scratch(int n_heads, int n, int p0) {
    const int th = omp_get_max_threads(), rows = n <= AHA_ATTN_FEW_MAX && th < n_heads ? n_heads : th;
    return (size_t)rows * n * (p0 + n);
}

// All heads, few queries: keys in blocks (each block of K read once from
// memory for the heads sharing it), then values by head.
static void attention_few(float *out, const float *q, const float *k, const float *v, const aha_attn_shape *s,
                          int n, int p0, float *att) {
    enum { KEYS = 256 }; // a block of keys stays in L2 across the heads of a group
    const int H = s->n_heads, D = s->head_dim, group = H / s->n_kv, T = p0 + n;
    const int nb = (T + KEYS - 1) / KEYS, nc = (D + FEW_COLS - 1) / FEW_COLS;
#pragma omp parallel
    {
#pragma omp for collapse(2) schedule(static)
        for (int g = 0; g < s->n_kv; g++)
            for (int b = 0; b < nb; b++)
                for (int h = g * group; h < (g + 1) * group; h++)
                    few_scores(att + (long)h * n * T, T, q + (long)h * D, k + aha_attn_kv_head(s, g), s, n, p0,
                               b * KEYS, (b + 1) * KEYS);
#pragma omp for schedule(static)
        for (int hi = 0; hi < H * n; hi++) few_softmax(att + (long)(hi / n) * n * T, T, s, hi % n, p0);
#pragma omp for collapse(2) schedule(static) // consecutive heads share a group's V, from L2
        for (int h = 0; h < H; h++)
            for (int c = 0; c < nc; c++)
                few_values(out + (long)h * D, att + (long)h * n * T, T, v + aha_attn_kv_head(s, h / group), s,
                           n, p0, c);
    }
}

// Zero outside keys lo..len-1: the dependency pass reads whole rows.
static void zero_outside(float *row, int T, int lo, int len) {
    for (int j = 0; j < lo; j++) row[j] = 0.0f;
    for (int j = len; j < T; j++) row[j] = 0.0f;
}

// What obs records for queries b0..b1-1 of head h from their probability rows.
static void observe_rows(const float *att, int T, int b0, int b1, int n, int p0, const float *vh,
                         const aha_attn_shape *s, const aha_observe *obs, int h) {
    const int H = s->n_heads;
    // The block's rows at once (each row's numbers as aha_dependency's).
    aha_dependency_rows(att + (long)b0 * T, T, b1 - b0, p0 + b0, obs->sinks, obs->eps, obs->n_eps,
                        obs->dep + (long)b0 * H + h, (long)n * H, H);
    for (int i = b0; i < b1; i++) {
        const float *row = att + (long)i * T;
        const int len = p0 + i + 1;
        if (obs->n_windows) {
            float err[AHA_MAX_WINDOWS];
            aha_window_error(row, vh, s->kv_stride, s->head_dim, len - 1, obs->sinks, obs->windows,
                             obs->n_windows, err);
            for (int w = 0; w < obs->n_windows; w++) obs->werr[((long)w * n + i) * H + h] = err[w];
        }
        if (obs->n_mass) {
            float far[AHA_MAX_WINDOWS];
            aha_dependency_mass(row, len - 1, obs->sinks, obs->mass_windows, obs->n_mass, far,
                                obs->sink + (long)i * H + h);
            for (int w = 0; w < obs->n_mass; w++) obs->far[((long)w * n + i) * H + h] = far[w];
        }
    }
}

void aha_attention_head(float *out, const float *qh, const float *kh, const float *vh,
                        const aha_attn_shape *s, int n, int p0, float *att,
                        const aha_observe *obs, int h) {
    const int H = s->n_heads, D = s->head_dim, T = p0 + n;
    if (n <= AHA_ATTN_FEW_MAX) { // observed or not, the same numbers (routed all-global == observed)
        few_scores(att, T, qh, kh, s, n, p0, 0, T);
        for (int i = 0; i < n; i++) {
            few_softmax(att, T, s, i, p0);
            if (obs) zero_outside(att + (long)i * T, T, few_lo(s, p0 + i + 1), p0 + i + 1);
        }
        if (obs) observe_rows(att, T, 0, n, n, p0, vh, s, obs, h);
        for (int c = 0; c * FEW_COLS < D; c++) few_values(out, att, T, vh, s, n, p0, c);
        return;
    }
    // Causal: one block of every query over keys 0..T-1. A native window:
    // blocks of WBLOCK queries, each scoring only the keys its windows cover.
    const int bq = s->window ? WBLOCK : n;
    for (int b0 = 0; b0 < n; b0 += bq) {
        const int b1 = b0 + bq < n ? b0 + bq : n, nb = b1 - b0, k1 = p0 + b1; // keys k0..k1-1
        const int k0 = s->window && p0 + b0 - s->window + 1 > 0 ? p0 + b0 - s->window + 1 : 0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, k1 - k0, D, aha_attn_scale(s),
                    qh + (long)b0 * s->q_stride, s->q_stride, kh + (long)k0 * s->kv_stride, s->kv_stride,
                    0.0f, att + (long)b0 * T + k0, T);
        for (int i = b0; i < b1; i++) {
            float *row = att + (long)i * T;
            int len = p0 + i + 1; // keys 0 .. p0+i
            int lo = few_lo(s, len); // keys lo .. p0+i
            if (s->softcap) aha_softcap(row + lo, len - lo, s->softcap);
            aha_softmax(row + lo, len - lo);
            zero_outside(row, T, lo, len);
        }
        if (obs) observe_rows(att, T, b0, b1, n, p0, vh, s, obs, h);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, D, k1 - k0, 1.0f, att + (long)b0 * T + k0, T,
                    vh + (long)k0 * s->kv_stride, s->kv_stride, 0.0f, out + (long)b0 * H * D, H * D);
    }
}

double aha_attention_full_flops(const aha_attn_shape *s, int n, int p0) {
    // 4*D per visible key (QK^T and PV), keys 0..p for the query at p
    if (!s->window) return 4.0 * s->head_dim * s->n_heads * ((double)n * p0 + (double)n * (n + 1) / 2);
    double keys = 0; // the layer's own window: min(p + 1, window) keys
    for (int i = 0; i < n; i++) keys += p0 + i + 1 < s->window ? p0 + i + 1 : s->window;
    return 4.0 * s->head_dim * s->n_heads * keys;
}

void aha_attention(float *out, const float *q, const float *k, const float *v,
                   const aha_attn_shape *s, int n, int p0, float *scratch,
                   const aha_observe *obs) {
    const int D = s->head_dim, group = s->n_heads / s->n_kv;
    if (!obs && n <= AHA_ATTN_FEW_MAX) {
        attention_few(out, q, k, v, s, n, p0, scratch);
        return;
    }
    // One head per thread; BLAS runs single-threaded inside the region.
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < s->n_heads; h++)
        aha_attention_head(out + (long)h * D, q + (long)h * D, k + aha_attn_kv_head(s, h / group),
                           v + aha_attn_kv_head(s, h / group), s, n, p0,
                           scratch + (long)omp_get_thread_num() * n * (p0 + n), obs, h);
}
