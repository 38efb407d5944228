// The kernels built with -ffast-math (see the Makefile): it lets GCC call
// glibc's vector expf. Scalar expf in the softmax of long rows and in SwiGLU
// was the largest non-BLAS cost of a prefill. Accuracy stays within a few ulp.
//
// Sums run over fixed blocks of LANES values into LANES partial sums, so the
// result depends on the index order only, never on the row's address (a
// vectorised loop peeled for alignment would sum differently per address).
#include "kl_round.h"
#include "ops.h"

#include <math.h>
#include <string.h>

#define LANES 16

static float row_max(const float *x, int n) {
    float mx = x[0]; // not -INFINITY: fast-math assumes finite values
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

// sum of exp(x[i] - shift), in double partial sums.
static double sum_exp(const float *x, int n, float shift) {
    double acc[LANES] = {0}, sum = 0;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += expf(x[i + j] - shift);
    for (; i < n; i++) acc[i % LANES] += expf(x[i] - shift);
    for (int j = 0; j < LANES; j++) sum += acc[j];
    return sum;
}

void aha_softmax(float *x, int n) {
    const float mx = row_max(x, n);
    for (int i = 0; i < n; i++) x[i] = expf(x[i] - mx);
    double acc[LANES] = {0}, sum = 0;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j];
    for (; i < n; i++) acc[i % LANES] += x[i];
    for (int j = 0; j < LANES; j++) sum += acc[j];
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}

// x / (1 + e^t) with e^t capped at e^80: fast-math divides by a reciprocal
// estimate refined by Newton, which makes 1 / inf NaN (a SwiGLU gate below
// -88 came out NaN); x / (1 + e^80) is 0 to float precision for any gate.
static inline float div_1p_exp(float x, float t) { return x / (1.0f + expf(fminf(t, 80.0f))); }

void aha_swiglu(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) gate[i] = div_1p_exp(gate[i], -gate[i]) * up[i];
}

// PyTorch's gelu(approximate="tanh"), 0.5 x (1 + tanh(u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3), written as x * sigmoid(2u), the same
// function through the vector expf: scalar tanhf was 11% of a Gemma-3 prefill.
void aha_geglu(float *gate, const float *up, int n) {
    const float beta2 = (float)(M_SQRT2 * M_2_SQRTPI), kappa = 0.044715f; // 2 sqrt(2/pi)
    for (int i = 0; i < n; i++) {
        const float x = gate[i];
        gate[i] = div_1p_exp(x, -beta2 * (x + kappa * x * x * x)) * up[i];
    }
}

// cap * tanh(x / cap) (HF: x / cap, tanh, * cap) through glibc's vector
// tanhf, LANES at a time, the tail padded into a block of its own: every
// value goes through the one vectorised copy (noinline: GCC otherwise inlines
// a scalar-tanhf copy for the tail), so a score's value does not depend on
// where its row starts. Scalar tanhf on every attention score of a Gemma-2
// prefill cost about as much as the rest of the attention.
__attribute__((noinline)) static void softcap_block(float *x, float cap) {
#pragma omp simd
    for (int j = 0; j < LANES; j++) x[j] = cap * tanhf(x[j] / cap);
}

void aha_softcap(float *x, int n, float cap) {
    int i = 0;
    for (; i + LANES <= n; i += LANES) softcap_block(x + i, cap);
    if (i == n) return;
    float tail[LANES] = {0};
    memcpy(tail, x + i, (size_t)(n - i) * sizeof(float));
    softcap_block(tail, cap);
    memcpy(x + i, tail, (size_t)(n - i) * sizeof(float));
}

float aha_logsumexp(const float *x, int n) {
    const float mx = row_max(x, n);
    return mx + (float)log(sum_exp(x, n, mx));
}

// KL = sum_i P_i (p_i - q_i) - (lp - lq) sum_i P_i with P = softmax(p): written
// so that identical rows give exactly 0 under any reassociation fast-math does.
float aha_kl_logits(const float *p, const float *q, int n) {
    const float lp = aha_logsumexp(p, n), lq = aha_logsumexp(q, n);
    double acc[LANES] = {0}, mass[LANES] = {0}, kl = 0, total = 0;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            float e = expf(p[i + j] - lp);
            acc[j] += e * (p[i + j] - q[i + j]);
            mass[j] += e;
        }
    for (; i < n; i++) {
        float e = expf(p[i] - lp);
        acc[i % LANES] += e * (p[i] - q[i]);
        mass[i % LANES] += e;
    }
    for (int j = 0; j < LANES; j++) kl += acc[j], total += mass[j];
    kl -= ((double)lp - lq) * total;
    return (float)aha_kl_settle(kl, lp, lq); // a true 0 rounds slightly negative (kl_round.h)
}
