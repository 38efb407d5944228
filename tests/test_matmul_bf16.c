// bf16 products (kernels/matmul_bf16.h): rounding, the two implementations
// against each other, primitive caching, bias. With arguments it is the
// numpy cross-check's helper (tests/test_bf16.py):
//   test_matmul_bf16 --io auto|onednn|sgemm N IN OUT x.f32 w.f32 y.f32
// reads x[N, IN] and w[OUT, IN] (raw f32), rounds w to bf16, writes y[N, OUT].
#include <stdint.h>

#include "check.h"
#include "err.h"
#include "frand.h"
#include "matmul_bf16.h"

static uint32_t bits(float f) { union { float f; uint32_t u; } v = {f}; return v.u; }
static float from_bits(uint32_t u) { union { uint32_t u; float f; } v = {u}; return v.f; }

static float *randv(size_t n, uint64_t *s) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = frand_next(s);
    return v;
}

// One product through implementation impl; w given in f32, rounded here.
static float *product(aha_mm_bf16 *k, const float *x, const float *w, const float *bias, int n, int in, int out) {
    aha_bf16 *wb = malloc((size_t)out * in * sizeof *wb);
    float *y = calloc((size_t)n * out, sizeof *y);
    aha_bf16_from_f32_n(wb, w, (size_t)out * in);
    aha_weight wh = aha_weight_of(wb, AHA_BF16, out, in);
    int rc = aha_mm_bf16_run(k, y, x, &wh, bias, n);
    free(wb);
    if (rc != 0) { printf("  %s\n", aha_errmsg()); free(y); return NULL; }
    return y;
}

static int io_mode(char **a) {
    aha_bf16_impl impl = !strcmp(a[0], "onednn") ? AHA_BF16_ONEDNN : !strcmp(a[0], "sgemm") ? AHA_BF16_SGEMM : AHA_BF16_AUTO;
    int n = atoi(a[1]), in = atoi(a[2]), out = atoi(a[3]);
    float *x = malloc((size_t)n * in * 4), *w = malloc((size_t)out * in * 4);
    FILE *fx = fopen(a[4], "rb"), *fw = fopen(a[5], "rb");
    if (!fx || !fw || fread(x, 4, (size_t)n * in, fx) != (size_t)n * in || fread(w, 4, (size_t)out * in, fw) != (size_t)out * in) {
        fprintf(stderr, "test_matmul_bf16: cannot read %s / %s\n", a[4], a[5]);
        return 2;
    }
    fclose(fx), fclose(fw);
    aha_mm_bf16 *k = aha_mm_bf16_init(impl);
    float *y = k ? product(k, x, w, NULL, n, in, out) : NULL;
    FILE *fy = fopen(a[6], "wb");
    if (!y || !fy || fwrite(y, 4, (size_t)n * out, fy) != (size_t)n * out) return 2;
    fclose(fy);
    printf("%s\n", aha_mm_bf16_describe(k));
    aha_mm_bf16_free(k);
    free(x), free(w), free(y);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 9 && !strcmp(argv[1], "--io")) return io_mode(argv + 2);

    TEST("bf16 rounding: nearest, ties to even, inf and NaN kept, overflow to inf", {
        CHECK(aha_bf16_from_f32(1.0f) == 0x3f80, "1.0");
        CHECK(aha_bf16_from_f32(from_bits(0x3f808000)) == 0x3f80, "tie rounds down to even");
        CHECK(aha_bf16_from_f32(from_bits(0x3f818000)) == 0x3f82, "tie rounds up to even");
        CHECK(aha_bf16_from_f32(from_bits(0x3f808001)) == 0x3f81, "above half rounds up");
        CHECK(aha_bf16_from_f32(from_bits(0x3f807fff)) == 0x3f80, "below half rounds down");
        CHECK(aha_bf16_from_f32(-1.0f / 3) == 0xbeab, "-1/3: %04x", aha_bf16_from_f32(-1.0f / 3));
        CHECK(aha_bf16_from_f32(from_bits(0x7f7fffff)) == 0x7f80, "FLT_MAX rounds to inf");
        CHECK(aha_bf16_from_f32(from_bits(0xff800000)) == 0xff80, "-inf");
        uint16_t nan = aha_bf16_from_f32(from_bits(0x7f800001));
        CHECK((nan & 0x7f80) == 0x7f80 && (nan & 0x7f), "NaN stays NaN: %04x", nan);
        CHECK(bits(aha_bf16_to_f32(0xbeab)) == 0xbeab0000, "widening is exact");
    });

    uint64_t seed = 0x5eedbf16;
    // oneDNN's own path needs a CPU with bf16 kernels (AVX512); elsewhere SKIP.
    aha_mm_bf16 *probe = aha_mm_bf16_init(AHA_BF16_ONEDNN);
    char why[200];
    snprintf(why, sizeof why, "%s", probe ? "" : aha_errmsg());
    const int have_onednn = probe != NULL;
    aha_mm_bf16_free(probe);
    if (!have_onednn) {
        printf("SKIP bf16 matmul: sgemm fallback and oneDNN give the same numbers: %s\n", why);
        printf("SKIP bf16 matmul: one oneDNN primitive per shape, reused; decode rows take the fused dots: %s\n", why);
    } else {
        TEST("bf16 matmul: sgemm fallback and oneDNN give the same numbers", {
            aha_mm_bf16 *a = aha_mm_bf16_init(AHA_BF16_SGEMM), *b = aha_mm_bf16_init(AHA_BF16_ONEDNN);
            CHECK(a && b, "init: %s", aha_errmsg());
            const int shapes[][3] = {{1, 576, 64}, {5, 576, 64}, {7, 37, 19}, {33, 576, 200}};
            for (int s = 0; a && b && s < 4; s++) {
                const int n = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
                float *x = randv((size_t)n * in, &seed), *w = randv((size_t)out * in, &seed);
                float *ya = product(a, x, w, NULL, n, in, out), *yb = product(b, x, w, NULL, n, in, out);
                CHECK(ya && yb, "product failed");
                double worst = 0; // only the order of the f32 sums differs
                for (int i = 0; ya && yb && i < n * out; i++) worst = fmax(worst, fabs(ya[i] - yb[i]));
                CHECK(worst <= 2e-5, "[%d x %d x %d]: max |sgemm - oneDNN| = %.3g", n, in, out, worst);
                free(x), free(w), free(ya), free(yb);
            }
            aha_mm_bf16_free(a), aha_mm_bf16_free(b);
        });

        TEST("bf16 matmul: one oneDNN primitive per shape, reused; decode rows take the fused dots", {
            aha_mm_bf16 *k = aha_mm_bf16_init(AHA_BF16_ONEDNN);
            float *x = randv(8 * 16, &seed), *w = randv(8 * 16, &seed);
            for (int r = 0; r < 3; r++) free(product(k, x, w, NULL, 8, 16, 8));
            CHECK(aha_mm_bf16_primitives(k) == 1, "same shape 3 times: %d primitives", aha_mm_bf16_primitives(k));
            free(product(k, x, w, NULL, 6, 16, 8));
            free(product(k, x, w, NULL, 8, 16, 8));
            CHECK(aha_mm_bf16_primitives(k) == 2, "two shapes: %d primitives", aha_mm_bf16_primitives(k));
            for (int n = 1; n <= AHA_WEIGHT_FUSED_MAX; n++) free(product(k, x, w, NULL, n, 16, 8));
            CHECK(aha_mm_bf16_primitives(k) == 2, "n <= %d made primitives: %d", AHA_WEIGHT_FUSED_MAX,
                  aha_mm_bf16_primitives(k));
            free(x), free(w);
            aha_mm_bf16_free(k);
        });

    }

    TEST("bf16 matmul: bias added in f32; empty shapes and non-bf16 weights refused", {
        for (int impl = have_onednn ? AHA_BF16_ONEDNN : AHA_BF16_SGEMM; impl <= AHA_BF16_SGEMM; impl++) {
            aha_mm_bf16 *k = aha_mm_bf16_init(impl);
            float x[2] = {1.0f, 2.0f}, w[2] = {0.5f, 0.25f}, bias[1] = {1e-3f};
            float *y = product(k, x, w, bias, 1, 2, 1);
            CHECK(y && y[0] == 1.0f + 1e-3f, "impl %d: 1*0.5 + 2*0.25 + 1e-3 = %.9g", impl, y ? y[0] : 0);
            free(y);
            float yy[1];
            aha_bf16 wb[1] = {0};
            aha_weight wh = aha_weight_of(wb, AHA_BF16, 1, 1), wf = aha_weight_of(w, AHA_F32, 1, 1);
            CHECK(aha_mm_bf16_run(k, yy, x, &wh, NULL, 0) != 0 && strstr(aha_errmsg(), "empty shape"), "n = 0");
            CHECK(aha_mm_bf16_run(k, yy, x, &wf, NULL, 1) != 0 && strstr(aha_errmsg(), "not bf16"), "f32 weight");
            aha_mm_bf16_free(k);
        }
    });

    TEST("bf16 matmul: auto picks oneDNN only with bf16 kernels", {
        aha_mm_bf16 *k = aha_mm_bf16_init(AHA_BF16_AUTO);
        const char *d = aha_mm_bf16_describe(k);
        printf("  auto: %s\n", d);
        CHECK((aha_mm_bf16_impl_of(k) == AHA_BF16_ONEDNN) == (strstr(d, "oneDNN bf16") != NULL), "%s", d);
        CHECK(aha_mm_bf16_impl_of(k) == AHA_BF16_ONEDNN || strstr(d, "no bf16 kernels") ||
              strstr(d, "avx512_core_bf16") || strstr(d, "amx"), "%s", d);
        aha_mm_bf16_free(k);
    });
    TEST_EXIT();
}
