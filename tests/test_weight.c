// Stored-type weights (kernels/weight.h): every fused dot, the tile path and
// the row decoder against common/dtype.c's decoder and a plain double dot,
// over every type, with rows and columns that leave partial tiles and tails.
#include <stdint.h>

#include "check.h"
#include "frand.h"
#include "stored_rows.h"
#include "tensor.h"
#include "weight.h"

static uint64_t seed = 0x5eed13a;

enum { ROWS = 70, COLS_Q = 768, COLS_F = 771, N = 9 };

static void test_type(aha_dtype t) {
    const int cols = aha_dtype_block(t) == 1 ? COLS_F : COLS_Q;
    size_t rb = aha_dtype_bytes(t, cols, cols);
    uint8_t *data = malloc(ROWS * rb);
    float *dec = malloc(sizeof(float) * ROWS * cols), *x = malloc(sizeof(float) * N * cols);
    float *row = malloc(sizeof(float) * cols), yf[N * ROWS], yt[N * ROWS], yd[N * ROWS];
    float bias[ROWS];
    stored_rows_fill(t, data, ROWS, cols, &seed);
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
