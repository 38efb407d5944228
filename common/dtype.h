// Stored element types: one traits table (name, block, bytes) and one block
// decoder per type, shared by the file formats (runtime/format), which
// validate sizes and offsets, and the kernels, which read weights in place.
// Block layouts follow ggml (ggml-common.h / ggml-quants.c).
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum {
    AHA_F32,
    AHA_F16,
    AHA_BF16,
    AHA_Q8_0, // 32-value blocks: f16 d, 32 x int8
    AHA_Q4_0, // 32-value blocks: f16 d, 16 bytes of nibbles, d*(q-8)
    AHA_Q4_1, // 32-value blocks: f16 d, f16 m, 16 bytes of nibbles, d*q+m
    AHA_Q5_0, // 32-value blocks: f16 d, u32 fifth bits, 16 bytes of nibbles, d*(q-16)
    AHA_Q5_1, // 32-value blocks: f16 d, f16 m, u32 fifth bits, 16 bytes of nibbles, d*q+m
    AHA_Q2_K, // 256-value super-blocks (84 bytes)
    AHA_Q3_K, // 256-value super-blocks (110 bytes)
    AHA_Q4_K, // 256-value super-blocks (144 bytes)
    AHA_Q5_K, // 256-value super-blocks (176 bytes)
    AHA_Q6_K, // 256-value super-blocks (210 bytes)
    AHA_DTYPE_COUNT
} aha_dtype;

const char *aha_dtype_name(aha_dtype t);
// Elements per block (1 for float types) and bytes per block.
int aha_dtype_block(aha_dtype t);
size_t aha_dtype_block_bytes(aha_dtype t);
// Bytes holding n elements laid out as rows of `row` elements; (size_t)-1 when
// row is not a multiple of the block size or the product overflows.
size_t aha_dtype_bytes(aha_dtype t, int64_t n, int64_t row);
// Decode nb consecutive blocks at x into nb * aha_dtype_block(t) floats at y
// (bit for bit as ggml dequantizes).
void aha_dtype_decode(aha_dtype t, const void *x, float *y, int64_t nb);
// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0-7) from the 12
// packed bytes at s.
void aha_dtype_q4_k_scale_min(const uint8_t *s, int j, int *sc, int *m);

// A weight matrix as the file stores it, read in place: the handle the model
// holds and kernels/weight.h multiplies by. Here, below both, because the
// model layer may not include kernels/.
typedef struct {
    const void *data; // [rows * row_bytes] the stored rows, row-major, in place
    aha_dtype type;   // element type of every row (common/dtype.h's table)
    int rows, cols;   // [rows = out features, cols = in features]; cols a multiple of the block
    size_t row_bytes; // bytes of one stored row: aha_dtype_bytes(type, cols, cols)
} aha_weight;

// A handle over rows x cols values of type t at data. row_bytes 0 when cols
// is not a multiple of t's block.
aha_weight aha_weight_of(const void *data, aha_dtype t, int rows, int cols);
// Bytes the stored matrix spans.
size_t aha_weight_bytes(const aha_weight *w);
// An f32 matrix (hand-built models in tests, fused router rows).
aha_weight aha_weight_f32(const float *w, int rows, int cols);
