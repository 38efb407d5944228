// The two paths of aha_matmul_w on a real model's matrices: prefill tiles
// (which tile size) and decode's fused dots (up to how many rows of x they
// beat the tiles), against sgemm on the same matrix converted to f32.
// Usage: bench_weight [model.gguf] [reps=5]. Prints medians.
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "err.h"
#include "model.h"
#include "ops.h"
#include "weight.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { MAXR = 16 };

// Median seconds of one y = x w^T over n rows: path 0 fused, 1 tiled (tile), 2 f32 sgemm on wf.
static double time_one(int path, float *y, const float *x, const aha_weight *w, const float *wf, int n,
                       int tile, int reps) {
    double t[MAXR];
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        if (path == 0) aha_matmul_w_fused(y, x, w, NULL, n);
        else if (path == 1) aha_matmul_w_tiled(y, x, w, NULL, n, tile);
        else aha_matmul(y, x, wf, NULL, n, w->cols, w->rows);
        t[r] = now_s() - t0;
    }
    return bench_median(t, reps);
}

static void bench_matrix(const char *name, const aha_weight *w, int reps) {
    const int N = 256;
    float *x = malloc(sizeof(float) * N * w->cols), *y = malloc(sizeof(float) * N * w->rows);
    float *wf = malloc(sizeof(float) * w->rows * w->cols);
    for (long i = 0; i < (long)N * w->cols; i++) x[i] = (float)((i * 7919) % 200 - 100) * 0.01f;
    aha_weight_rows(w, 0, w->rows, wf);
    double gf = 2.0 * N * w->rows * w->cols / 1e9;
    printf("%-22s %s [%d, %d], %.1f MiB stored\n", name, aha_dtype_name(w->type), w->rows, w->cols,
           aha_weight_bytes(w) / 1048576.0);
    printf("  prefill n=%d: f32 sgemm %.1f GFLOP/s; tiles:", N, gf / time_one(2, y, x, w, wf, N, 0, reps));
    const int tiles[] = {16, 32, 64, 128, 256};
    for (int i = 0; i < 5; i++) printf(" %d: %.1f", tiles[i], gf / time_one(1, y, x, w, wf, N, tiles[i], reps));
    printf(" GFLOP/s\n  decode us per call (fused / tiles of %d):", AHA_WEIGHT_TILE);
    const int ns[] = {1, 2, 4, 8, 16};
    for (int i = 0; i < 5; i++)
        printf(" n=%d %.0f/%.0f", ns[i], 1e6 * time_one(0, y, x, w, wf, ns[i], 0, reps),
               1e6 * time_one(1, y, x, w, wf, ns[i], AHA_WEIGHT_TILE, reps));
    printf("\n  decode n=1: fused %.1f GB/s of stored bytes; f32 sgemv %.1f GB/s of f32 bytes\n",
           aha_weight_bytes(w) / time_one(0, y, x, w, wf, 1, 0, reps) / 1e9,
           4.0 * w->rows * w->cols / time_one(2, y, x, w, wf, 1, 0, reps) / 1e9);
    free(x), free(y), free(wf);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > MAXR) {
        fprintf(stderr, "usage: bench_weight [model.gguf] [reps=5, 1..%d]\n", MAXR);
        return 1;
    }
    aha_model m;
    if (aha_model_load(&m, path) != 0) {
        fprintf(stderr, "bench_weight: %s\n", aha_errmsg());
        return 1;
    }
    printf("model %s, %d threads\n", path, omp_get_max_threads());
    const aha_layer *L = &m.layers[0];
    bench_matrix("layer 0 q_proj", &L->wq, reps);
    bench_matrix("layer 0 gate_proj", &L->w_gate, reps);
    bench_matrix("layer 0 down_proj", &L->w_down, reps);
    bench_matrix("lm_head", &m.lm_head, reps);
    aha_model_free(&m);
    return 0;
}
