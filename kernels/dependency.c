#include "dependency.h"

#include <math.h>

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
            if (d[e] == 0 && c > eps[e]) { // k is the first key past eps: k* = k - 1
                int w = t - (k - 1);
                d[e] = (uint32_t)(w < 1 ? 1 : w);
                left--;
            }
        }
    }
    for (int e = 0; e < n_eps; e++)
        if (d[e] == 0) d[e] = 1; // every key up to t fits under eps
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
