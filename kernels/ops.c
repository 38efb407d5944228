#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void aha_matmul(float *y, const float *x, const float *w, const float *bias, int n, int in,
                int out) {
    if (n == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w, in, x, 1, 0.0f, y, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in,
                    0.0f, y, out);
    if (bias)
        for (int t = 0; t < n; t++)
            for (int i = 0; i < out; i++) y[(long)t * out + i] += bias[i];
}

void aha_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0; // double: the mean of squares of 2048+ values loses bits in float
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float r = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) out[i] = w[i] * (x[i] * r);
}

void aha_rope(float *x, int n_heads, int head_dim, int pos, const float *inv_freq, int adjacent) {
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        float ang = (float)pos * inv_freq[i]; // float32 like transformers
        float c = cosf(ang), s = sinf(ang);
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (long)h * head_dim;
            int a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
            float x0 = v[a], x1 = v[b];
            v[a] = x0 * c - x1 * s;
            v[b] = x1 * c + x0 * s;
        }
    }
}

long aha_nonfinite(const float *x, long n) {
    // An exponent of all ones is NaN or Inf; OR the test over blocks, which
    // vectorises, and look for the index only in a block that has one. The
    // blocks go to the threads (every logit of a record is checked: 8.6G at
    // 32768 tokens of Gemma-3) and the first index is their minimum.
    const long blk = 1024;
    long first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (n >= 64 * blk)
    for (long b = 0; b < n; b += blk) {
        const long e = b + blk < n ? b + blk : n;
        uint32_t bad = 0;
        for (long i = b; i < e; i++) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        for (long i = b; bad && i < e; i++)
            if (!isfinite(x[i])) {
                first = i < first ? i : first;
                break;
            }
    }
    return first < n ? first : -1;
}
