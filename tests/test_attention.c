// Window, routed and observed attention and the dependency pass against
// brute-force double-precision references written here from the definitions.
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "frand.h"
#include "dependency.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { return frand_next(&rng); }

// Reference: one (query, head) attending to an explicit key set.
static void ref_attn(const float *q, const float *k, const float *v, const aha_attn_shape *s,
                     int i, int p, int h, const int *keys, int nk, double *o) {
    const int D = s->head_dim;
    const long g = aha_attn_kv_head(s, h / (s->n_heads / s->n_kv));
    double w[8192], mx = -1e300, sum = 0;
    for (int a = 0; a < nk; a++) {
        double dot = 0;
        for (int e = 0; e < D; e++)
            dot += (double)q[(long)i * s->q_stride + h * D + e] * k[(long)keys[a] * s->kv_stride + g + e];
        w[a] = dot * aha_attn_scale(s); // 1/sqrt(D) unless the shape sets a scale
        if (s->softcap) w[a] = s->softcap * tanh(w[a] / s->softcap);
        mx = w[a] > mx ? w[a] : mx;
    }
    for (int a = 0; a < nk; a++) sum += w[a] = exp(w[a] - mx);
    for (int d = 0; d < D; d++) {
        o[d] = 0;
        for (int a = 0; a < nk; a++) o[d] += w[a] / sum * v[(long)keys[a] * s->kv_stride + g + d];
    }
    (void)p;
}

// A routed-attention case: its shape, its queries, its routing.
typedef struct {
    int n_heads, n_kv, head_dim; // query heads, KV heads, their width
    int n, p0;                   // queries, at positions p0..p0+n-1 (p0 keys cached before them)
    int window, sinks;           // the local window (aha_route) and the sinks it always sees
    int pct_global;              // about this percent of the (query, head) gates are global
    float scale, softcap;        // the scores' scale (0: 1/sqrt(head_dim)) and softcap (0: none)
} routed_case;

static void test_routed(routed_case c) {
    const int H = c.n_heads, KV = c.n_kv, D = c.head_dim, n = c.n, p0 = c.p0, w = c.window, sinks = c.sinks;
    aha_attn_shape s = {H, KV, D, H * D, KV * D, c.scale, c.softcap, 0, 0};
    int T = p0 + n;
    float *q = malloc(sizeof(float) * n * H * D), *k = malloc(sizeof(float) * T * KV * D);
    float *v = malloc(sizeof(float) * T * KV * D), *out = malloc(sizeof(float) * n * H * D);
    uint8_t *gate = malloc(n * H);
    for (long i = 0; i < (long)n * H * D; i++) q[i] = 2 * frand();
    for (long i = 0; i < (long)T * KV * D; i++) k[i] = 2 * frand(), v[i] = frand();
    for (int i = 0; i < n * H; i++) gate[i] = (frand() + 1) * 50 < c.pct_global;
    aha_route r = {w, sinks, gate};
    aha_attn_flops fl = {0, 0};
    aha_attention_routed(out, q, k, v, &s, n, p0, &r, &fl);
    double want_exec = 0, want_full = 0, o[512];
    int keys[8192];
    for (int i = 0; i < n; i++) {
        int p = p0 + i;
        for (int h = 0; h < H; h++) {
            int nk = 0;
            for (int j = 0; j <= p; j++)
                if (gate[i * H + h] || j > p - w || j < sinks) keys[nk++] = j;
            want_exec += 4.0 * D * nk;
            want_full += 4.0 * D * (p + 1);
            ref_attn(q, k, v, &s, i, p, h, keys, nk, o);
            for (int d = 0; d < D; d++) CHECK_CLOSE(out[(long)i * H * D + h * D + d], o[d], 1e-5, 1e-5);
        }
    }
    CHECK(fl.executed == want_exec && fl.full == want_full, "flops %.0f/%.0f, want %.0f/%.0f",
          fl.executed, fl.full, want_exec, want_full);
    free(q), free(k), free(v), free(out), free(gate);
}

// Decode (n <= AHA_ATTN_FEW_MAX queries, unobserved: dot products
// over the keys in place) against the definition, on a head-major cache
// (each KV head's positions contiguous, heads cap positions apart, as
// runtime/forward.c keeps it); all-global routing (the per-head path) equals
// it bit for bit.
typedef struct {
    int n_heads, n_kv, head_dim; // query heads, KV heads, their width
    int n, p0;                   // queries (at most AHA_ATTN_FEW_MAX), at positions p0..p0+n-1
    int window;                  // a natively local layer's window (aha_attn_shape); 0: none
    float scale, softcap;        // the scores' scale (0: 1/sqrt(head_dim)) and softcap (0: none)
} few_case;

static void test_few(few_case c) {
    const int H = c.n_heads, KV = c.n_kv, D = c.head_dim, n = c.n, p0 = c.p0, window = c.window;
    const int T = p0 + n, cap = T + 3;
    aha_attn_shape s = {H, KV, D, H * D, D, c.scale, c.softcap, window, (long)cap * D};
    float *q = malloc(sizeof(float) * n * H * D), *k = malloc(sizeof(float) * KV * cap * D);
    float *v = malloc(sizeof(float) * KV * cap * D), *out = malloc(sizeof(float) * n * H * D);
    float *routed = malloc(sizeof(float) * n * H * D);
    float *scratch = malloc(sizeof(float) * aha_attention_scratch(H, n, p0));
    uint8_t *gate = malloc(n * H);
    for (long i = 0; i < (long)n * H * D; i++) q[i] = 2 * frand();
    for (long i = 0; i < (long)KV * cap * D; i++) k[i] = 2 * frand(), v[i] = frand();
    aha_attention(out, q, k, v, &s, n, p0, scratch, NULL);
    double o[512];
    int keys[8192];
    for (int i = 0; i < n; i++) {
        const int p = p0 + i, lo = window && p + 1 > window ? p + 1 - window : 0;
        int nk = 0;
        for (int j = lo; j <= p; j++) keys[nk++] = j;
        for (int h = 0; h < H; h++) {
            ref_attn(q, k, v, &s, i, p, h, keys, nk, o);
            for (int d = 0; d < D; d++) CHECK_CLOSE(out[((long)i * H + h) * D + d], o[d], 2e-6, 2e-5);
        }
    }
    if (!window) { // routing never runs on a natively local layer
        memset(gate, 1, n * H);
        aha_route r = {4, 0, gate};
        aha_attn_flops fl = {0, 0};
        aha_attention_routed(routed, q, k, v, &s, n, p0, &r, &fl);
        long diff = 0;
        for (long i = 0; i < (long)n * H * D; i++) diff += routed[i] != out[i];
        CHECK(diff == 0, "all-global routed differs from plain in %ld of %ld outputs", diff, (long)n * H * D);
    }
    free(q), free(k), free(v), free(out), free(routed), free(scratch), free(gate);
}

// All-global routing must be the plain full kernel, bit for bit, and count
// exactly the full FLOPs.
static void test_routed_global_is_full(void) {
    enum { H = 4, KV = 2, D = 32, n = 40, p0 = 20 };
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0, 0, 0, 0};
    static float q[n * H * D], k[(p0 + n) * KV * D], v[(p0 + n) * KV * D], a[n * H * D], b[n * H * D];
    static float scratch[2 * 64 * n * (p0 + n)];
    static uint8_t gate[n * H];
    for (int i = 0; i < n * H * D; i++) q[i] = frand();
    for (int i = 0; i < (p0 + n) * KV * D; i++) k[i] = frand(), v[i] = frand();
    memset(gate, 1, sizeof gate);
    aha_route r = {8, 0, gate};
    aha_attn_flops fl = {0, 0};
    aha_attention_routed(a, q, k, v, &s, n, p0, &r, &fl);
    aha_attention(b, q, k, v, &s, n, p0, scratch, NULL);
    for (int i = 0; i < n * H * D; i++) CHECK(a[i] == b[i], "out[%d]: %.9g != %.9g", i, a[i], b[i]);
    CHECK(fl.executed == fl.full, "all-global executed %.0f != full %.0f", fl.executed, fl.full);
}

// A natively local layer in the full kernel: each query sees keys p-w+1..p
// only (no sinks), its FLOP baseline is that window, and the dependency pass
// sees the windowed distribution (d_eps at eps 0 is min(p + 1, w)).
static void test_native_window(int n, int p0, int W) {
    enum { H = 4, KV = 2, D = 16, NMAX = 160 };
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0.2f, 2.0f, W, 0};
    static float q[NMAX * H * D], k[2 * NMAX * KV * D], v[2 * NMAX * KV * D], out[NMAX * H * D];
    float *scratch = malloc(sizeof(float) * omp_get_max_threads() * n * (p0 + n)); // per thread
    static uint32_t dep[NMAX * H];
    for (int i = 0; i < n * H * D; i++) q[i] = 3 * frand();
    for (int i = 0; i < (p0 + n) * KV * D; i++) k[i] = 3 * frand(), v[i] = frand();
    const float eps = 0;
    aha_observe obs = {.eps = &eps, .n_eps = 1, .dep = dep};
    aha_attention(out, q, k, v, &s, n, p0, scratch, &obs);
    double o[64], keys_seen = 0;
    int keys[2 * NMAX];
    for (int i = 0; i < n; i++) {
        int p = p0 + i, nk = 0;
        for (int j = p - W + 1 > 0 ? p - W + 1 : 0; j <= p; j++) keys[nk++] = j;
        keys_seen += nk;
        for (int h = 0; h < H; h++) {
            ref_attn(q, k, v, &s, i, p, h, keys, nk, o);
            for (int d = 0; d < D; d++) CHECK_CLOSE(out[(long)i * H * D + h * D + d], o[d], 1e-5, 1e-5);
            CHECK(dep[i * H + h] == (uint32_t)nk, "d_eps(0) at p %d head %d: %u, want %d", p, h, dep[i * H + h], nk);
        }
    }
    double f = aha_attention_full_flops(&s, n, p0);
    CHECK(f == 4.0 * D * H * keys_seen, "window FLOPs %.0f, want %.0f", f, 4.0 * D * H * keys_seen);
    free(scratch);
}

// Brute force d_eps: try every w from 1 up, summing the out-of-window mass
// (at most 1: eps >= 1 is d = 1 even where the float sum passes 1).
static uint32_t ref_dep(const float *p, int t, int sinks, float eps) {
    if (eps >= 1) return 1;
    for (int w = 1; w <= t + 1; w++) {
        double m = 0;
        for (int j = sinks; j <= t - w; j++) m += p[j];
        if (m <= eps) return (uint32_t)w;
    }
    return (uint32_t)(t + 1);
}

static void test_dependency(void) {
    const float eps[] = {0.0f, 0.001f, 0.01f, 0.1f, 0.5f, 1.0f};
    enum { NE = 6 };
    float p[300];
    for (int trial = 0; trial < 400; trial++) {
        int t = trial % 150, sinks = trial % 3 == 0 ? 4 : trial % 3 == 1 ? 1 : 0;
        double sum = 0;
        for (int j = 0; j <= t; j++) {
            float x = frand();
            p[j] = trial % 5 == 0 ? 1.0f : trial % 5 == 1 ? (j % 7 == 0 ? 0.0f : x * x) : expf(6 * x);
            sum += p[j];
        }
        for (int j = 0; j <= t; j++) p[j] = (float)(p[j] / sum); // ties when all equal
        uint32_t d[NE];
        aha_dependency(p, t, sinks, eps, NE, d);
        for (int e = 0; e < NE; e++) {
            uint32_t want = ref_dep(p, t, sinks, eps[e]);
            CHECK(d[e] == want, "t=%d sinks=%d eps=%g: d=%u, brute force %u", t, sinks, eps[e], d[e], want);
            CHECK(d[e] >= 1 && d[e] <= (uint32_t)t + 1, "d=%u out of 1..%d", d[e], t + 1);
        }
        double before = 0; // eps 1 gives d = 1 even where float rounding lifts the mass before t over 1
        for (int j = sinks; j < t; j++) before += p[j];
        CHECK(d[NE - 1] == 1, "eps 1: d = %u with mass %.9g before t", d[NE - 1], before);
    }
    // Exact at both ends of eps: ten keys of 0.1f sum to 1.0000000149 in
    // double, past 1, yet no mass beyond 1 exists (eps 1: d = 1); at eps 0 a
    // key out of window with any mass makes the row global, and none keeps it local.
    float tenth[12] = {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0, 0};
    const float ends[] = {1.0f, 2.0f, 0.0f};
    uint32_t de[3];
    aha_dependency(tenth, 11, 0, ends, 3, de);
    CHECK(de[0] == 1 && de[1] == 1, "eps 1 and 2 over a sum of 1.0000000149: d = %u, %u, want 1", de[0], de[1]);
    CHECK(de[2] == 12, "eps 0, mass on key 0 from t = 11: d = %u, want 12", de[2]);
    aha_dependency(tenth + 10, 1, 0, ends + 2, 1, de);
    CHECK(de[0] == 1, "eps 0, no mass out of window: d = %u, want 1", de[0]);
    // a one-hot on the first token: everything hangs on the oldest key
    float onehot[10] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t d1;
    float e1 = 0.5f;
    aha_dependency(onehot, 9, 0, &e1, 1, &d1);
    CHECK(d1 == 10, "one-hot at key 0 from t=9: d=%u, want 10", d1);
    aha_dependency(onehot, 9, 1, &e1, 1, &d1);
    CHECK(d1 == 1, "the same key as a sink: d=%u, want 1", d1);
}

// Causal softmax probabilities of query i, head h over keys 0..i in double
// (one KV head, q [., H*D], k [., D]).
static void ref_probs(const float *q, const float *k, int H, int D, int i, int h, double *p) {
    double mx = -1e300, sum = 0;
    for (int j = 0; j <= i; j++) {
        double dot = 0;
        for (int e = 0; e < D; e++) dot += (double)q[i * H * D + h * D + e] * k[j * D + e];
        p[j] = dot / sqrt((double)D);
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j <= i; j++) sum += p[j] = exp(p[j] - mx);
    for (int j = 0; j <= i; j++) p[j] /= sum;
}

static void test_observe(void) {
    enum { H = 3, KV = 1, D = 16, n = 50, p0 = 0 };
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0, 0, 0, 0};
    static float q[n * H * D], k[n * KV * D], v[n * KV * D], out[n * H * D], scratch[64 * n * n];
    for (int i = 0; i < n * H * D; i++) q[i] = 3 * frand();
    for (int i = 0; i < n * KV * D; i++) k[i] = 3 * frand(), v[i] = frand();
    const float eps[] = {0.01f, 0.1f};
    const int windows[] = {4, 16, 64};
    static uint32_t dep[2 * n * H];
    static float werr[3 * n * H];
    aha_observe obs = {.eps = eps, .n_eps = 2, .windows = windows, .n_windows = 3, .sinks = 2, .dep = dep, .werr = werr};
    aha_attention(out, q, k, v, &s, n, p0, scratch, &obs);
    // recompute p with doubles, then d_eps and the window error from definitions
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++) {
            double sc[n];
            float p[n];
            ref_probs(q, k, H, D, i, h, sc);
            for (int j = 0; j <= i; j++) p[j] = (float)sc[j];
            for (int e = 0; e < 2; e++) {
                uint32_t want = ref_dep(p, i, 2, eps[e]), got = dep[(e * n + i) * H + h];
                // float vs double probabilities may move a boundary by one key
                CHECK(got == want || (got + 1 == want || got == want + 1), "t=%d h=%d eps=%g: %u vs %u", i, h, eps[e], got, want);
            }
            for (int w = 0; w < 3; w++) {
                int keys[n], nk = 0;
                double o[D], ow[D], num = 0, den = 0;
                for (int j = 0; j <= i; j++) keys[nk++] = j;
                ref_attn(q, k, v, &s, i, i, h, keys, nk, o);
                nk = 0;
                for (int j = 0; j <= i; j++)
                    if (j > i - windows[w] || j < 2) keys[nk++] = j;
                ref_attn(q, k, v, &s, i, i, h, keys, nk, ow);
                for (int d = 0; d < D; d++) num += (ow[d] - o[d]) * (ow[d] - o[d]), den += o[d] * o[d];
                CHECK_CLOSE(werr[(w * n + i) * H + h], sqrt(num / den), 1e-5, 1e-3);
            }
        }
}

// far / sink of one row from their definitions, in double: an independent loop.
static void ref_mass(const double *p, int t, int sinks, int w, double *far, double *sink) {
    *far = *sink = 0;
    for (int j = 0; j <= t; j++) {
        if (j < sinks) *sink += p[j];
        else if (j <= t - w) *far += p[j];
    }
}

static void test_mass(void) {
    // the kernel alone: unsorted windows, w past t, t < w + sinks, sinks past t
    const int windows[] = {16, 1, 64, 3, 7};
    for (int trial = 0; trial < 400; trial++) {
        int t = trial % 90, sinks = trial % 6 == 0 ? 0 : trial % 7;
        float p[96], far[5], sink = -1;
        double pd[96], sum = 0;
        for (int j = 0; j <= t; j++) sum += p[j] = expf(5 * frand());
        for (int j = 0; j <= t; j++) p[j] = (float)(p[j] / sum), pd[j] = p[j];
        aha_dependency_mass(p, t, sinks, windows, 5, far, &sink);
        for (int k = 0; k < 5; k++) {
            double wf, ws;
            ref_mass(pd, t, sinks, windows[k], &wf, &ws);
            CHECK_CLOSE(far[k], wf, 1e-6, 1e-6);
            CHECK_CLOSE(sink, ws, 1e-6, 1e-6);
            if (t - windows[k] < sinks) CHECK(far[k] == 0.0f, "t=%d w=%d sinks=%d: far %g, want 0", t, windows[k], sinks, far[k]);
        }
    }
    // fused in the observed pass, against probabilities recomputed in double
    enum { H = 3, KV = 1, D = 16, n = 70 };
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0, 0, 0, 0};
    static float q[n * H * D], k[n * KV * D], v[n * KV * D], out[n * H * D], scratch[64 * n * n];
    for (int i = 0; i < n * H * D; i++) q[i] = 3 * frand();
    for (int i = 0; i < n * KV * D; i++) k[i] = 3 * frand(), v[i] = frand();
    const float eps[] = {0.01f};
    for (int sinks = 0; sinks <= 4; sinks += 4) {
        static uint32_t dep[n * H];
        static float far[5 * n * H], sink[n * H];
        aha_observe obs = {.eps = eps, .n_eps = 1, .sinks = sinks, .dep = dep, .mass_windows = windows, .n_mass = 5, .far = far, .sink = sink};
        aha_attention(out, q, k, v, &s, n, 0, scratch, &obs);
        for (int i = 0; i < n; i++)
            for (int h = 0; h < H; h++) {
                double sc[n];
                ref_probs(q, k, H, D, i, h, sc);
                for (int w = 0; w < 5; w++) {
                    double wf, ws;
                    ref_mass(sc, i, sinks, windows[w], &wf, &ws);
                    CHECK_CLOSE(far[(w * n + i) * H + h], wf, 1e-6, 1e-5);
                    CHECK_CLOSE(sink[i * H + h], ws, 1e-6, 1e-5);
                    // exactly the quantity d_eps thresholds
                    if (fabs(wf - eps[0]) > 1e-5)
                        CHECK((dep[i * H + h] > (uint32_t)windows[w]) == (wf > eps[0]), "t=%d h=%d w=%d: d %u, far %g",
                              i, h, windows[w], dep[i * H + h], wf);
                }
            }
    }
}

// aha_dependency_rows against aha_dependency row by row, bit for bit: rows of
// every kind (softmax-like, zeros, subnormals, one-hot, ties, NaN), groups cut
// anywhere (n, t0 and sinks around the 16-row groups), eps in any order with
// duplicates, 0, 1, a negative and a NaN. Its own random numbers.
static void test_dependency_rows(void) {
    uint64_t r = 0x243F6A8885A308D3ull;
    const float eps_a[] = {0.01f, 0.05f, 0.1f};
    const float eps_b[] = {0.5f, 0.0f, 1e-30f, 0.01f, 1.0f, -1.0f, NAN, 0.01f, 0.3f};
    const int ns[] = {1, 15, 16, 17, 33, 70}, t0s[] = {0, 2, 5, 100}, sinkss[] = {0, 1, 4, 20};
    static float p[70 * 260];
    static uint32_t d[9 * 70 * 3], want[9];
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int kind = 0; kind < 6; kind++) {
                    const int n = ns[a], t0 = t0s[b], sinks = sinkss[c], stride = t0 + n + 3;
                    const float *eps = kind % 2 ? eps_b : eps_a;
                    const int n_eps = kind % 2 ? 9 : 3, H = 3;
                    for (int i = 0; i < n; i++) {
                        float *row = p + (long)i * stride, sum = 0;
                        const int t = t0 + i;
                        for (int j = 0; j < stride; j++) {
                            float x = frand_next(&r);
                            row[j] = j > t ? 0.0f
                                   : kind < 2 ? expf(8 * x)
                                   : kind == 2 ? (j % 5 ? 1e-40f : x * x)
                                   : kind == 3 ? (j == 0 ? 1.0f : 0.0f)
                                   : kind == 4 ? 1.0f
                                   : (i == 3 && j == t / 2 ? NAN : x * x);
                            if (j <= t) sum += row[j];
                        }
                        for (int j = 0; j <= t && kind != 2; j++) row[j] /= sum;
                    }
                    aha_dependency_rows(p, stride, n, t0, sinks, eps, n_eps, d + 1, (long)n * H, H);
                    for (int i = 0; i < n; i++) {
                        aha_dependency(p + (long)i * stride, t0 + i, sinks, eps, n_eps, want);
                        for (int e = 0; e < n_eps; e++) {
                            uint32_t got = d[1 + (long)e * n * H + i * H];
                            CHECK(got == want[e], "n=%d t0=%d sinks=%d kind %d row %d eps %g: rows %u, one row %u",
                                  n, t0, sinks, kind, i, eps[e], got, want[e]);
                        }
                    }
                }
}

int main(void) {
    TEST("routed: 10% global, w=8, GQA 2:1",
         test_routed((routed_case){.n_heads = 4, .n_kv = 2, .head_dim = 16, .n = 60, .window = 8, .pct_global = 10}));
    TEST("routed: 50% global, w=16, sinks 4, after cache",
         test_routed((routed_case){.n_heads = 6, .n_kv = 2, .head_dim = 32, .n = 45, .p0 = 30, .window = 16, .sinks = 4,
                                   .pct_global = 50}));
    TEST("routed: all local, t < w everywhere",
         test_routed((routed_case){.n_heads = 2, .n_kv = 1, .head_dim = 16, .n = 10, .window = 32}));
    TEST("routed: decode step, w=4, sinks 1",
         test_routed((routed_case){.n_heads = 8, .n_kv = 1, .head_dim = 64, .n = 1, .p0 = 77, .window = 4, .sinks = 1,
                                   .pct_global = 30}));
    TEST("routed: head_dim 128, block edges",
         test_routed((routed_case){.n_heads = 4, .n_kv = 4, .head_dim = 128, .n = 70, .p0 = 5, .window = 20, .sinks = 2,
                                   .pct_global = 25}));
    TEST("routed: all global equals full attention", test_routed_global_is_full());
    TEST("decode: SmolLM2's shape (9:3, D 64) at 2047 keys, head-major cache",
         test_few((few_case){.n_heads = 9, .n_kv = 3, .head_dim = 64, .n = 1, .p0 = 2046}));
    TEST("decode: 4 queries, GQA 4:1, D 128, block edge",
         test_few((few_case){.n_heads = 8, .n_kv = 2, .head_dim = 128, .n = 4, .p0 = 252}));
    TEST("decode: D 80 (a band of 16), D 20 (a tail of 4), MHA",
         test_few((few_case){.n_heads = 3, .n_kv = 3, .head_dim = 80, .n = 2, .p0 = 37});
         test_few((few_case){.n_heads = 2, .n_kv = 2, .head_dim = 20, .n = 3, .p0 = 9}));
    TEST("decode: native window, scale and softcap",
         test_few((few_case){.n_heads = 4, .n_kv = 1, .head_dim = 64, .n = 3, .p0 = 300, .window = 64, .scale = 0.3f,
                             .softcap = 1.5f}));
    TEST("dependency pass equals brute force (ties, t < w, sinks, eps 0 and 1)", test_dependency());
    TEST("observed attention: d_eps and window error from the definitions", test_observe());
    TEST("mass split (far, sinks) of the dependency pass from the definitions", test_mass());
    // last: the tests above draw the random numbers they always drew
    TEST("routed: gemma2 score scale and softcap, sinks 2, after cache",
         test_routed((routed_case){.n_heads = 4, .n_kv = 2, .head_dim = 16, .n = 50, .p0 = 9, .window = 6, .sinks = 2,
                                   .pct_global = 40, .scale = 0.3f, .softcap = 1.5f}));
    TEST("native window (+ scale, softcap): keys p-w+1..p, its FLOPs, through the cache", test_native_window(30, 11, 5));
    TEST("native window over several query blocks (n 150, w 40)", test_native_window(150, 7, 40));
    TEST("dependency pass of 16-row groups equals one row at a time, bit for bit", test_dependency_rows());
    TEST_EXIT();
}
