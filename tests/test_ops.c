// CPU kernels against plain double-precision loops written independently here.
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "frand.h"
#include "kl_round.h"
#include "ops.h"
#include "sampler.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) { return frand_next(&rng); }
static void fill(float *x, int n, float scale) {
    for (int i = 0; i < n; i++) x[i] = scale * frand();
}

// Naive causal GQA attention for query i at absolute position p0 + i.
static double naive_attn(const float *q, const float *k, const float *v, const aha_attn_shape *s,
                         int i, int p0, int h, int d) {
    int g = h / (s->n_heads / s->n_kv), D = s->head_dim, T = p0 + i + 1;
    double w[4096], mx = -1e300, sum = 0, out = 0;
    for (int j = 0; j < T; j++) {
        double dot = 0;
        for (int e = 0; e < D; e++)
            dot += (double)q[(long)i * s->q_stride + h * D + e] * k[(long)j * s->kv_stride + g * D + e];
        w[j] = dot / sqrt((double)D);
        mx = w[j] > mx ? w[j] : mx;
    }
    for (int j = 0; j < T; j++) sum += w[j] = exp(w[j] - mx);
    for (int j = 0; j < T; j++) out += w[j] / sum * v[(long)j * s->kv_stride + g * D + d];
    return out;
}

// An attention case: the shape, and n queries at positions p0..p0+n-1.
typedef struct {
    int n_heads, n_kv, head_dim; // query heads, KV heads, their width
    int n, p0;                   // queries, after p0 cached keys
} attn_case;

static void test_attention(attn_case c) {
    const int H = c.n_heads, KV = c.n_kv, D = c.head_dim, n = c.n, p0 = c.p0;
    aha_attn_shape s = {H, KV, D, H * D + H, KV * D, 0, 0, 0, 0}; // q rows carry H extra router values
    int T = p0 + n;
    float *q = malloc(sizeof(float) * n * s.q_stride), *k = malloc(sizeof(float) * T * s.kv_stride);
    float *v = malloc(sizeof(float) * T * s.kv_stride), *out = malloc(sizeof(float) * n * H * D);
    float *scratch = malloc(sizeof(float) * aha_attention_scratch(H, n, p0));
    fill(q, n * s.q_stride, 2.0f);
    fill(k, T * s.kv_stride, 2.0f);
    fill(v, T * s.kv_stride, 1.0f);
    aha_attention(out, q, k, v, &s, n, p0, scratch, NULL);
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++)
                CHECK_CLOSE(out[(long)i * H * D + h * D + d], naive_attn(q, k, v, &s, i, p0, h, d),
                            1e-5, 1e-5);
    free(q), free(k), free(v), free(out), free(scratch);
}

static void test_rope_pairings(void) {
    // llama.cpp stores Q/K with each head's rows permuted (d -> 2*(d % D/2) + d / (D/2));
    // adjacent-pair RoPE on permuted rows must equal rotate-half RoPE on the originals.
    enum { H = 3, D = 16 };
    float x[H * D], perm[H * D], inv_freq[D / 2];
    fill(x, H * D, 1.0f);
    for (int i = 0; i < D / 2; i++) inv_freq[i] = powf(10000.f, -2.0f * i / D);
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++) perm[h * D + 2 * (d % (D / 2)) + d / (D / 2)] = x[h * D + d];
    aha_rope(x, H, D, 37, inv_freq, 0);
    aha_rope(perm, H, D, 37, inv_freq, 1);
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++)
            CHECK_CLOSE(perm[h * D + 2 * (d % (D / 2)) + d / (D / 2)], x[h * D + d], 1e-6, 0);
    // position 0 is the identity; the rotation keeps each pair's norm
    float y[D], y0[D];
    fill(y, D, 1.0f);
    memcpy(y0, y, sizeof y);
    aha_rope(y, 1, D, 0, inv_freq, 0);
    for (int d = 0; d < D; d++) CHECK(y[d] == y0[d], "rope at position 0 changed dim %d", d);
    aha_rope(y, 1, D, 1000, inv_freq, 0);
    for (int i = 0; i < D / 2; i++)
        CHECK_CLOSE(hypot(y[i], y[i + D / 2]), hypot(y0[i], y0[i + D / 2]), 1e-6, 1e-6);
}

static void test_rmsnorm(void) {
    enum { N = 2048 };
    static float x[N], w[N], out[N];
    fill(x, N, 3.0f);
    fill(w, N, 1.0f);
    aha_rmsnorm(out, x, w, N, 1e-6f);
    double ss = 0;
    for (int i = 0; i < N; i++) ss += (double)x[i] * x[i];
    double r = 1 / sqrt(ss / N + 1e-6);
    for (int i = 0; i < N; i++) CHECK_CLOSE(out[i], w[i] * x[i] * r, 1e-6, 1e-6);
}

static void test_matmul(void) {
    enum { N = 5, IN = 33, OUT = 17 };
    float x[N * IN], w[OUT * IN], b[OUT], y[N * OUT], y1[OUT];
    fill(x, N * IN, 1), fill(w, OUT * IN, 1), fill(b, OUT, 1);
    aha_matmul(y, x, w, b, N, IN, OUT);
    aha_matmul(y1, x + 2 * IN, w, b, 1, IN, OUT); // the gemv path
    for (int t = 0; t < N; t++)
        for (int o = 0; o < OUT; o++) {
            double ref = b[o];
            for (int i = 0; i < IN; i++) ref += (double)x[t * IN + i] * w[o * IN + i];
            CHECK_CLOSE(y[t * OUT + o], ref, 1e-5, 1e-5);
            if (t == 2) CHECK_CLOSE(y1[o], ref, 1e-5, 1e-5);
        }
}

// GeGLU (PyTorch's tanh GELU) and SwiGLU over x in [-100, 100]: where exp
// overflows (x below about -6 for GeGLU, -88 for SwiGLU), the gate must come
// out 0, not NaN.
static void test_gated_units(void) {
    enum { N = 4099 };
    static float x[N], up[N], g[N], s[N];
    for (int i = 0; i < N; i++) x[i] = -100.0f + 200.0f * i / (N - 1);
    fill(up, N, 2.0f);
    memcpy(g, x, sizeof x), memcpy(s, x, sizeof x);
    aha_geglu(g, up, N);
    aha_swiglu(s, up, N);
    double worst_g = 0, worst_s = 0;
    for (int i = 0; i < N; i++) {
        const double v = x[i], u = up[i];
        const double rg = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))) * u;
        const double rs = v / (1 + exp(-v)) * u;
        // fmax drops a NaN: a non-finite gate counts as an infinite error
        worst_g = isfinite(g[i]) ? fmax(worst_g, fabs(g[i] - rg) / (1e-30 + fabs(v * u))) : INFINITY;
        worst_s = isfinite(s[i]) ? fmax(worst_s, fabs(s[i] - rs) / (1e-30 + fabs(v * u))) : INFINITY;
    }
    // relative to |x up|, the gate's scale: measured 1.6e-7 each (float rounding)
    CHECK(worst_g < 3e-7 && worst_s < 3e-7, "geglu %.3g, swiglu %.3g of |x up|", worst_g, worst_s);
}

// Softcapping (Gemma-2: scores cap 50, logits cap 30) against double tanh over
// [-300, 300]; and rows of every length 1..40 starting at 0, 3, 6, ... of one
// 64-value window equal the whole window's values: a row's tail goes through
// the same function as its body (the split and whole-head paths agree).
static void test_softcap(void) {
    enum { N = 6007 };
    static float x[N], y[N];
    const float caps[] = {50.0f, 30.0f};
    double worst = 0;
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < N; i++) x[i] = -300.0f + 600.0f * i / (N - 1);
        memcpy(y, x, sizeof x);
        aha_softcap(y, N, caps[c]);
        for (int i = 0; i < N; i++) {
            const double r = caps[c] * tanh((double)x[i] / caps[c]);
            // relative to the value, and to a ulp of the cap near 0
            worst = isfinite(y[i]) ? fmax(worst, fabs(y[i] - r) / (fabs(r) + 1e-7 * caps[c])) : INFINITY;
        }
    }
    float whole[64];
    memcpy(whole, x + 2000, sizeof whole);
    aha_softcap(whole, 64, 50.0f);
    long moved = 0;
    for (int len = 1; len <= 40; len++)
        for (int a = 0; a + len <= 64; a += 3) {
            float row[64];
            memcpy(row, x + 2000, sizeof row);
            aha_softcap(row + a, len, 50.0f);
            for (int i = a; i < a + len; i++) moved += row[i] != whole[i];
        }
    // measured 2.2e-7 (glibc's 16-lane tanhf; its 8-lane one 1.8e-7 over 200001 points)
    CHECK(worst < 3e-7, "softcap %.3g of the value", worst);
    CHECK(moved == 0, "%ld values changed with their row's start", moved);
}

static void test_logsumexp_kl(void) {
    enum { V = 49152 };
    static float p[V], q[V];
    fill(p, V, 8.0f);
    fill(q, V, 8.0f);
    double mp = -1e300, mq = -1e300, sp = 0, sq = 0, kl = 0;
    for (int i = 0; i < V; i++) mp = fmax(mp, p[i]), mq = fmax(mq, q[i]);
    for (int i = 0; i < V; i++) sp += exp(p[i] - mp), sq += exp(q[i] - mq);
    double lp = mp + log(sp), lq = mq + log(sq);
    for (int i = 0; i < V; i++) kl += exp(p[i] - lp) * ((p[i] - lp) - (q[i] - lq));
    CHECK_CLOSE(aha_logsumexp(p, V), lp, 1e-5, 1e-6);
    CHECK_CLOSE(aha_kl_logits(p, q, V), kl, 1e-5, 1e-4);
    CHECK(aha_kl_logits(p, p, V) == 0.0f, "KL of a distribution with itself must be 0");
    // q = p + 3: the same distribution, other logsumexp: 0 up to the bound, never below it.
    for (int i = 0; i < V; i++) q[i] = p[i] + 3.0f;
    float k0 = aha_kl_logits(p, q, V);
    CHECK(k0 >= 0 && k0 <= aha_kl_round_bound(lp, lp + 3), "KL of a shifted copy: %g", k0);
    // Rounding below 0 becomes 0; a KL negative beyond the bound stays as it is.
    CHECK(aha_kl_settle(-0.5 * aha_kl_round_bound(20, 20), 20, 20) == 0.0, "rounding is not settled to 0");
    CHECK(aha_kl_settle(-1e-3, 20, 20) == -1e-3, "a KL of -1e-3 was clamped: it must show");
    CHECK(aha_kl_settle(0.25, 20, 20) == 0.25, "a positive KL changed");
}

static void test_sampler(void) {
    enum { V = 100 };
    float logits[V];
    fill(logits, V, 3.0f);
    logits[42] = 10.0f;
    logits[7] = 10.0f; // ties: the first index wins, as torch.argmax
    aha_sampler s;
    aha_sampler_init(&s, V, 0.0f, 1.0f, 1);
    CHECK(aha_sample(&s, logits) == 7, "greedy picked %d", aha_sample(&s, logits));
    aha_sampler_free(&s);
    // top-p so small that only the top two tokens (7 and 42, ~half each) remain
    aha_sampler_init(&s, V, 1.0f, 0.5f, 123);
    int hits[V] = {0};
    for (int i = 0; i < 2000; i++) hits[aha_sample(&s, logits)]++;
    CHECK(hits[7] + hits[42] == 2000, "top-p let other tokens through");
    CHECK(hits[7] > 800 && hits[42] > 800, "tied tokens drawn %d / %d times", hits[7], hits[42]);
    aha_sampler_free(&s);
    // same seed, same draws; temperature 1 over all tokens follows the softmax
    aha_sampler a, b;
    aha_sampler_init(&a, V, 1.0f, 1.0f, 9);
    aha_sampler_init(&b, V, 1.0f, 1.0f, 9);
    float flat[V];
    for (int i = 0; i < V; i++) flat[i] = i < 50 ? 0.0f : (float)log(3.0);
    int high = 0, same = 1;
    for (int i = 0; i < 4000; i++) {
        int x = aha_sample(&a, flat);
        same &= x == aha_sample(&b, flat);
        high += x >= 50;
    }
    CHECK(same, "equal seeds gave different draws");
    CHECK(fabs(high / 4000.0 - 0.75) < 0.03, "P(high half) = %.3f, want 0.75", high / 4000.0);
    aha_sampler_free(&a), aha_sampler_free(&b);
}

// The first NaN or Inf of an array long enough that its blocks go to threads:
// each thread finds one in its own part, and the answer is the lowest index.
static void test_nonfinite(void) {
    enum { N = 300000 };
    static float x[N];
    fill(x, N, 100.0f);
    omp_set_num_threads(4);
    CHECK(aha_nonfinite(x, N) == -1, "finite array: %ld", aha_nonfinite(x, N));
    x[N - 1] = INFINITY;
    CHECK(aha_nonfinite(x, N) == N - 1, "Inf last: %ld", aha_nonfinite(x, N));
    x[250001] = NAN;
    CHECK(aha_nonfinite(x, N) == 250001, "NaN at 250001: %ld", aha_nonfinite(x, N));
    x[70003] = NAN, x[70000] = -INFINITY;
    CHECK(aha_nonfinite(x, N) == 70000, "-Inf at 70000: %ld", aha_nonfinite(x, N));
    x[5] = NAN;
    CHECK(aha_nonfinite(x, N) == 5 && aha_nonfinite(x, 5) == -1, "NaN at 5: %ld, before it %ld",
          aha_nonfinite(x, N), aha_nonfinite(x, 5));
}

int main(void) {
    TEST("attention MHA prefill", test_attention((attn_case){.n_heads = 4, .n_kv = 4, .head_dim = 16, .n = 9}));
    TEST("attention GQA 3:1 chunk after cache",
         test_attention((attn_case){.n_heads = 6, .n_kv = 2, .head_dim = 16, .n = 7, .p0 = 13}));
    TEST("attention GQA 4:1 decode", test_attention((attn_case){.n_heads = 8, .n_kv = 2, .head_dim = 64, .n = 1, .p0 = 40}));
    TEST("attention head_dim 128 GQA 8:1",
         test_attention((attn_case){.n_heads = 8, .n_kv = 1, .head_dim = 128, .n = 17, .p0 = 5}));
    TEST("rope adjacent pairs on permuted rows == rotate-half", test_rope_pairings());
    TEST("rmsnorm", test_rmsnorm());
    TEST("matmul gemm and gemv paths with bias", test_matmul());
    TEST("geglu and swiglu against double, exp overflow included", test_gated_units());
    TEST("softcap against double tanh; a row's start does not change its values", test_softcap());
    TEST("logsumexp and KL of 49152 logits against double", test_logsumexp_kl());
    TEST("sampler greedy, top-p, seeded distribution", test_sampler());
    TEST("nonfinite: the first NaN or Inf of 300000 values on 4 threads", test_nonfinite());
    TEST_EXIT();
}
