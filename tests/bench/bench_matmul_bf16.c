// The bf16 product (kernels/matmul_bf16.c) against f32 sgemm on SmolLM2's
// shapes, interleaved, medians of 7: what --dtype bf16 costs or gains per
// product on this CPU, and which implementation runs.
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "err.h"
#include "matmul_bf16.h"

int main(void) {
    // [n tokens] x [in] -> [out]: q/o, k/v, gate/up, down, lm_head at 512 and
    // 2048 tokens, and a decode row.
    const int shapes[][3] = {{512, 576, 576}, {512, 576, 192}, {512, 576, 1536}, {512, 1536, 576},
                             {2048, 576, 1536}, {512, 576, 49152}, {1, 576, 1536}};
    aha_mm_bf16 *k = aha_mm_bf16_init(AHA_BF16_AUTO);
    if (!k) return fprintf(stderr, "bench_matmul_bf16: %s\n", aha_errmsg()), 1;
    printf("bf16: %s; %d threads\n", aha_mm_bf16_describe(k), omp_get_max_threads());
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int n = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        float *x = malloc(sizeof(float) * n * in), *w = malloc(sizeof(float) * in * out);
        float *y = malloc(sizeof(float) * n * out);
        aha_bf16 *wb = malloc(sizeof(aha_bf16) * in * out);
        for (long i = 0; i < (long)n * in; i++) x[i] = (float)(i % 7) * 0.1f;
        for (long i = 0; i < (long)in * out; i++) w[i] = (float)(i % 5) * 0.01f;
        aha_bf16_from_f32_n(wb, w, (size_t)in * out);
        aha_weight wh = aha_weight_of(wb, AHA_BF16, out, in);
        const int reps = n == 1 ? 200 : out > 10000 ? 2 : 10;
        double tf[7], tb[7];
        for (int r = 0; r < 7; r++) {
            double t0 = omp_get_wtime();
            for (int q = 0; q < reps; q++)
                if (n == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1, w, in, x, 1, 0, y, 1);
                else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1, x, in, w, in, 0, y, out);
            tf[r] = (omp_get_wtime() - t0) / reps;
            t0 = omp_get_wtime();
            for (int q = 0; q < reps; q++) aha_mm_bf16_run(k, y, x, &wh, NULL, n);
            tb[r] = (omp_get_wtime() - t0) / reps;
        }
        const double f = bench_median(tf, 7), b = bench_median(tb, 7), flop = 2.0 * n * in * out;
        printf("[%4d x %4d] x [%4d x %5d]: f32 sgemm %8.3f ms %5.1f GFLOP/s | bf16 %8.3f ms %5.1f GFLOP/s | bf16/f32 time %.2f\n",
               n, in, in, out, f * 1e3, flop / f / 1e9, b * 1e3, flop / b / 1e9, b / f);
        free(x), free(w), free(y), free(wb);
    }
    aha_mm_bf16_free(k);
    return 0;
}
