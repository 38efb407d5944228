// A weight matrix as the file stores it: f32, f16, bf16 or a GGUF block type,
// read in place (mmap'd) and converted inside the product, never copied
// whole. y = x w^T reads w one of two ways:
//   - decode (n <= AHA_WEIGHT_FUSED_MAX rows of x): one fused dequantize-dot
//     per output row over the stored blocks, each block read once per call;
//   - prefill (more rows): tiles of at most AHA_WEIGHT_TILE rows (balanced
//     over the threads) converted to f32 in a per-thread buffer, one sgemm
//     per tile, OpenMP over the tiles.
// f32 weights: prefill goes straight to BLAS, decode takes the fused dots
// (OpenBLAS's sgemv read them at half the rate). A new compute type (say
// bf16) adds a tile converter beside the f32 one; the handle stays as it is.
#pragma once
#include <stddef.h>

#include "dtype.h" // aha_weight, the handle itself: the model (runtime/model) holds it too

#define AHA_WEIGHT_FUSED_MAX 4 // most rows of x that take the fused decode path
#define AHA_WEIGHT_TILE 128    // most weight rows per converted tile (measured: tests/bench/bench_weight)

// Decode rows r0..r0+nr-1 into out[nr, cols] (the embedding lookup: one row).
void aha_weight_rows(const aha_weight *w, int r0, int nr, float *out);
// y[n, rows] = x[n, cols] w^T (+ bias[rows] when bias != NULL).
void aha_matmul_w(float *y, const float *x, const aha_weight *w, const float *bias, int n);
// The two paths of aha_matmul_w, for tests and benchmarks: fused dots for
// any n, and tiles of `tile` rows for any n (f32 weights: BLAS in the tiled one).
void aha_matmul_w_fused(float *y, const float *x, const aha_weight *w, const float *bias, int n);
void aha_matmul_w_tiled(float *y, const float *x, const aha_weight *w, const float *bias, int n,
                        int tile);
// One fused dot: row r of w with x[cols], reading the stored blocks once.
float aha_weight_dot(const aha_weight *w, int r, const float *x);
// The instruction sets the fused dots may use: at most `want` and what the
// build has (-march); returns the level now in force. Tests run each level;
// not thread-safe against running products.
enum { AHA_DOT_PORTABLE, AHA_DOT_AVX2, AHA_DOT_AVX512 };
int aha_weight_dot_level(int want);
