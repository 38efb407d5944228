// Stored-type weights (kernels/weight.h): every fused dot, the tile path and
// the row decoder against common/dtype.c's decoder and a plain double dot,
// over every type, with rows and columns that leave partial tiles and tails.
#include <stdint.h>

#include "check.h"
#include "frand.h"
#include "tensor.h"
#include "weight.h"

static uint64_t seed = 0x5eed13a;

static uint16_t rnd16(void) { return (uint16_t)((frand_next(&seed) + 1.0f) * 32767.0f); }

// Random rows of type t; the f16 scales (and f16/bf16/f32 values) kept finite.
static void fill_rows(aha_dtype t, uint8_t *p, int rows, int cols) {
    size_t bb = aha_dtype_block_bytes(t), nb = (size_t)rows * cols / aha_dtype_block(t);
    for (size_t i = 0; i < nb * bb; i++) p[i] = (uint8_t)rnd16();
    if (t == AHA_F32)
        for (size_t i = 0; i < nb; i++) ((float *)(void *)p)[i] = frand_next(&seed);
    if (t == AHA_F32) return;
    // byte offsets of each block's f16 scales (-1 ends the list)
    static const int scales[AHA_DTYPE_COUNT][3] = {
        [AHA_F16] = {0, -1},  [AHA_BF16] = {-1},     [AHA_Q8_0] = {0, -1},     [AHA_Q4_0] = {0, -1},
        [AHA_Q4_1] = {0, 2, -1}, [AHA_Q5_0] = {0, -1}, [AHA_Q5_1] = {0, 2, -1}, [AHA_Q2_K] = {80, 82, -1},
        [AHA_Q3_K] = {108, -1}, [AHA_Q4_K] = {0, 2, -1}, [AHA_Q5_K] = {0, 2, -1}, [AHA_Q6_K] = {208, -1},
    };
    for (size_t b = 0; b < nb; b++) {
        uint8_t *q = p + b * bb;
        if (t == AHA_BF16) { // sign, exponent of 0.5..1, random mantissa
            uint16_t v = (rnd16() & 0x807f) | 0x3f00;
            q[0] = v & 0xff, q[1] = v >> 8;
            continue;
        }
        for (int k = 0; scales[t][k] >= 0; k++) { // 2^-7..2^-6 (f16: 0.5..1), either sign
            uint16_t v = (rnd16() & 0x83ff) | (t == AHA_F16 ? 0x3800 : 0x2000);
            q[scales[t][k]] = v & 0xff, q[scales[t][k] + 1] = v >> 8;
        }
    }
}

enum { ROWS = 70, COLS_Q = 768, COLS_F = 771, N = 9 };

static void test_type(aha_dtype t) {
    const int cols = aha_dtype_block(t) == 1 ? COLS_F : COLS_Q;
    size_t rb = aha_dtype_bytes(t, cols, cols);
    uint8_t *data = malloc(ROWS * rb);
    float *dec = malloc(sizeof(float) * ROWS * cols), *x = malloc(sizeof(float) * N * cols);
    float *row = malloc(sizeof(float) * cols), yf[N * ROWS], yt[N * ROWS], yd[N * ROWS];
    float bias[ROWS];
    fill_rows(t, data, ROWS, cols);
    for (int i = 0; i < N * cols; i++) x[i] = frand_next(&seed);
    for (int i = 0; i < ROWS; i++) bias[i] = frand_next(&seed);
    aha_tensor ten = {"w", t, 2, {ROWS, cols}, data, ROWS * rb};
    aha_dequant(&ten, dec);
    aha_weight w = aha_weight_of(data, t, ROWS, cols);
    CHECK(w.row_bytes == rb, "row_bytes %zu, want %zu", w.row_bytes, rb);
    // the embedding lookup: one row, bit for bit the whole tensor's decode
    aha_weight_rows(&w, 37, 1, row);
    CHECK(memcmp(row, dec + 37 * cols, sizeof(float) * cols) == 0, "row 37 differs from aha_dequant");
    aha_matmul_w_fused(yf, x, &w, bias, N);
    aha_matmul_w_tiled(yt, x, &w, bias, N, 32); // 3 tiles, the last partial
    aha_matmul_w(yd, x, &w, NULL, 2);           // the dispatch, decode side
    double worst = 0;
    for (int n = 0; n < N; n++)
        for (int r = 0; r < ROWS; r++) {
            double ref = 0, mag = 0;
            for (int i = 0; i < cols; i++) {
                ref += (double)dec[r * cols + i] * x[n * cols + i];
                mag += fabs((double)dec[r * cols + i] * x[n * cols + i]);
            }
            // float32 sums over `cols` terms: error measured under 7e-8 of sum |w x|
            double e1 = fabs(yf[n * ROWS + r] - bias[r] - ref) / mag;
            double e2 = fabs(yt[n * ROWS + r] - bias[r] - ref) / mag;
            double e3 = n < 2 ? fabs(yd[n * ROWS + r] - ref) / mag : 0;
            worst = fmax(worst, fmax(e1, fmax(e2, e3)));
        }
    CHECK(worst < 2e-7, "%s: worst error %.3g of sum |w x|", aha_dtype_name(t), worst);
    if (getenv("AHA_TEST_VERBOSE")) printf("  %s worst %.3g\n", aha_dtype_name(t), worst);
    free(data), free(dec), free(x), free(row);
}

int main(void) {
    // every level of the fused dots this build has (-march=native: this CPU's)
    static const char *const levels[] = {"portable", "avx2", "avx512"};
    const int best = aha_weight_dot_level(AHA_DOT_AVX512);
    for (int lv = best; lv >= AHA_DOT_PORTABLE; lv--) {
        aha_weight_dot_level(lv);
        for (int t = 0; t < AHA_DTYPE_COUNT; t++) {
            char name[64];
            snprintf(name, sizeof name, "weight_dot_and_tiles_%s (%s dots)", aha_dtype_name((aha_dtype)t),
                     levels[lv]);
            TEST(name, test_type((aha_dtype)t));
        }
    }
    if (best < AHA_DOT_AVX512)
        printf("SKIP weight dots at %s: this build's CPU lacks it (-march=native)\n", levels[best + 1]);
    aha_weight_dot_level(best);
    TEST_EXIT();
}
