// bf16 x bf16 -> f32 matrix products on the CPU (--dtype bf16 --device cpu).
// Both operands are bf16 (round-to-nearest-even from f32), each product of two
// bf16 values is exact in f32 (8 + 8 significand bits <= 24) and the sums
// accumulate in f32. Two implementations compute those same numbers (up to
// the order of the f32 sums):
//   onednn  oneDNN's matmul primitive, where the CPU has bf16 dot products
//           (AVX512-BF16, AMX): one primitive per shape, created once, cached;
//   sgemm   bf16-rounded activations, bf16 weight tiles widened to f32
//           (exactly), OpenBLAS sgemm (decode: weight.h's dots over the bf16
//           rows in place): where oneDNN has no native
//           bf16 kernel (oneDNN 2.6 on AVX2 has no bf16 matmul at all).
// The choice is made at run time from the ISA oneDNN reports.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "weight.h"

typedef uint16_t aha_bf16; // the top 16 bits of an IEEE f32

// Round to nearest even (NaN stays a quiet NaN), as torch's .to(bfloat16).
static inline aha_bf16 aha_bf16_from_f32(float f) {
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (aha_bf16)((v.u >> 16) | 0x40);
    return (aha_bf16)((v.u + 0x7fffu + ((v.u >> 16) & 1)) >> 16);
}
static inline float aha_bf16_to_f32(aha_bf16 h) {
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}
void aha_bf16_from_f32_n(aha_bf16 *dst, const float *src, size_t n);

typedef enum { AHA_BF16_AUTO, AHA_BF16_ONEDNN, AHA_BF16_SGEMM } aha_bf16_impl;

typedef struct aha_mm_bf16 aha_mm_bf16; // oneDNN engine, primitive cache, scratch

// impl: AUTO picks by the CPU (above); ONEDNN / SGEMM force one (tests).
// NULL with the error set when oneDNN cannot start or has no bf16 matmul here.
aha_mm_bf16 *aha_mm_bf16_init(aha_bf16_impl impl);
void aha_mm_bf16_free(aha_mm_bf16 *k);
// What runs, in words: e.g. "sgemm on bf16-rounded tiles (oneDNN ISA avx2:
// no bf16 kernels)" or "oneDNN brg:avx512_core_amx".
const char *aha_mm_bf16_describe(const aha_mm_bf16 *k);
aha_bf16_impl aha_mm_bf16_impl_of(const aha_mm_bf16 *k);
// Primitives created so far (one per (n, in, out) shape): caching is tested.
int aha_mm_bf16_primitives(const aha_mm_bf16 *k);

// y[n, rows] = bf16(x)[n, cols] @ w^T (+ bias[rows] in f32 when not NULL), w
// a bf16 weight (weight.h). Not reentrant: one k serves one thread of calls.
// -1 with the error set.
int aha_mm_bf16_run(aha_mm_bf16 *k, float *y, const float *x, const aha_weight *w, const float *bias,
                    int n);
