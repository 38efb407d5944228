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
// The scale unpacking below is shared with the device decoders
// (kernels/cuda/weight.cu): compiled for the host and, under nvcc, the device.
#ifdef __CUDACC__
#define AHA_HOST_DEVICE __host__ __device__
#else
#define AHA_HOST_DEVICE
#endif

// Q2_K and Q3_K store 2-bit values in 64 bytes: each half of 128 values uses
// 32 bytes, and bit pair s of byte l is value 32*s + l of the half. Both have
// one scale per 16 values, in value order; group g (0-15) reads bytes
// 32*(g/8) + 16*(g%2) .. +16 at shift 2*((g%8)/2).
AHA_HOST_DEVICE static inline const uint8_t *aha_dtype_k2_group(const uint8_t *qs, int g, int *shift) {
    *shift = 2 * ((g % 8) / 2);
    return qs + 32 * (g / 8) + 16 * (g % 2);
}

// Q3_K's 16 six-bit scales in 12 bytes: the low 4 bits are the nibbles of
// bytes 0-7 (low nibbles first), the top 2 bits bit pairs of bytes 8-11.
AHA_HOST_DEVICE static inline int aha_dtype_q3_k_scale(const uint8_t *s, int g) {
    return ((s[g % 8] >> 4 * (g / 8)) & 0xf) | ((s[8 + g % 4] >> 2 * (g / 4)) & 3) << 4;
}

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0-7) from the 12
// packed bytes at s: bytes 0-3 hold scales 0-3 (low 6 bits), bytes 4-7 mins
// 0-3; for j >= 4 the low 4 bits come from byte j+4 (scale: low nibble, min:
// high nibble) and the top 2 bits from the spare high bits of bytes j-4
// (scale) and j (min).
AHA_HOST_DEVICE static inline void aha_dtype_q4_k_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

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
