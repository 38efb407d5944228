// The dependency pass: from one row of causal attention probabilities, how
// far back attention reaches (docs/architecture.md, "The one quantity").
#pragma once
#include <math.h>
#include <stdint.h>

// p[0..t] are the probabilities of query position t over keys 0..t; the first
// `sinks` keys are always visible and never count as out of window.
// For each eps[e]: d[e] = min { w >= 1 : sum_{sinks <= j <= t-w} p[j] <= eps[e] },
// always in 1..t+1. eps need not be sorted.
void aha_dependency(const float *p, int t, int sinks, const float *eps, int n_eps, uint32_t *d);

// What the running sum C(k) is compared against for eps (d_eps's first key k
// with C(k) > threshold), exact at both ends: the out-of-window mass is at most
// 1, so eps >= 1 is never exceeded (d = 1) although a float sum may pass 1; at
// eps = 0 the sum exceeds 0 exactly when a key out of window has mass. The CPU
// pass and its CUDA twin (kernels/cuda/dependency.cu) both use it.
static inline double aha_dep_threshold(float eps) { return eps >= 1 ? INFINITY : eps; }

// aha_dependency of n consecutive queries at once, bit-identical to it: row r
// (p + r * stride) is the query at position t0 + r, and its keys past t0 + r
// are zero up to t0 + n - 1 (as aha_attention_head leaves them). d[e] of row r
// goes to d[e * d_estride + r * d_rstride]. Several rows' running sums advance
// side by side (each in its own order), so the additions' latency overlaps.
void aha_dependency_rows(const float *p, long stride, int n, int t0, int sinks, const float *eps, int n_eps,
                         uint32_t *d, long d_estride, long d_rstride);

// Where the row's mass lies, for each window w[k] (the quantity d_eps
// thresholds: d_eps > w[k] iff far[k] > eps): far[k] = sum_{sinks <= j <= t-w[k]} p[j]
// (0 when t - w[k] < sinks), and *sink = sum_{j < min(sinks, t+1)} p[j]. The
// window's mass is 1 - far - sink where the two do not overlap (t >= w + sinks).
void aha_dependency_mass(const float *p, int t, int sinks, const int *w, int n_w, float *far, float *sink);

#define AHA_WERR_MAX_DIM 512 // head_dim aha_window_error handles (its accumulators are on the stack)

// Relative L2 error of the sliding-window output against the full output, for
// each window w[k]: || o_w - o || / || o ||, where o = sum_j p[j] v[j] over
// 0..t and o_w renormalises p over the window t-w+1..t plus the sinks.
// v is [t+1, stride] (head slice, D <= AHA_WERR_MAX_DIM values used); err[k] per window.
void aha_window_error(const float *p, const float *v, int stride, int D, int t, int sinks,
                      const int *w, int n_w, float *err);
