// A view of one stored tensor, as found in a safetensors or GGUF file.
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

#define AHA_MAX_DIMS 4

typedef struct {
    const char *name;               // NUL-terminated, owned by the container
    aha_dtype dtype;
    int ndim;                       // 1..AHA_MAX_DIMS
    int64_t shape[AHA_MAX_DIMS];    // row-major: shape[ndim-1] is contiguous (HF order)
    const void *data;               // [nbytes] inside the container's mapping
    size_t nbytes;                  // exactly aha_dtype_bytes(dtype, numel)
} aha_tensor;

const char *aha_dtype_name(aha_dtype t);
// Elements per block (1 for float types) and bytes per block.
int aha_dtype_block(aha_dtype t);
size_t aha_dtype_block_bytes(aha_dtype t);
// Bytes holding n elements laid out as rows of `row` elements; (size_t)-1 when
// row is not a multiple of the block size or the product overflows.
size_t aha_dtype_bytes(aha_dtype t, int64_t n, int64_t row);
// Number of elements; -1 on overflow or a non-positive dimension.
int64_t aha_tensor_numel(const aha_tensor *t);

// Convert any stored tensor to float32 (out holds numel floats).
void aha_dequant(const aha_tensor *t, float *out);
