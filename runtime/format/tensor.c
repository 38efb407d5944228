// Stored tensors: element counts and whole-tensor dequantization (the block
// decoders are common/dtype.c's).
#include "tensor.h"

int64_t aha_tensor_numel(const aha_tensor *t) {
    if (t->ndim < 1 || t->ndim > AHA_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] <= 0 || n > INT64_MAX / t->shape[i]) return -1;
        n *= t->shape[i];
    }
    return n;
}

void aha_dequant(const aha_tensor *t, float *out) {
    int64_t numel = aha_tensor_numel(t);
    int64_t bs = aha_dtype_block(t->dtype);
    if (numel <= 0 || bs == 0) return;
    size_t bb = aha_dtype_block_bytes(t->dtype);
    int64_t nb = numel / bs;
    const uint8_t *x = t->data;
    // Chunks of 64K values: big tensors (a 49152x576 embedding) spread over
    // the threads, small ones stay on this one.
    const int64_t chunk = 65536 / bs;
#pragma omp parallel for schedule(static) if (nb > chunk)
    for (int64_t c = 0; c < nb; c += chunk) {
        int64_t n = nb - c < chunk ? nb - c : chunk;
        aha_dtype_decode(t->dtype, x + (size_t)c * bb, out + c * bs, n);
    }
}
