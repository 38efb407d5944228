// Shared by the benchmarks: medians of repeated timings.
#pragma once
#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median of x[0..n) (sorts x in place).
static double bench_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
    return x[n / 2];
}
