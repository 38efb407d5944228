// A view of one stored tensor, as found in a safetensors or GGUF file.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#define AHA_MAX_DIMS 4

typedef struct {
    const char *name;               // NUL-terminated, owned by the container
    aha_dtype dtype;
    int ndim;                       // 1..AHA_MAX_DIMS
    int64_t shape[AHA_MAX_DIMS];    // row-major: shape[ndim-1] is contiguous (HF order)
    const void *data;               // [nbytes] inside the container's mapping
    size_t nbytes;                  // exactly aha_dtype_bytes(dtype, numel)
} aha_tensor;

// Number of elements; -1 on overflow or a non-positive dimension.
int64_t aha_tensor_numel(const aha_tensor *t);

// Convert any stored tensor to float32 (out holds numel floats).
void aha_dequant(const aha_tensor *t, float *out);
