// Each CUDA kernel against its CPU twin on random inputs (issue 5): head_dim
// 64/128, GQA ratios 1/3/4/8, contexts up to 32k (long contexts as a few
// queries at a large p0, so the CPU reference stays cheap), windows 16..4096,
// sinks 0/4; every comparison is |gpu - cpu| <= tol + |cpu| * eps.
//
// Prints PASS/FAIL lines like tests/check.h. The host group (index lists and
// FLOP counting, no device) always runs. Without a device each device group
// prints one "SKIP <group>: no CUDA device (<reason>)" line and runs nothing.
//   build/gpu/test_kernels_cuda [--quick | --tiny | --review]
//   --quick: contexts up to 5k (for compute-sanitizer memcheck);
//   --tiny: the first two shapes only (for racecheck, much slower);
//   --review: only the checks of issue 15's review (70,000 tokens, mma guards).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "attention.h"
#include "dependency.h"
#include "ops.h"
#include "router.h"
#include "f16.h"
#include "weight.h"
}
// Under the CPU emulator (tests/gpu/emu/cuda_emu.h) every line says so.
#ifdef AHA_CUDA_EMU
#define TEST_PREFIX emu::label() // "[cpu emulator] ", with the adversarial switches that are on
#endif
#include "../check.h"
#include "../frand.h"
#include "../stored_rows.h"
#include "cuda/dev/aha_cuda_dev.h"
#include "cuda/common.cuh"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { return frand_next(&rng); }
static void fill(float *x, long n, float scale) {
    for (long i = 0; i < n; i++) x[i] = frand() * scale;
}

// Compare n values; report the worst one. Returns the number out of tolerance.
static long compare(const char *what, const float *got, const float *ref, long n, double tol,
                    double rel) {
    long bad = 0, worst = 0;
    double werr = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]), lim = tol + fabs((double)ref[i]) * rel;
        if (!(e <= lim)) bad++;
        if (!(e <= werr)) { werr = e; worst = i; }
    }
    CHECK(bad == 0, "%s: %ld of %ld out of tolerance; worst [%ld] %.8g vs %.8g", what, bad, n,
          worst, n ? got[worst] : 0.0, n ? ref[worst] : 0.0);
    printf("  %-46s max |err| %.3g over %ld values\n", what, werr, n);
    return bad;
}

// As compare, for dot products: each value's bound scales with the sum of
// the magnitudes of its terms (mag, |x| |w|^T), not with the sum itself,
// which cancellation can make small while the rounding stays the terms'.
static long compare_dots(const char *what, const float *got, const float *ref, const float *mag, long n, double rel) {
    long bad = 0, worst = 0;
    double werr = 0, wrel = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= rel * (1.0 + mag[i]))) bad++;
        wrel = fmax(wrel, e / (1.0 + mag[i]));
        if (!(e <= werr)) { werr = e; worst = i; }
    }
    CHECK(bad == 0, "%s: %ld of %ld out of tolerance; worst [%ld] %.8g vs %.8g (terms' magnitude %.4g)", what, bad,
          n, worst, n ? got[worst] : 0.0, n ? ref[worst] : 0.0, n ? mag[worst] : 0.0);
    printf("  %-46s max |err| %.3g over %ld values (%.2g of the terms)\n", what, werr, n, wrel);
    return bad;
}

// Device buffer helpers.
template <typename T> static T *dput(const T *h, long n) {
    T *d;
    cudaCheckExit(cudaMalloc(&d, sizeof(T) * (n > 0 ? n : 1)));
    if (n > 0) cudaCheckExit(cudaMemcpy(d, h, sizeof(T) * n, cudaMemcpyHostToDevice));
    return d;
}
template <typename T> static T *dalloc(long n) {
    T *d;
    cudaCheckExit(cudaMalloc(&d, sizeof(T) * (n > 0 ? n : 1)));
    cudaCheckExit(cudaMemset(d, 0, sizeof(T) * (n > 0 ? n : 1)));
    return d;
}
template <typename T> static void dget(T *h, const T *d, long n) {
    cudaCheckExit(cudaMemcpy(h, d, sizeof(T) * n, cudaMemcpyDeviceToHost));
}

static int quick, tiny;
// Shapes run: --tiny the first two, --quick those with p0 <= 5000.
static int skip_case(int c);

// ---- host group: no device --------------------------------------------------

static void random_gate(uint8_t *gate, long n, double p_global) {
    for (long i = 0; i < n; i++) gate[i] = (frand() * 0.5 + 0.5) < p_global;
}

static void test_host(void) {
    TEST("host: index lists are ascending and partition the queries", {
        const int n = 777, H = 6;
        uint8_t *gate = (uint8_t *)malloc(n * H);
        int *ig = (int *)malloc(n * sizeof(int)), *il = (int *)malloc(n * sizeof(int));
        random_gate(gate, (long)n * H, 0.1);
        for (int h = 0; h < H; h++) {
            int ng, nl;
            aha_route_compact_host(gate, n, H, h, ig, &ng, il, &nl);
            CHECK(ng + nl == n, "head %d: %d + %d != %d", h, ng, nl, n);
            for (int j = 0; j < ng; j++) CHECK(gate[(long)ig[j] * H + h] && (j == 0 || ig[j] > ig[j - 1]), "global list");
            for (int j = 0; j < nl; j++) CHECK(!gate[(long)il[j] * H + h] && (j == 0 || il[j] > il[j - 1]), "local list");
        }
        free(gate);
        free(ig);
        free(il);
    });
    // The device's FLOP rule (aha_route_visible, unsigned integers) equals
    // aha_attention_routed's own count, over windows, sinks, p0 and rates.
    const int ws[] = {16, 128, 4096}, sinks[] = {0, 4};
    const double rates[] = {0.0, 0.1, 1.0};
    TEST("host: FLOP count equals aha_attention_routed's (executed and full)", {
        const int H = 4, KV = 2, D = 64, n = 40;
        for (int wi = 0; wi < 3; wi++)
            for (int si = 0; si < 2; si++)
                for (int ri = 0; ri < 3; ri++) {
                    const int p0 = wi == 2 ? 5000 : 100 * wi;
                    const int T = p0 + n;
                    float *q = (float *)malloc(sizeof(float) * n * H * D);
                    float *k = (float *)malloc(sizeof(float) * (long)T * KV * D);
                    float *v = (float *)malloc(sizeof(float) * (long)T * KV * D);
                    float *o = (float *)malloc(sizeof(float) * n * H * D);
                    uint8_t *gate = (uint8_t *)malloc(n * H);
                    fill(q, (long)n * H * D, 1);
                    fill(k, (long)T * KV * D, 1);
                    fill(v, (long)T * KV * D, 1);
                    random_gate(gate, (long)n * H, rates[ri]);
                    aha_attn_shape s = {H, KV, D, H * D, KV * D};
                    aha_route r = {ws[wi], sinks[si], gate};
                    aha_attn_flops f = {0, 0};
                    aha_attention_routed(o, q, k, v, &s, n, p0, &r, &f);
                    unsigned long long e = 0, full = 0;
                    aha_route_flops_host(gate, n, H, D, p0, ws[wi], sinks[si], &e, &full);
                    CHECK((double)e == f.executed && (double)full == f.full,
                          "w %d sinks %d rate %.1f: %llu/%llu vs %.0f/%.0f", ws[wi], sinks[si],
                          rates[ri], e, full, f.executed, f.full);
                    free(q), free(k), free(v), free(o), free(gate);
                }
    });
}

// ---- device groups ------------------------------------------------------------

static void test_ops(void) {
    TEST("cuda ops: embedding gather", {
        const int vocab = 1000, dim = 576, n = 37;
        float *emb = (float *)malloc(sizeof(float) * vocab * dim), *x = (float *)malloc(sizeof(float) * n * dim),
              *ref = (float *)malloc(sizeof(float) * n * dim);
        int32_t tok[37];
        fill(emb, (long)vocab * dim, 1);
        for (int t = 0; t < n; t++) {
            tok[t] = (int32_t)((frand() * 0.5 + 0.5) * vocab) % vocab;
            memcpy(ref + (long)t * dim, emb + (long)tok[t] * dim, sizeof(float) * dim);
        }
        float *d_emb = dput(emb, (long)vocab * dim), *d_x = dalloc<float>((long)n * dim);
        int32_t *d_tok = dput(tok, n);
        const aha_weight w = aha_weight_f32(d_emb, vocab, dim);
        aha_embed_cuda(d_x, &w, d_tok, n, 0, 0);
        dget(x, d_x, (long)n * dim);
        compare("embedding", x, ref, (long)n * dim, 0, 0);
        cudaFree(d_emb), cudaFree(d_x), cudaFree(d_tok), free(emb), free(x), free(ref);
    });
    TEST("cuda ops: RMSNorm full width and per head", {
        const int n = 19, H = 8, D = 128, stride = H * D + H; // an AHA q row: H*D + H router logits
        float *x = (float *)malloc(sizeof(float) * n * stride), *ref = (float *)malloc(sizeof(float) * n * stride),
              *got = (float *)malloc(sizeof(float) * n * stride), *w = (float *)malloc(sizeof(float) * H * D);
        for (int pass = 0; pass < 2; pass++) { // 0 full width (olmo2), 1 per head (qwen3)
            fill(x, (long)n * stride, 3);
            fill(w, H * D, 1);
            memcpy(ref, x, sizeof(float) * n * stride);
            for (int t = 0; t < n; t++) {
                if (pass == 0) aha_rmsnorm(ref + (long)t * stride, ref + (long)t * stride, w, H * D, 1e-6f);
                else
                    for (int h = 0; h < H; h++)
                        aha_rmsnorm(ref + (long)t * stride + h * D, ref + (long)t * stride + h * D, w, D, 1e-6f);
            }
            float *d_x = dput(x, (long)n * stride), *d_w = dput(w, H * D);
            aha_rmsnorm_cuda(d_x, d_x, d_w, n, stride, pass ? H : 1, pass ? D : H * D, 1e-6f, 0);
            dget(got, d_x, (long)n * stride);
            compare(pass ? "rmsnorm per head (D=128, in place)" : "rmsnorm full width (1024, in place)", got, ref,
                    (long)n * stride, 1e-6, 1e-5);
            cudaFree(d_x), cudaFree(d_w);
        }
        free(x), free(ref), free(got), free(w);
    });
    TEST("cuda ops: RoPE rotate-half and adjacent pairs, positions to 32k", {
        const int n = 23, H = 6, D = 64, stride = H * D;
        const int pos0s[] = {0, 32768 - 23};
        float *x = (float *)malloc(sizeof(float) * n * stride), *ref = (float *)malloc(sizeof(float) * n * stride),
              *got = (float *)malloc(sizeof(float) * n * stride), inv[64];
        for (int i = 0; i < D / 2; i++) inv[i] = powf(500000.0f, -2.0f * i / D);
        float *d_inv = dput(inv, D / 2);
        for (int adj = 0; adj < 2; adj++)
            for (int pi = 0; pi < 2; pi++) {
                fill(x, (long)n * stride, 2);
                memcpy(ref, x, sizeof(float) * n * stride);
                for (int t = 0; t < n; t++) aha_rope(ref + (long)t * stride, H, D, pos0s[pi] + t, inv, adj);
                float *d_x = dput(x, (long)n * stride);
                aha_rope_cuda(d_x, n, stride, H, D, pos0s[pi], d_inv, adj, 0);
                dget(got, d_x, (long)n * stride);
                char what[64];
                snprintf(what, sizeof what, "rope %s pos0 %d", adj ? "adjacent" : "half", pos0s[pi]);
                compare(what, got, ref, (long)n * stride, 1e-5, 1e-5);
                cudaFree(d_x);
            }
        cudaFree(d_inv), free(x), free(ref), free(got);
    });
    TEST("cuda ops: SwiGLU, GeGLU (tanh GELU) and the logit softcap", {
        const long n = 100003;
        float *g = (float *)malloc(sizeof(float) * n), *u = (float *)malloc(sizeof(float) * n),
              *ref = (float *)malloc(sizeof(float) * n);
        for (int op = 0; op < 3; op++) { // swiglu, geglu, softcap at 3 (scores of 12 bend)
            fill(g, n, 12);
            fill(u, n, 3);
            memcpy(ref, g, sizeof(float) * n);
            float *d_g = dput(g, n), *d_u = dput(u, n);
            if (op == 0) aha_swiglu(ref, u, (int)n);
            if (op == 1) aha_geglu(ref, u, (int)n);
            if (op == 2) aha_softcap(ref, (int)n, 3.0f);
            const int rc = op == 0 ? aha_swiglu_cuda(d_g, d_u, n, 0) : op == 1 ? aha_geglu_cuda(d_g, d_u, n, 0)
                                                                           : aha_softcap_cuda(d_g, n, 3.0f, 0);
            CHECK(rc == 0, "launch: %s", aha_errmsg());
            dget(g, d_g, n);
            // vmath.c's vector expf / tanhf (a few ulp) against the device's
            compare(op == 0 ? "swiglu" : op == 1 ? "geglu" : "softcap 3", g, ref, n, 1e-6, 1e-5);
            cudaFree(d_g), cudaFree(d_u);
        }
        free(g), free(u), free(ref);
    });
    TEST("cuda ops: the first NaN or Inf (stage, then index) equals aha_nonfinite", {
        const long n = 70001;
        float *x = (float *)malloc(sizeof(float) * n);
        fill(x, n, 4);
        float *d_x = dput(x, n);
        unsigned long long *d_first = dalloc<unsigned long long>(1), first;
        const long at[] = {-1, 0, 6789, n - 1};
        for (int c = 0; c < 4; c++) {
            if (at[c] >= 0) x[at[c]] = c % 2 ? NAN : -INFINITY;
            if (c == 2) x[n - 2] = NAN; // a later one, which must not win
            cudaCheckExit(cudaMemcpy(d_x, x, sizeof(float) * n, cudaMemcpyHostToDevice));
            cudaCheckExit(cudaMemset(d_first, 0xff, sizeof first));
            CHECK(aha_nonfinite_cuda(d_x, n, 7, d_first, 0) == 0, "launch: %s", aha_errmsg());
            CHECK(aha_nonfinite_cuda(d_x, n, 9, d_first, 0) == 0, "launch: %s", aha_errmsg()); // a later stage
            dget(&first, d_first, 1);
            const long want = aha_nonfinite(x, n);
            CHECK(want < 0 ? first == ~0ull
                           : first == (7ull << 40 | (unsigned long long)want << 1 | (unsigned long long)isnan(x[want])),
                  "case %d: device %llx, CPU index %ld", c, first, want);
            if (at[c] >= 0) x[at[c]] = 0;
            x[n - 2] = 0;
        }
        cudaFree(d_x), cudaFree(d_first);
        free(x);
    });
    TEST("cuda ops: router gate (learned and oracle) equals aha_router_decide", {
        const int n = 300, H = 9, stride = 40, L = 1;
        float *logit = (float *)malloc(sizeof(float) * n * stride);
        uint32_t *dep = (uint32_t *)malloc(sizeof(uint32_t) * n * H);
        uint8_t *ref = (uint8_t *)malloc(n * H), *got = (uint8_t *)malloc(n * H);
        fill(logit, (long)n * stride, 4);
        for (long i = 0; i < (long)n * H; i++) dep[i] = (uint32_t)((frand() * 0.5 + 0.5) * 300);
        const float taus[] = {0.5f, 0.3f, 0.9f};
        float *d_l = dput(logit, (long)n * stride);
        uint32_t *d_dep = dput(dep, (long)n * H);
        uint8_t *d_g = dalloc<uint8_t>((long)n * H);
        for (int ti = 0; ti < 3; ti++) {
            aha_router r;
            memset(&r, 0, sizeof r);
            r.kind = AHA_ROUTER_LEARNED;
            r.tau = taus[ti];
            r.n_layers = L;
            r.n_heads = H;
            aha_router_decide(&r, 0, n, 0, 0, 128, logit, stride, NULL, NULL, ref);
            aha_gate_learned_cuda(d_g, d_l, stride, n, H, taus[ti], 0);
            dget(got, d_g, (long)n * H);
            CHECK(memcmp(got, ref, (size_t)n * H) == 0, "learned gate differs at tau %g", taus[ti]);
        }
        aha_router r;
        memset(&r, 0, sizeof r);
        r.kind = AHA_ROUTER_ORACLE;
        r.n_layers = L;
        r.n_heads = H;
        aha_router_decide(&r, 0, n, 0, 0, 128, NULL, 0, dep, NULL, ref);
        aha_gate_oracle_cuda(d_g, d_dep, n, H, 128, 0);
        dget(got, d_g, (long)n * H);
        CHECK(memcmp(got, ref, (size_t)n * H) == 0, "oracle gate differs");
        cudaFree(d_l), cudaFree(d_dep), cudaFree(d_g), free(logit), free(dep), free(ref), free(got);
    });
    TEST("cuda ops: scoring (nll, KL) equals aha_logsumexp / aha_kl_logits", {
        const int n = 37, V = 49157; // odd: no lane pattern lines up
        float *lg = (float *)malloc(sizeof(float) * n * V), *rf = (float *)malloc(sizeof(float) * n * V);
        float nll[37], kl[37], ref_nll[37], ref_kl[37];
        int32_t tg[37];
        fill(lg, (long)n * V, 12);
        for (long i = 0; i < (long)n * V; i++) rf[i] = lg[i] + 0.5f * frand();
        memcpy(rf, lg, sizeof(float) * V); // row 0 identical: KL exactly 0
        for (int i = 0; i < n; i++) {
            tg[i] = i == 5 ? -1 : (int32_t)((frand() * 0.5f + 0.5f) * V) % V;
            ref_nll[i] = tg[i] < 0 ? 0 : aha_logsumexp(lg + (long)i * V, V) - lg[(long)i * V + tg[i]];
            ref_kl[i] = aha_kl_logits(rf + (long)i * V, lg + (long)i * V, V);
        }
        float *d_lg = dput(lg, (long)n * V), *d_rf = dput(rf, (long)n * V);
        float *d_nll = dalloc<float>(n), *d_kl = dalloc<float>(n);
        int32_t *d_tg = dput(tg, n);
        aha_score_cuda(d_nll, d_kl, d_lg, d_rf, d_tg, n, V, 0);
        dget(nll, d_nll, n);
        dget(kl, d_kl, n);
        CHECK(isnan(nll[5]), "no target: nll %g, not NaN", nll[5]);
        nll[5] = 0;
        CHECK(kl[0] == 0.0f, "identical rows: KL %g, not 0", kl[0]);
        compare("nll", nll, ref_nll, n, 2e-5, 1e-5);
        compare("kl", kl, ref_kl, n, 1e-6, 1e-4);
        cudaFree(d_lg), cudaFree(d_rf), cudaFree(d_nll), cudaFree(d_kl), cudaFree(d_tg), free(lg), free(rf);
    });
}

// One attention problem: q [n, H*D] (stride H*D), k/v [T, KV*D]. q is scaled
// so that attention is peaked: d_eps then spreads over many values.
typedef struct {
    int H, KV, D, n, p0, T;
    float *q, *k, *v;          // host
    float *dq, *dk, *dv;       // device
    aha_attn_shape s;
} problem;

static void problem_init(problem *P, int H, int KV, int D, int n, int p0, float qscale) {
    P->H = H, P->KV = KV, P->D = D, P->n = n, P->p0 = p0, P->T = p0 + n;
    P->s = (aha_attn_shape){H, KV, D, H * D, KV * D};
    P->q = (float *)malloc(sizeof(float) * n * H * D);
    P->k = (float *)malloc(sizeof(float) * (long)P->T * KV * D);
    P->v = (float *)malloc(sizeof(float) * (long)P->T * KV * D);
    fill(P->q, (long)n * H * D, qscale);
    fill(P->k, (long)P->T * KV * D, 1);
    fill(P->v, (long)P->T * KV * D, 1);
    P->dq = dput(P->q, (long)n * H * D);
    P->dk = dput(P->k, (long)P->T * KV * D);
    P->dv = dput(P->v, (long)P->T * KV * D);
}

static void problem_free(problem *P) {
    free(P->q), free(P->k), free(P->v);
    cudaFree(P->dq), cudaFree(P->dk), cudaFree(P->dv);
}

static float *cpu_scratch(const problem *P) {
    return (float *)malloc(sizeof(float) * aha_attention_scratch(P->s.n_heads, P->n, P->p0));
}

typedef struct {
    int H, KV, D, n, p0;
    float scale, softcap; // aha_attn_shape's: 0 = llama's 1/sqrt(D), no softcap
    int window;           // a natively local layer's window (0: causal); never routed
    int tiny;             // in the --tiny set
} shape_case;
// GQA 1/3/4/8 at D 64/128; contexts to 32k as few queries at a large p0.
// Gemma's: query_pre_attn_scalar's scale and a softcap (1: tanh bends the
// scores of q scaled by 2, up to about 1.5), natively local layers (windows
// 48 and 32, and Mistral's 1024 at 4k), head_dim 256 (Gemma-3 270M: 4 heads,
// 1 KV head).
static const shape_case cases[] = {
    {4, 4, 64, 200, 0, 0, 0, 0, 1},           {6, 2, 128, 130, 70, 0, 0, 0, 1},
    {4, 2, 64, 150, 0, 0.0625f, 1, 0, 1},     {4, 2, 64, 150, 0, 0.0625f, 1, 48, 1},
    {4, 1, 256, 40, 60, 0.0625f, 0, 32, 1},   {8, 2, 64, 64, 4000, 0, 0, 0, 0},
    {16, 2, 128, 48, 16300, 0, 0, 0, 0},      {8, 1, 128, 32, 32736, 0, 0, 0, 0},
    {12, 3, 64, 300, 0, 0, 0, 0, 0},          {8, 2, 128, 64, 4000, 0, 0, 1024, 0},
    {4, 1, 256, 70, 200, 0.0625f, 0, 0, 0},
};
static const int n_cases = sizeof cases / sizeof cases[0];
static int skip_case(int c) { return (tiny && !cases[c].tiny) || (quick && cases[c].p0 > 5000); }
static int gemma_case(int c) { return cases[c].scale > 0 || cases[c].softcap > 0 || cases[c].window; }

// Case c's problem: its shape, scores and window.
static void problem_case(problem *P, int c, float qscale) {
    const shape_case *k = &cases[c];
    problem_init(P, k->H, k->KV, k->D, k->n, k->p0, qscale);
    P->s.scale = k->scale, P->s.softcap = k->softcap, P->s.window = k->window;
}

static void test_attention(void) {
    TEST("cuda attention: full causal (+ row max/sum, or those alone) equals aha_attention", {
        for (int c = 0; c < n_cases; c++) {
            if (skip_case(c)) continue;
            problem P;
            problem_case(&P, c, 2.0f);
            long no = (long)P.n * P.H * P.D;
            float *ref = (float *)malloc(sizeof(float) * no), *got = (float *)malloc(sizeof(float) * no);
            float *scratch = cpu_scratch(&P);
            aha_attention(ref, P.q, P.k, P.v, &P.s, P.n, P.p0, scratch, NULL);
            float *d_o = dalloc<float>(no), *d_m = dalloc<float>((long)P.n * P.H), *d_l = dalloc<float>((long)P.n * P.H);
            CHECK(aha_attention_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m, d_l, 0) == 0, "launch");
            cudaCheckExit(cudaDeviceSynchronize());
            dget(got, d_o, no);
            char what[96];
            snprintf(what, sizeof what, "full H%d KV%d D%d n%d p0 %d", P.H, P.KV, P.D, P.n, P.p0);
            compare(what, got, ref, no, 5e-5, 5e-4);
            // Statistics alone (out = NULL): the same row max / sum, nothing else.
            const long nh = (long)P.n * P.H;
            float *d_m2 = dalloc<float>(nh), *d_l2 = dalloc<float>(nh);
            CHECK(aha_attention_cuda(NULL, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m2, d_l2, 0) == 0, "launch");
            float *st[4] = {(float *)malloc(sizeof(float) * nh), (float *)malloc(sizeof(float) * nh),
                            (float *)malloc(sizeof(float) * nh), (float *)malloc(sizeof(float) * nh)};
            dget(st[0], d_m, nh), dget(st[1], d_l, nh), dget(st[2], d_m2, nh), dget(st[3], d_l2, nh);
            snprintf(what, sizeof what, "stats only: row max H%d n%d p0 %d", P.H, P.n, P.p0);
            compare(what, st[2], st[0], nh, 0, 1e-6);
            snprintf(what, sizeof what, "stats only: row sum H%d n%d p0 %d", P.H, P.n, P.p0);
            compare(what, st[3], st[1], nh, 0, 1e-6);
            for (int i = 0; i < 4; i++) free(st[i]);
            free(ref), free(got), free(scratch);
            cudaFree(d_o), cudaFree(d_m), cudaFree(d_l), cudaFree(d_m2), cudaFree(d_l2);
            problem_free(&P);
        }
    });
    TEST("cuda attention: routed equals aha_attention_routed; FLOPs exact", {
        const int windows[] = {16, 128, 256, 4096}, sinks[] = {0, 4};
        const double rates[] = {0.0, 0.1, 0.25, 1.0};
        for (int c = 0; c < n_cases; c++) {
            if (skip_case(c) || cases[c].window) continue; // a natively local layer is never routed
            problem P;
            problem_case(&P, c, 2.0f);
            long no = (long)P.n * P.H * P.D;
            float *ref = (float *)malloc(sizeof(float) * no), *got = (float *)malloc(sizeof(float) * no);
            uint8_t *gate = (uint8_t *)malloc((long)P.n * P.H);
            float *d_o = dalloc<float>(no);
            uint8_t *d_gate = dalloc<uint8_t>((long)P.n * P.H);
            aha_route_ws ws;
            aha_route_ws_alloc(&ws, P.n, P.H);
            for (int wi = 0; wi < 4; wi++)
                for (int si = 0; si < 2; si++)
                    for (int ri = 0; ri < 4; ri++) {
                        if ((wi + si + ri + c) % 2) continue; // half the grid per shape
                        random_gate(gate, (long)P.n * P.H, rates[ri]);
                        aha_route r = {windows[wi], sinks[si], gate};
                        aha_attn_flops fc = {0, 0}, fg = {0, 0};
                        aha_attention_routed(ref, P.q, P.k, P.v, &P.s, P.n, P.p0, &r, &fc);
                        cudaCheckExit(cudaMemcpy(d_gate, gate, (long)P.n * P.H, cudaMemcpyHostToDevice));
                        cudaCheckExit(cudaMemset(d_o, 0xff, sizeof(float) * no)); // NaN: every output written?
                        CHECK(aha_attention_routed_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, windows[wi],
                                                        sinks[si], d_gate, &ws, 0) == 0, "launch");
                        aha_route_ws_flops(&ws, &fg, 0);
                        dget(got, d_o, no);
                        char what[128];
                        snprintf(what, sizeof what, "routed H%d KV%d D%d n%d p0 %d w%d s%d g%.2f", P.H, P.KV,
                                 P.D, P.n, P.p0, windows[wi], sinks[si], rates[ri]);
                        compare(what, got, ref, no, 5e-5, 5e-4);
                        CHECK(fg.executed == fc.executed && fg.full == fc.full,
                              "%s: FLOPs %.0f/%.0f vs CPU %.0f/%.0f", what, fg.executed, fg.full, fc.executed, fc.full);
                    }
            aha_route_ws_free(&ws);
            free(ref), free(got), free(gate);
            cudaFree(d_o), cudaFree(d_gate);
            problem_free(&P);
        }
    });
}

// What a kernel cannot run is refused, never run wrong: a natively local
// layer on a routed call (forward.c runs those unrouted), gemma's scores on
// variant 2, a KV cache laid out by head.
static void test_attention_refusals(void) {
    TEST("cuda attention: a routed call with a native window, gemma scores on TF32 v2, a by-head KV cache: -1, one line", {
        problem P;
        problem_case(&P, 3, 2.0f); // gemma2's local layer: window 48, softcap, scale
        const long no = (long)P.n * P.H * P.D;
        float *d_o = dalloc<float>(no);
        uint8_t *d_gate = dalloc<uint8_t>((long)P.n * P.H);
        aha_route_ws ws;
        aha_route_ws_alloc(&ws, P.n, P.H);
        aha_err("%s", "");
        CHECK(aha_attention_routed_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, 16, 0, d_gate, &ws, 0) == -1 &&
                  strstr(aha_errmsg(), "natively local layer"),
              "routed with a window: '%s'", aha_errmsg());
        P.s.window = 0;
        CHECK(aha_attention_tc_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, 0) == -1 &&
                  strstr(aha_errmsg(), "softcap") && !strchr(aha_errmsg(), '\n'),
              "v2 with a softcap: '%s'", aha_errmsg());
        P.s.kv_head_stride = (long)P.T * P.D;
        CHECK(aha_attention_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, NULL, NULL, 0) == -1 &&
                  strstr(aha_errmsg(), "by head"),
              "by-head KV cache: '%s'", aha_errmsg());
        aha_route_ws_free(&ws);
        cudaFree(d_o), cudaFree(d_gate);
        problem_free(&P);
    });
}

// The tensor-core variants: 2 (dev/attention_tc.cu, TF32 from f32 inputs) and 3
// (attention_mma.cu, f16 / bf16 inputs). The CPU reference runs on the inputs
// as the kernel reads them (rounded to f16 / bf16 on the host for v3), so
// the bound covers what the kernel itself rounds: TF32 products for v2, the
// probabilities rounded to the input type before PV for v3. FLOPs are as
// exact as variant 1's.
typedef struct {
    const char *name;
    int half;        // 0: f32 inputs (v2); 1: f16, 2: bf16 (v3)
    double tol, rel; // |gpu - cpu| <= tol + |cpu| * rel
} tc_variant;

static float round_half(float x, int half) {
    if (half == 1) return aha_f16_to_f32(aha_f32_to_f16(x));
    uint32_t b;
    memcpy(&b, &x, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1)) & 0xffff0000u; // bf16, to nearest even (finite inputs)
    memcpy(&x, &b, 4);
    return x;
}

// The inputs as variant V reads them: the problem's f32 arrays, or rounded
// copies on the host (the reference's) and f16 / bf16 ones on the device.
static void tc_inputs(const tc_variant *V, problem *P, void *dev[3]) {
    float *host[3] = {P->q, P->k, P->v}, *devf[3] = {P->dq, P->dk, P->dv};
    const long len[3] = {(long)P->n * P->H * P->D, (long)P->T * P->KV * P->D, (long)P->T * P->KV * P->D};
    for (int i = 0; i < 3; i++) {
        dev[i] = devf[i];
        if (!V->half) continue;
        for (long j = 0; j < len[i]; j++) host[i][j] = round_half(host[i][j], V->half);
        cudaCheckExit(cudaMemcpy(devf[i], host[i], sizeof(float) * len[i], cudaMemcpyHostToDevice));
        dev[i] = dalloc<uint16_t>(len[i]);
        CHECK(aha_f32_to_half_cuda(dev[i], len[i], devf[i], len[i], 1, len[i], V->half == 2, 0) == 0, "convert");
    }
}

static int tc_full(const tc_variant *V, float *out, const problem *P, void *const in[3]) {
    if (!V->half)
        return aha_attention_tc_cuda(out, (const float *)in[0], (const float *)in[1], (const float *)in[2], &P->s,
                                     P->n, P->p0, 0);
    return aha_attention_mma_cuda(out, in[0], in[1], in[2], &P->s, P->n, P->p0, V->half == 2, 0);
}

static int tc_routed(const tc_variant *V, float *out, const problem *P, void *const in[3], int window, int sinks,
                     const uint8_t *gate, aha_route_ws *ws) {
    if (!V->half)
        return aha_attention_routed_tc_cuda(out, (const float *)in[0], (const float *)in[1], (const float *)in[2],
                                            &P->s, P->n, P->p0, window, sinks, gate, ws, 0);
    return aha_attention_routed_mma_cuda(out, in[0], in[1], in[2], &P->s, P->n, P->p0, V->half == 2, window, sinks,
                                         gate, ws, 0);
}

static void test_attention_tc(const tc_variant *V) {
    char title[128];
    snprintf(title, sizeof title, "cuda attention (%s): full and routed equal the CPU's", V->name);
    TEST(title, {
        const int windows[] = {16, 256}, sinks[] = {0, 4};
        const double rates[] = {0.1, 1.0};
        for (int c = 0; c < n_cases; c++) {
            // v2 takes llama's scores only; v3 head_dim 64 and 128 (256 runs on v1)
            if (skip_case(c) || (!V->half && gemma_case(c)) || (V->half && !aha_attention_mma_supports(cases[c].D)))
                continue;
            problem P;
            problem_case(&P, c, 2.0f);
            void *in[3];
            tc_inputs(V, &P, in);
            long no = (long)P.n * P.H * P.D;
            float *ref = (float *)malloc(sizeof(float) * no), *got = (float *)malloc(sizeof(float) * no);
            float *scratch = cpu_scratch(&P);
            float *d_o = dalloc<float>(no);
            char what[128];
            aha_attention(ref, P.q, P.k, P.v, &P.s, P.n, P.p0, scratch, NULL);
            cudaCheckExit(cudaMemset(d_o, 0xff, sizeof(float) * no)); // NaN: every output written?
            CHECK(tc_full(V, d_o, &P, in) == 0, "launch");
            cudaCheckExit(cudaDeviceSynchronize());
            dget(got, d_o, no);
            snprintf(what, sizeof what, "%s full H%d KV%d D%d n%d p0 %d", V->name, P.H, P.KV, P.D, P.n, P.p0);
            compare(what, got, ref, no, V->tol, V->rel);
            uint8_t *gate = (uint8_t *)malloc((long)P.n * P.H);
            uint8_t *d_gate = dalloc<uint8_t>((long)P.n * P.H);
            aha_route_ws ws;
            aha_route_ws_alloc(&ws, P.n, P.H);
            for (int wi = 0; wi < 2 && !P.s.window; wi++) // (a natively local layer is never routed)
                for (int si = 0; si < 2; si++)
                    for (int ri = 0; ri < 2; ri++) {
                        random_gate(gate, (long)P.n * P.H, rates[ri]);
                        aha_route r = {windows[wi], sinks[si], gate};
                        aha_attn_flops fc = {0, 0}, fg = {0, 0};
                        aha_attention_routed(ref, P.q, P.k, P.v, &P.s, P.n, P.p0, &r, &fc);
                        cudaCheckExit(cudaMemcpy(d_gate, gate, (long)P.n * P.H, cudaMemcpyHostToDevice));
                        cudaCheckExit(cudaMemset(d_o, 0xff, sizeof(float) * no));
                        CHECK(tc_routed(V, d_o, &P, in, windows[wi], sinks[si], d_gate, &ws) == 0, "launch");
                        aha_route_ws_flops(&ws, &fg, 0);
                        dget(got, d_o, no);
                        snprintf(what, sizeof what, "%s routed H%d KV%d D%d n%d p0 %d w%d s%d g%.2f", V->name, P.H,
                                 P.KV, P.D, P.n, P.p0, windows[wi], sinks[si], rates[ri]);
                        compare(what, got, ref, no, V->tol, V->rel);
                        CHECK(fg.executed == fc.executed && fg.full == fc.full, "%s: FLOPs", what);
                    }
            aha_route_ws_free(&ws);
            free(ref), free(got), free(scratch), free(gate);
            cudaFree(d_o), cudaFree(d_gate);
            if (V->half)
                for (int i = 0; i < 3; i++) cudaFree(in[i]);
            problem_free(&P);
        }
    });
}

// ---- stored-type weights (weight.cu) ------------------------------------------

// The decode of every type: rows to f32 bit for bit as aha_dtype_decode, to
// f16 / bf16 as those values rounded on the host, the embedding lookup (a
// row per token, times a scale) as the CPU's row decode times the scale.
static void test_weight_decode(void) {
    TEST("cuda weights: every stored type decodes as aha_dtype_decode (f32 bit for bit, f16 / bf16 its rounding; embedding rows x scale)", {
        const int rows = 37, n_tok = 5;
        const int32_t tok[n_tok] = {36, 0, 17, 17, 5};
        int32_t *d_tok = dput(tok, n_tok);
        for (int ti = 0; ti < AHA_DTYPE_COUNT; ti++) {
            const aha_dtype t = (aha_dtype)ti;
            const int cols = aha_dtype_block(t) == 1 ? 300 : 512;
            const size_t rb = aha_dtype_bytes(t, cols, cols), nv = (size_t)rows * cols;
            uint8_t *data = (uint8_t *)malloc(rows * rb);
            float *ref = (float *)malloc(sizeof(float) * nv), *got = (float *)malloc(sizeof(float) * nv);
            uint16_t *h16 = (uint16_t *)malloc(sizeof(uint16_t) * nv);
            stored_rows_fill(t, data, rows, cols, &rng);
            aha_dtype_decode(t, data, ref, (int64_t)(nv / aha_dtype_block(t)));
            uint8_t *d_data = dput(data, (long)(rows * rb));
            const aha_weight w = aha_weight_of(d_data, t, rows, cols);
            float *d_out = dalloc<float>((long)nv);
            uint16_t *d16 = dalloc<uint16_t>((long)nv);
            CHECK(aha_weight_rows_cuda(d_out, AHA_F32, &w, 3, 30, 0) == 0, "%s: %s", aha_dtype_name(t), aha_errmsg());
            dget(got, d_out, 30L * cols);
            CHECK(memcmp(got, ref + 3 * cols, sizeof(float) * 30 * cols) == 0, "%s: rows 3..32 differ from aha_dtype_decode",
                  aha_dtype_name(t));
            for (int half = 1; half <= 2; half++) {
                CHECK(aha_weight_rows_cuda(d16, half == 1 ? AHA_F16 : AHA_BF16, &w, 0, rows, 0) == 0, "launch");
                dget(h16, d16, (long)nv);
                long bad = 0;
                for (size_t i = 0; i < nv; i++) {
                    const float v = half == 1 ? aha_f16_to_f32(h16[i]) : aha_bf16_to_f32(h16[i]);
                    const float r = round_half(ref[i], half);
                    bad += memcmp(&v, &r, 4) != 0;
                }
                CHECK(bad == 0, "%s to %s: %ld values are not the decode rounded", aha_dtype_name(t),
                      half == 1 ? "f16" : "bf16", bad);
            }
            CHECK(aha_embed_cuda(d_out, &w, d_tok, n_tok, 8.0f, 0) == 0, "embed launch: %s", aha_errmsg());
            dget(got, d_out, (long)n_tok * cols);
            long bad = 0;
            for (int i = 0; i < n_tok; i++)
                for (int c = 0; c < cols; c++) bad += got[i * cols + c] != ref[tok[i] * cols + c] * 8.0f;
            CHECK(bad == 0, "%s: %ld embedding values differ from the decoded rows x 8", aha_dtype_name(t), bad);
            cudaFree(d_data), cudaFree(d_out), cudaFree(d16), free(data), free(ref), free(got), free(h16);
        }
        cudaFree(d_tok);
    });
}

// y = x w^T with w stored: against the CPU (aha_matmul on the decoded matrix,
// its values and x rounded to the operand type as the device rounds them)
// and against cuBLAS on the whole matrix decoded at once (what the tiles
// stand in for). Tiles of 16 rows: 70 rows take four and a partial one.
static void test_weight_product(void) {
    TEST("cuda weights: stored-type products (tiles into cuBLAS) equal aha_matmul and cuBLAS on the decoded matrix", {
        cublasHandle_t blas;
        cublasCheckExit(cublasCreate(&blas));
        const int rows = 70, n = 9, tile_rows = 16;
        const aha_dtype ops[] = {AHA_F32, AHA_F16, AHA_BF16};
        double worst = 0, worst_blas = 0;
        for (int ti = 0; ti < AHA_DTYPE_COUNT; ti++)
            for (int oi = 0; oi < 3; oi++) {
                const aha_dtype t = (aha_dtype)ti, op = ops[oi];
                const int cols = aha_dtype_block(t) == 1 ? 300 : 512, half = oi;
                const size_t rb = aha_dtype_bytes(t, cols, cols), nv = (size_t)rows * cols;
                uint8_t *data = (uint8_t *)malloc(rows * rb);
                float *dec = (float *)malloc(sizeof(float) * nv), *x = (float *)malloc(sizeof(float) * n * cols);
                float *xr = (float *)malloc(sizeof(float) * n * cols), bias[rows], ref[n * rows], got[n * rows],
                      whole[n * rows], mag[n * rows];
                stored_rows_fill(t, data, rows, cols, &rng);
                fill(x, (long)n * cols, 1);
                fill(bias, rows, 1);
                aha_dtype_decode(t, data, dec, (int64_t)(nv / aha_dtype_block(t)));
                for (size_t i = 0; half && i < nv; i++) dec[i] = round_half(dec[i], half);
                for (int i = 0; i < n * cols; i++) xr[i] = half ? round_half(x[i], half) : x[i];
                aha_matmul(ref, xr, dec, bias, n, cols, rows);
                float *ax = (float *)malloc(sizeof(float) * n * cols), *aw = (float *)malloc(sizeof(float) * nv);
                for (int i = 0; i < n * cols; i++) ax[i] = fabsf(xr[i]);
                for (size_t i = 0; i < nv; i++) aw[i] = fabsf(dec[i]);
                aha_matmul(mag, ax, aw, NULL, n, cols, rows);
                for (int i = 0; i < n * rows; i++) mag[i] += fabsf(bias[i % rows]);
                free(ax), free(aw);
                uint8_t *d_data = dput(data, (long)(rows * rb));
                const aha_weight w = aha_weight_of(d_data, t, rows, cols);
                float *d_x = dput(x, (long)n * cols), *d_b = dput(bias, rows), *d_y = dalloc<float>(n * rows);
                void *d_tile = dalloc<float>((long)tile_rows * cols), *d_act = dalloc<float>((long)n * cols);
                void *d_whole = dalloc<float>((long)nv);
                const long te = aha_mm_tile_elems(&w, op, (long)tile_rows * cols);
                CHECK(te == (t == op ? 0 : (long)tile_rows * cols), "%s as %s: tile of %ld values", aha_dtype_name(t),
                      aha_dtype_name(op), te);
                // a matrix stored in op takes no tile at all (NULL here)
                const aha_mm_cuda mm = {blas, op, te ? d_tile : NULL, te, d_act, (long)n * cols};
                CHECK(aha_matmul_w_cuda(d_y, d_x, &w, d_b, n, 0, &mm, 0) == 0, "%s: %s", aha_dtype_name(t), aha_errmsg());
                dget(got, d_y, n * rows);
                // cuBLAS on the whole matrix, decoded to op in one go
                CHECK(aha_weight_rows_cuda(d_whole, op, &w, 0, rows, 0) == 0, "decode");
                const aha_mm_cuda mm_whole = {blas, op, NULL, 0, d_act, (long)n * cols};
                const aha_weight ww = aha_weight_of(d_whole, op, rows, cols);
                CHECK(aha_matmul_w_cuda(d_y, d_x, &ww, d_b, n, 0, &mm_whole, 0) == 0, "whole: %s", aha_errmsg());
                dget(whole, d_y, n * rows);
                // the tiles and the whole matrix sum in another order than the CPU's sgemm (on the
                // emulator too, whose BLAS splits a 9-row product differently): f32 sums of up to 512
                // terms, bounded by 1e-6 of the terms' magnitude (measured on the emulator: 2.1e-7;
                // a GPU sums in cuBLAS's order, about as far from the CPU's)
                char what[64];
                snprintf(what, sizeof what, "%s as %s operands, vs the CPU", aha_dtype_name(t), aha_dtype_name(op));
                compare_dots(what, got, ref, mag, n * rows, 1e-6);
                snprintf(what, sizeof what, "%s as %s operands, vs cuBLAS whole", aha_dtype_name(t), aha_dtype_name(op));
                compare_dots(what, got, whole, mag, n * rows, 1e-6);
                for (int i = 0; i < n * rows; i++) {
                    worst = fmax(worst, fabs((double)got[i] - ref[i]));
                    worst_blas = fmax(worst_blas, fabs((double)got[i] - whole[i]));
                }
                if (ti == AHA_Q4_K && oi == 0) { // add = 1: y += x w^T (+ bias) onto what y holds
                    CHECK(aha_matmul_w_cuda(d_y, d_x, &w, d_b, n, 1, &mm, 0) == 0, "add: %s", aha_errmsg());
                    float twice[n * rows];
                    dget(twice, d_y, n * rows);
                    for (int i = 0; i < n * rows; i++) whole[i] += got[i];
                    compare("Q4_K, add = 1", twice, whole, n * rows, 2e-5, 2e-5);
                    const aha_mm_cuda small = {blas, op, d_tile, cols - 1, d_act, (long)n * cols};
                    aha_err("%s", "");
                    CHECK(aha_matmul_w_cuda(d_y, d_x, &w, NULL, n, 0, &small, 0) == -1 &&
                              strstr(aha_errmsg(), "at least one row"),
                          "a tile shorter than a row: '%s'", aha_errmsg());
                }
                cudaFree(d_data), cudaFree(d_x), cudaFree(d_b), cudaFree(d_y), cudaFree(d_tile), cudaFree(d_act),
                    cudaFree(d_whole);
                free(data), free(dec), free(x), free(xr);
            }
        printf("  every type x {f32, f16, bf16}: max |err| %.3g vs the CPU, %.3g vs cuBLAS on the whole matrix\n", worst,
               worst_blas);
        cublasDestroy(blas);
    });
}

// Cumulative mass C(k) = sum_{sinks <= j <= k} p[j] of one row, in double,
// from a double-precision softmax (the arbiter for boundary cases): the
// shape's scale and softcap, zero before a native window.
static void row_cumulative(const problem *P, int i, int h, int sinks, double *C) {
    const int D = P->D, t = P->p0 + i, g = P->H / P->KV;
    const int lo = P->s.window && t + 1 > P->s.window ? t - P->s.window + 1 : 0;
    const double cap = P->s.softcap;
    const float *q = P->q + (long)i * P->H * D + (long)h * D;
    double mx = -1e300, sum = 0;
    double *s = C;
    for (int j = lo; j <= t; j++) {
        const float *k = P->k + (long)j * P->KV * D + (long)(h / g) * D;
        double d = 0;
        for (int x = 0; x < D; x++) d += (double)q[x] * k[x];
        s[j] = d * aha_attn_scale(&P->s);
        if (cap > 0) s[j] = cap * tanh(s[j] / cap);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int j = lo; j <= t; j++) sum += exp(s[j] - mx);
    double c = 0;
    for (int j = 0; j <= t; j++) {
        double p = j < lo ? 0 : exp(s[j] - mx) / sum;
        if (j >= sinks) c += p;
        C[j] = c;
    }
}

// The mass split, device vs CPU: tol + |ref| * rel, just above what the
// emulator measures (the probabilities differ by float rounding only).
#define MASS_TOL 2e-7
#define MASS_REL 1e-6

static void test_dependency(void) {
    TEST("cuda dependency pass: d_eps, window errors and the mass split equal the CPU's (noise bounded)", {
        const float eps[] = {0.5f, 0.2f, 0.1f, 0.05f, 0.01f, 0.001f};
        const int windows[] = {4096, 16, 64, 256, 1024, 32};
        const int sinks[] = {0, 4};
        const int n_eps = 6, n_win = 6;
        long noise = 0, total = 0;
        for (int c = 0; c < n_cases; c++) {
            if (skip_case(c)) continue;
            for (int si = 0; si < 2; si++) {
                problem P;
                problem_case(&P, c, 3.0f);
                const long nh = (long)P.n * P.H, no = nh * P.D;
                uint32_t *dref = (uint32_t *)malloc(sizeof(uint32_t) * n_eps * nh), *dgot = (uint32_t *)malloc(sizeof(uint32_t) * n_eps * nh);
                float *wref = (float *)malloc(sizeof(float) * n_win * nh), *wgot = (float *)malloc(sizeof(float) * n_win * nh);
                float *oref = (float *)malloc(sizeof(float) * no), *scratch = cpu_scratch(&P);
                // the mass split at the same windows (4096: t < w everywhere), in its own order
                float *fref = (float *)malloc(sizeof(float) * n_win * nh), *fgot = (float *)malloc(sizeof(float) * n_win * nh);
                float *sref = (float *)malloc(sizeof(float) * nh), *sgot = (float *)malloc(sizeof(float) * nh);
                aha_observe obs = {.eps = eps, .n_eps = n_eps, .windows = windows, .n_windows = n_win,
                                   .sinks = sinks[si], .dep = dref, .werr = wref, .mass_windows = windows,
                                   .n_mass = n_win, .far = fref, .sink = sref};
                aha_attention(oref, P.q, P.k, P.v, &P.s, P.n, P.p0, scratch, &obs);
                float *d_o = dalloc<float>(no), *d_m = dalloc<float>(nh), *d_l = dalloc<float>(nh);
                uint32_t *d_dep = dalloc<uint32_t>(n_eps * nh);
                float *d_werr = dalloc<float>(n_win * nh), *d_far = dalloc<float>(n_win * nh), *d_sink = dalloc<float>(nh);
                aha_observe dobs = {.eps = eps, .n_eps = n_eps, .windows = windows, .n_windows = n_win,
                                    .sinks = sinks[si], .dep = d_dep, .werr = d_werr, .mass_windows = windows,
                                    .n_mass = n_win, .far = d_far, .sink = d_sink};
                CHECK(aha_attention_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m, d_l, 0) == 0, "launch");
                CHECK(aha_dependency_cuda(P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m, d_l, &dobs, 0) == 0, "launch");
                cudaCheckExit(cudaDeviceSynchronize());
                dget(dgot, d_dep, n_eps * nh);
                dget(wgot, d_werr, n_win * nh);
                dget(fgot, d_far, n_win * nh);
                dget(sgot, d_sink, nh);
                // d_eps: equal, or the CPU-side cumulative mass between the two
                // answers is within 2e-5 of eps (float rounding decides).
                double *C = (double *)malloc(sizeof(double) * P.T);
                long bad = 0;
                for (int e = 0; e < n_eps; e++)
                    for (long r = 0; r < nh; r++) {
                        const long at = e * nh + r;
                        total++;
                        if (dgot[at] == dref[at]) continue;
                        const int i = (int)(r / P.H), h = (int)(r % P.H), t = P.p0 + i;
                        row_cumulative(&P, i, h, sinks[si], C);
                        int k1 = t - (int)(dgot[at] > dref[at] ? dgot[at] : dref[at]);
                        int k2 = t - (int)(dgot[at] < dref[at] ? dgot[at] : dref[at]);
                        int ok = dgot[at] >= 1 && dgot[at] <= (uint32_t)t + 1;
                        for (int kk = (k1 + 1 > 0 ? k1 + 1 : 0); ok && kk <= k2; kk++)
                            ok = fabs(C[kk] - eps[e]) <= 2e-5;
                        if (ok) noise++;
                        else if (!bad++)
                            printf("  d_eps mismatch: eps %g i %d h %d t %d: gpu %u cpu %u\n", eps[e], i, h, t,
                                   dgot[at], dref[at]);
                    }
                CHECK(bad == 0, "case %d sinks %d: %ld d_eps values differ beyond noise", c, sinks[si], bad);
                char what[128];
                snprintf(what, sizeof what, "werr H%d KV%d D%d n%d p0 %d s%d", P.H, P.KV, P.D, P.n, P.p0, sinks[si]);
                compare(what, wgot, wref, n_win * nh, 2e-5, 2e-3);
                snprintf(what, sizeof what, "mass far H%d KV%d D%d n%d p0 %d s%d", P.H, P.KV, P.D, P.n, P.p0, sinks[si]);
                compare(what, fgot, fref, n_win * nh, MASS_TOL, MASS_REL);
                snprintf(what, sizeof what, "mass sinks H%d KV%d D%d n%d p0 %d s%d", P.H, P.KV, P.D, P.n, P.p0, sinks[si]);
                compare(what, sgot, sref, nh, MASS_TOL, MASS_REL);
                free(fref), free(fgot), free(sref), free(sgot), cudaFree(d_far), cudaFree(d_sink);
                free(C), free(dref), free(dgot), free(wref), free(wgot), free(oref), free(scratch);
                cudaFree(d_o), cudaFree(d_m), cudaFree(d_l), cudaFree(d_dep), cudaFree(d_werr);
                problem_free(&P);
            }
        }
        printf("  d_eps: %ld values, %ld differ within the eps noise band (bounded, allowed)\n", total, noise);
    });
}

// Exact at both ends of eps, on a row whose float sum passes 1 before its
// last key: keys 0..9 score 0, the rest -800 (probability 0), so each of the
// ten has 1.0f / 10 = 0.1f and their sum is 1.0000000149. No mass lies
// beyond 1: eps 1 is d = 1 everywhere; eps 0 is global up to the first key
// with mass (key 0, or the first past the sinks).
static void test_dependency_ends(void) {
    TEST("cuda dependency pass: eps 1 is d = 1 even where the float sum passes 1; eps 0 is exact", {
        const float eps[] = {1.0f, 0.0f};
        for (int sinks = 0; sinks <= 4; sinks += 4) {
            problem P;
            problem_init(&P, 2, 2, 64, 40, 0, 1.0f);
            for (long i = 0; i < (long)P.n * P.H * P.D; i++) P.q[i] = 1;
            for (long j = 0; j < (long)P.T * P.KV * P.D; j++) P.k[j] = j / (P.KV * P.D) < 10 ? 0.0f : -100.0f;
            cudaCheckExit(cudaMemcpy(P.dq, P.q, sizeof(float) * P.n * P.H * P.D, cudaMemcpyHostToDevice));
            cudaCheckExit(cudaMemcpy(P.dk, P.k, sizeof(float) * P.T * P.KV * P.D, cudaMemcpyHostToDevice));
            const long nh = (long)P.n * P.H;
            uint32_t *got = (uint32_t *)malloc(sizeof(uint32_t) * 2 * nh), *ref = (uint32_t *)malloc(sizeof(uint32_t) * 2 * nh);
            float *oref = (float *)malloc(sizeof(float) * nh * P.D), *scratch = cpu_scratch(&P);
            aha_observe obs = {.eps = eps, .n_eps = 2, .sinks = sinks, .dep = ref};
            aha_attention(oref, P.q, P.k, P.v, &P.s, P.n, P.p0, scratch, &obs);
            float *d_o = dalloc<float>(nh * P.D), *d_m = dalloc<float>(nh), *d_l = dalloc<float>(nh);
            uint32_t *d_dep = dalloc<uint32_t>(2 * nh);
            aha_observe dobs = {.eps = eps, .n_eps = 2, .sinks = sinks, .dep = d_dep};
            CHECK(aha_attention_cuda(d_o, P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m, d_l, 0) == 0, "launch");
            CHECK(aha_dependency_cuda(P.dq, P.dk, P.dv, &P.s, P.n, P.p0, d_m, d_l, &dobs, 0) == 0, "launch");
            cudaCheckExit(cudaDeviceSynchronize());
            dget(got, d_dep, 2 * nh);
            for (long r = 0; r < nh; r++) {
                const int t = (int)(r / P.H), first = t < sinks ? -1 : sinks; // first key with mass past the sinks
                const uint32_t want0 = first < 0 ? 1 : (uint32_t)(t - first + 1);
                CHECK(got[r] == 1 && ref[r] == 1, "sinks %d t %d eps 1: gpu %u cpu %u, want 1", sinks, t, got[r], ref[r]);
                CHECK(got[nh + r] == want0 && ref[nh + r] == want0, "sinks %d t %d eps 0: gpu %u cpu %u, want %u", sinks,
                      t, got[nh + r], ref[nh + r], want0);
            }
            free(got), free(ref), free(oref), free(scratch);
            cudaFree(d_o), cudaFree(d_m), cudaFree(d_l), cudaFree(d_dep);
            problem_free(&P);
        }
    });
}

// ---- what the review of issue 15 found -------------------------------------

// 70,000 tokens in one call: past gridDim.y's 65,535 (embedding, RoPE).
static void test_many_tokens(void) {
    TEST("cuda ops: embedding and RoPE of 70,000 tokens in one call (more than gridDim.y's 65,535)", {
        const int n = 70000, vocab = 50, dim = 8, H = 1, D = 8;
        float *emb = (float *)malloc(sizeof(float) * vocab * dim), *x = (float *)malloc(sizeof(float) * n * dim),
              *ref = (float *)malloc(sizeof(float) * n * dim), inv[4];
        int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * n);
        fill(emb, (long)vocab * dim, 1);
        for (int t = 0; t < n; t++) {
            tok[t] = (int32_t)((frand() * 0.5 + 0.5) * vocab) % vocab;
            memcpy(ref + (long)t * dim, emb + (long)tok[t] * dim, sizeof(float) * dim);
        }
        for (int i = 0; i < D / 2; i++) inv[i] = powf(10000.0f, -2.0f * i / D);
        float *d_emb = dput(emb, (long)vocab * dim), *d_x = dalloc<float>((long)n * dim), *d_inv = dput(inv, D / 2);
        int32_t *d_tok = dput(tok, n);
        const aha_weight w = aha_weight_f32(d_emb, vocab, dim);
        CHECK(aha_embed_cuda(d_x, &w, d_tok, n, 0, 0) == 0, "embed launch: %s", aha_errmsg());
        dget(x, d_x, (long)n * dim);
        compare("embedding, 70000 tokens", x, ref, (long)n * dim, 0, 0);
        for (int t = 0; t < n; t++) aha_rope(ref + (long)t * dim, H, D, t, inv, 0);
        CHECK(aha_rope_cuda(d_x, n, dim, H, D, 0, d_inv, 0, 0) == 0, "rope launch: %s", aha_errmsg());
        dget(x, d_x, (long)n * dim);
        compare("rope, 70000 tokens (positions 0..69999)", x, ref, (long)n * dim, 1e-4, 1e-4);
        cudaFree(d_emb), cudaFree(d_x), cudaFree(d_tok), cudaFree(d_inv);
        free(emb), free(x), free(ref), free(tok);
    });
}

// f16 tensor-core attention: misaligned pointers are refused (-1, one line);
// a V past f16's range at a key masked for most rows leaves no NaN (the
// conversion saturates; PV multiplies P = 0 by that key's V).
static void test_mma_guards(void) {
    TEST("cuda attention (mma f16): misaligned q / k / v / out refused; a 7e4 V at a masked key gives no NaN", {
        const int H = 2, KV = 1, D = 64, n = 40;
        aha_attn_shape s = {H, KV, D, H * D, KV * D};
        const long nq = (long)n * H * D, nkv = (long)n * KV * D, no = nq;
        float *q = (float *)malloc(sizeof(float) * nq), *k = (float *)malloc(sizeof(float) * nkv),
              *v = (float *)malloc(sizeof(float) * nkv), *ref = (float *)malloc(sizeof(float) * no),
              *got = (float *)malloc(sizeof(float) * no);
        fill(q, nq, 2), fill(k, nkv, 1), fill(v, nkv, 1);
        const int big = n - 1; // the last key: masked for every query but the last
        v[(long)big * KV * D + 5] = 7e4f;
        float *dq32 = dput(q, nq), *dk32 = dput(k, nkv), *dv32 = dput(v, nkv), *d_o = dalloc<float>(no + 2);
        uint16_t *dq = dalloc<uint16_t>(nq + 8), *dk = dalloc<uint16_t>(nkv + 8), *dv = dalloc<uint16_t>(nkv + 8);
        CHECK(aha_f32_to_half_cuda(dq, nq, dq32, nq, 1, nq, 0, 0) == 0 &&
                  aha_f32_to_half_cuda(dk, nkv, dk32, nkv, 1, nkv, 0, 0) == 0 &&
                  aha_f32_to_half_cuda(dv, nkv, dv32, nkv, 1, nkv, 0, 0) == 0, "convert: %s", aha_errmsg());
        struct { float *o; const void *q, *k, *v; const char *what; } bad[] = {
            {d_o + 1, dq, dk, dv, "out"}, {d_o, dq + 1, dk, dv, "q"}, {d_o, dq, dk + 4, dv, "k"}, {d_o, dq, dk, dv + 1, "v"}};
        for (int i = 0; i < 4; i++) {
            aha_err("%s", "");
            CHECK(aha_attention_mma_cuda(bad[i].o, bad[i].q, bad[i].k, bad[i].v, &s, n, 0, 0, 0) == -1,
                  "misaligned %s: not refused", bad[i].what);
            CHECK(strstr(aha_errmsg(), "misaligned") && !strchr(aha_errmsg(), '\n'), "misaligned %s: message '%s'",
                  bad[i].what, aha_errmsg());
        }
        printf("  misaligned out, q, k, v: -1 (%s)\n", aha_errmsg());
        cudaCheckExit(cudaMemset(d_o, 0xff, sizeof(float) * no));
        CHECK(aha_attention_mma_cuda(d_o, dq, dk, dv, &s, n, 0, 0, 0) == 0, "launch: %s", aha_errmsg());
        cudaCheckExit(cudaDeviceSynchronize());
        dget(got, d_o, no);
        for (long i = 0; i < nq; i++) q[i] = aha_f16_to_f32(aha_f32_to_f16(q[i]));
        for (long i = 0; i < nkv; i++) // V as the device holds it: saturated at 65504
            k[i] = aha_f16_to_f32(aha_f32_to_f16(k[i])), v[i] = aha_f16_to_f32(aha_f32_to_f16(fminf(v[i], 65504.0f)));
        float *scratch = (float *)malloc(sizeof(float) * aha_attention_scratch(s.n_heads, n, 0));
        aha_attention(ref, q, k, v, &s, n, 0, scratch, NULL);
        long nan = 0;
        for (long i = 0; i < no; i++) nan += isnan(got[i]);
        CHECK(nan == 0, "%ld NaN outputs", nan);
        compare("mma f16, V 7e4 (saturated) at a masked key", got, ref, no, 5e-4, 1e-3);
        cudaFree(dq32), cudaFree(dk32), cudaFree(dv32), cudaFree(d_o), cudaFree(dq), cudaFree(dk), cudaFree(dv);
        free(q), free(k), free(v), free(ref), free(got), free(scratch);
    });
}

int main(int argc, char **argv) {
    quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tiny = argc > 1 && strcmp(argv[1], "--tiny") == 0;
    const int review = argc > 1 && strcmp(argv[1], "--review") == 0;
    test_host();
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    const tc_variant tc[] = {{"tc TF32", 0, 5e-3, 1e-2}, {"mma f16", 1, 5e-4, 1e-3}, {"mma bf16", 2, 3e-3, 5e-3}};
    const char *groups[] = {"cuda ops", "cuda attention", "cuda attention (tensor cores: TF32, f16, bf16)",
                            "cuda dependency pass", "cuda review fixes (70,000 tokens, mma guards)",
                            "cuda weights (stored types)"};
    if (e != cudaSuccess || count == 0) {
        char why[160];
        if (e != cudaSuccess) snprintf(why, sizeof why, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        else snprintf(why, sizeof why, "cudaGetDeviceCount returned 0");
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) printf("SKIP %s: no CUDA device (%s)\n", groups[g], why);
        TEST_EXIT();
    }
    cudaDeviceProp prop;
    cudaCheckExit(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    if (!review) test_ops();
    test_many_tokens();
    test_mma_guards();
    if (review) TEST_EXIT();
    test_attention();
    test_attention_refusals();
    for (int v = 0; v < 3; v++) test_attention_tc(&tc[v]);
    test_dependency();
    test_dependency_ends();
    test_weight_decode();
    test_weight_product();
    TEST_EXIT();
}
