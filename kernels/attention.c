#include "attention.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>

#include "dependency.h"
#include "ops.h"

#define WBLOCK 64 // queries per band of keys on a natively local layer

void aha_attention_head(float *out, const float *qh, const float *kh, const float *vh,
                        const aha_attn_shape *s, int n, int p0, float *att,
                        const aha_observe *obs, int h) {
    const int H = s->n_heads, D = s->head_dim, T = p0 + n;
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
            int lo = s->window && len > s->window ? len - s->window : 0; // keys lo .. p0+i
            if (s->softcap) aha_softcap(row + lo, len - lo, s->softcap);
            aha_softmax(row + lo, len - lo);
            for (int j = 0; j < lo; j++) row[j] = 0.0f; // the dependency pass reads whole rows
            for (int j = len; j < T; j++) row[j] = 0.0f;
        }
        // The block's rows at once (each row's numbers as aha_dependency's).
        if (obs)
            aha_dependency_rows(att + (long)b0 * T, T, nb, p0 + b0, obs->sinks, obs->eps, obs->n_eps,
                                obs->dep + (long)b0 * H + h, (long)n * H, H);
        for (int i = b0; obs && i < b1; i++) {
            const float *row = att + (long)i * T;
            const int len = p0 + i + 1;
            if (obs->n_windows) {
                float err[AHA_MAX_WINDOWS];
                aha_window_error(row, vh, s->kv_stride, D, len - 1, obs->sinks, obs->windows,
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
    // One head per thread; BLAS runs single-threaded inside the region.
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < s->n_heads; h++)
        aha_attention_head(out + (long)h * D, q + (long)h * D, k + (long)(h / group) * D,
                           v + (long)(h / group) * D, s, n, p0,
                           scratch + (long)omp_get_thread_num() * n * (p0 + n), obs, h);
}
