#include "dependency.h"

#include <math.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

void aha_dependency(const float *p, int t, int sinks, const float *eps, int n_eps, uint32_t *d) {
    // m_out(w) = C(t - w) with C(k) = sum_{sinks <= j <= k} p[j], nondecreasing in k.
    // So d = t - k*, k* = max { k : C(k) <= eps } (k* = sinks - 1 when even
    // the first non-sink key exceeds eps), clamped to >= 1.
    for (int e = 0; e < n_eps; e++) d[e] = 0;
    int left = n_eps;
    double c = 0;
    int s = sinks < t + 1 ? sinks : t + 1;
    for (int k = s; k <= t && left; k++) {
        c += p[k];
        for (int e = 0; e < n_eps; e++) {
            if (d[e] == 0 && c > aha_dep_threshold(eps[e])) { // k is the first key past eps: k* = k - 1
                int w = t - (k - 1);
                d[e] = (uint32_t)(w < 1 ? 1 : w);
                left--;
            }
        }
    }
    for (int e = 0; e < n_eps; e++)
        if (d[e] == 0) d[e] = 1; // every key up to t fits under eps
}

// aha_dependency of one row into d[e * d_estride], 32 eps per call.
static void dep_row(const float *p, int t, int sinks, const float *eps, int n_eps, uint32_t *d, long d_estride) {
    for (int e0 = 0; e0 < n_eps; e0 += 32) {
        uint32_t one[32];
        const int ne = n_eps - e0 < 32 ? n_eps - e0 : 32;
        aha_dependency(p, t, sinks, eps + e0, ne, one);
        for (int e = 0; e < ne; e++) d[(e0 + e) * d_estride] = one[e];
    }
}

#if defined(__AVX2__)
#define DEP_ROWS 16 // rows per group: 4 chains of 4 lanes hide vaddpd's latency

// One key k of lane r (row rows[r]): c already includes p[k]. Every eps it
// crosses gets d = t - (k - 1) (>= 1), as in aha_dependency; the lane's
// threshold becomes the smallest eps still open (+inf: none).
static void dep_lane_key(double c, int k, int t, const float *eps, int n_eps, uint32_t *d, long d_estride,
                         double *thr) {
    double next = INFINITY;
    for (int e = 0; e < n_eps; e++) {
        uint32_t *de = d + e * d_estride;
        if (*de != 0) continue;
        const double lim = aha_dep_threshold(eps[e]);
        if (c > lim) {
            int w = t - (k - 1);
            *de = (uint32_t)(w < 1 ? 1 : w);
        } else if (lim < next) {
            next = lim;
        }
    }
    *thr = next;
}

// DEP_ROWS rows from t0 (t0 + 1 >= sinks), keys sinks .. t0 + DEP_ROWS - 1:
// four keys at a time, transposed so that a vector holds one key of 4 rows.
// A block where some lane passes its threshold is redone lane by lane from
// the sums before it, with the same additions in the same order.
static void dep_group(const float *p, long stride, int t0, int sinks, const float *eps, int n_eps, uint32_t *d,
                      long d_estride, long d_rstride) {
    enum { V = DEP_ROWS / 4 };
    __m256d c[V], thr[V];
    double thr_s[DEP_ROWS];
    for (int r = 0; r < DEP_ROWS; r++) {
        for (int e = 0; e < n_eps; e++) d[e * d_estride + r * d_rstride] = 0;
        thr_s[r] = INFINITY;
        for (int e = 0; e < n_eps; e++)
            if (aha_dep_threshold(eps[e]) < thr_s[r]) thr_s[r] = aha_dep_threshold(eps[e]);
    }
    for (int v = 0; v < V; v++) c[v] = _mm256_setzero_pd(), thr[v] = _mm256_loadu_pd(thr_s + 4 * v);
    const int k_end = t0 + DEP_ROWS; // keys sinks .. k_end - 1
    int k = sinks;
    for (; k + 4 <= k_end; k += 4) {
        __m256d before[V];
        int hit = 0;
        for (int v = 0; v < V; v++) {
            const float *b = p + (long)(4 * v) * stride + k;
            __m128 r0 = _mm_loadu_ps(b), r1 = _mm_loadu_ps(b + stride);
            __m128 r2 = _mm_loadu_ps(b + 2 * stride), r3 = _mm_loadu_ps(b + 3 * stride);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3); // r_j: key k + j of the 4 rows
            before[v] = c[v];
            __m256d x = c[v];
            x = _mm256_add_pd(x, _mm256_cvtps_pd(r0));
            __m256d m = _mm256_cmp_pd(x, thr[v], _CMP_GT_OQ);
            x = _mm256_add_pd(x, _mm256_cvtps_pd(r1));
            m = _mm256_or_pd(m, _mm256_cmp_pd(x, thr[v], _CMP_GT_OQ));
            x = _mm256_add_pd(x, _mm256_cvtps_pd(r2));
            m = _mm256_or_pd(m, _mm256_cmp_pd(x, thr[v], _CMP_GT_OQ));
            x = _mm256_add_pd(x, _mm256_cvtps_pd(r3));
            m = _mm256_or_pd(m, _mm256_cmp_pd(x, thr[v], _CMP_GT_OQ));
            c[v] = x;
            hit |= _mm256_movemask_pd(m) << (4 * v);
        }
        if (!hit) continue;
        int open = 0;
        for (int v = 0; v < V; v++) {
            double cb[4], thr_v[4];
            _mm256_storeu_pd(cb, before[v]);
            _mm256_storeu_pd(thr_v, thr[v]);
            for (int l = 0; l < 4; l++) {
                const int r = 4 * v + l;
                if (hit >> r & 1) {
                    double x = cb[l];
                    for (int j = 0; j < 4; j++) {
                        x += p[(long)r * stride + k + j];
                        if (x > thr_v[l])
                            dep_lane_key(x, k + j, t0 + r, eps, n_eps, d + r * d_rstride, d_estride, &thr_v[l]);
                    }
                }
                open += thr_v[l] != INFINITY;
            }
            thr[v] = _mm256_loadu_pd(thr_v);
        }
        if (!open) { // every row has every eps (a NaN eps is never met: it stays 0, then 1)
            k = k_end;
            break;
        }
    }
    double cs[DEP_ROWS];
    for (int v = 0; v < V; v++) _mm256_storeu_pd(cs + 4 * v, c[v]), _mm256_storeu_pd(thr_s + 4 * v, thr[v]);
    for (int r = 0; r < DEP_ROWS; r++) {
        for (int j = k; j < k_end; j++) { // the last keys, one lane at a time
            cs[r] += p[(long)r * stride + j];
            if (cs[r] > thr_s[r]) dep_lane_key(cs[r], j, t0 + r, eps, n_eps, d + r * d_rstride, d_estride, &thr_s[r]);
        }
        for (int e = 0; e < n_eps; e++)
            if (d[e * d_estride + r * d_rstride] == 0) d[e * d_estride + r * d_rstride] = 1;
    }
}
#endif

void aha_dependency_rows(const float *p, long stride, int n, int t0, int sinks, const float *eps, int n_eps,
                         uint32_t *d, long d_estride, long d_rstride) {
    int r = 0;
#if defined(__AVX2__)
    // Rows that see nothing past the sinks (t0 + r + 1 < sinks) go one at a time below.
    int r0 = sinks - 1 - t0 > 0 ? sinks - 1 - t0 : 0;
    for (r = r0; r + DEP_ROWS <= n; r += DEP_ROWS)
        dep_group(p + r * stride, stride, t0 + r, sinks, eps, n_eps, d + r * d_rstride, d_estride, d_rstride);
    for (int i = 0; i < r0 && i < n; i++) dep_row(p + i * stride, t0 + i, sinks, eps, n_eps, d + i * d_rstride, d_estride);
    if (r0 > n) r = n;
#endif
    for (; r < n; r++) dep_row(p + r * stride, t0 + r, sinks, eps, n_eps, d + r * d_rstride, d_estride);
}

void aha_dependency_mass(const float *p, int t, int sinks, const int *w, int n_w, float *far, float *sink) {
    // One running sum C(k) over keys sinks..k, read at each window's last
    // out-of-window key k = t - w, visited in ascending k (n_w is small).
    int order[64], n = 0; // callers pass at most AHA_MAX_WINDOWS (32)
    for (int i = 0; i < n_w && i < 64; i++) {
        int j = n++;
        while (j > 0 && w[order[j - 1]] < w[i]) order[j] = order[j - 1], j--; // w descending = k ascending
        order[j] = i;
    }
    const int s = sinks < t + 1 ? sinks : t + 1;
    double c = 0;
    for (int j = 0; j < s; j++) c += p[j];
    *sink = (float)c;
    c = 0;
    int k = s, o = 0;
    for (; o < n && t - w[order[o]] < s; o++) far[order[o]] = 0.0f; // nothing out of window
    for (; o < n; o++) {
        const int end = t - w[order[o]];
        for (; k <= end; k++) c += p[k];
        far[order[o]] = (float)c;
    }
}

void aha_window_error(const float *p, const float *v, int stride, int D, int t, int sinks,
                      const int *w, int n_w, float *err) {
    double o[AHA_WERR_MAX_DIM], ow[AHA_WERR_MAX_DIM], norm = 0; // callers check D
    for (int i = 0; i < D; i++) o[i] = 0;
    for (int j = 0; j <= t; j++)
        for (int i = 0; i < D; i++) o[i] += (double)p[j] * v[(long)j * stride + i];
    for (int i = 0; i < D; i++) norm += o[i] * o[i];
    norm = sqrt(norm);
    for (int k = 0; k < n_w; k++) {
        int lo = t - w[k] + 1 > 0 ? t - w[k] + 1 : 0;
        double mass = 0;
        for (int i = 0; i < D; i++) ow[i] = 0;
        int s_end = sinks < lo ? sinks : lo; // sinks not already inside the window
        for (int j = 0; j <= t; j++) {
            if (j == s_end && j < lo) j = lo;
            mass += p[j];
            for (int i = 0; i < D; i++) ow[i] += (double)p[j] * v[(long)j * stride + i];
        }
        double diff = 0;
        for (int i = 0; i < D; i++) {
            double x = ow[i] / mass - o[i];
            diff += x * x;
        }
        // mass 0: every window probability underflowed; the window sees nothing.
        err[k] = mass <= 0 ? 1.0f : norm > 0 ? (float)(sqrt(diff) / norm) : 0.0f;
    }
}
