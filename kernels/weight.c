// Products with stored-type weights: the path by rows of x, the f32 tiles of
// the prefill path, and row decoding. The fused dots are weight_dot.c's.
#include "weight.h"

#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops.h"

void aha_weight_rows(const aha_weight *w, int r0, int nr, float *out) {
    const uint8_t *p = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    int64_t nb = (int64_t)nr * (w->cols / aha_dtype_block(w->type)); // rows are whole blocks
    aha_dtype_decode(w->type, p, out, nb);
}

static void add_bias(float *y, const float *bias, int n, int rows) {
    for (int t = 0; bias && t < n; t++)
        for (int i = 0; i < rows; i++) y[(size_t)t * rows + i] += bias[i];
}

// Rows r0..r1-1 of y by fused dots; the row stays in cache across the n rows of x.
static void fused_rows(float *y, const float *x, const aha_weight *w, int n, int r0, int r1) {
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < n; t++)
            y[(size_t)t * w->rows + r] = aha_weight_dot(w, r, x + (size_t)t * w->cols);
}

void aha_matmul_w_fused(float *y, const float *x, const aha_weight *w, const float *bias, int n) {
    // f32 too: OpenBLAS's sgemv streamed f32 rows at about half the rate of
    // these dots (SmolLM2 F32, decode at 512: 37 against 64 tok/s). Chunks
    // of 16 rows: an lm_head of 49152 rows spreads over the threads, while a
    // 576-row projection still gives each thread whole cache lines of y.
#pragma omp parallel for schedule(static)
    for (int r = 0; r < w->rows; r += 16) fused_rows(y, x, w, n, r, r + 16 < w->rows ? r + 16 : w->rows);
    add_bias(y, bias, n, w->rows);
}

void aha_matmul_w_tiled(float *y, const float *x, const aha_weight *w, const float *bias, int n,
                        int tile) {
    if (w->type == AHA_F32) {
        aha_matmul(y, x, w->data, bias, n, w->cols, w->rows);
        return;
    }
    const int nt = (w->rows + tile - 1) / tile, cols = w->cols;
#pragma omp parallel
    {
        // Inside the parallel region OpenBLAS (its OpenMP build) runs each
        // sgemm on the calling thread: one tile per thread at a time.
        float *buf = malloc((size_t)tile * cols * sizeof(float));
#pragma omp for schedule(static)
        for (int i = 0; i < nt; i++) {
            int r0 = i * tile, nr = w->rows - r0 < tile ? w->rows - r0 : tile;
            if (!buf) { // out of memory for the tile: the fused path needs none
                fused_rows(y, x, w, n, r0, r0 + nr);
                continue;
            }
            aha_weight_rows(w, r0, nr, buf);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, nr, cols, 1.0f, x, cols, buf,
                        cols, 0.0f, y + r0, w->rows);
        }
        free(buf);
    }
    add_bias(y, bias, n, w->rows);
}

// At most AHA_WEIGHT_TILE rows a tile, a multiple of 16, and as many tiles a
// thread as the next: 576 rows on 2 threads are 6 tiles of 96, not 4 of 128
// and one of 64 (three tiles on one thread, two on the other).
static int balanced_tile(int rows) {
    int th = omp_get_max_threads();
    int nt = (rows + AHA_WEIGHT_TILE - 1) / AHA_WEIGHT_TILE;
    nt = (nt + th - 1) / th * th;
    int tile = (rows + nt - 1) / nt;
    return (tile + 15) / 16 * 16;
}

void aha_matmul_w(float *y, const float *x, const aha_weight *w, const float *bias, int n) {
    if (n <= AHA_WEIGHT_FUSED_MAX) aha_matmul_w_fused(y, x, w, bias, n);
    else aha_matmul_w_tiled(y, x, w, bias, n, balanced_tile(w->rows));
}
