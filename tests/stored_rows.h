// Random stored weight rows of any common/dtype.h type for the tests (CPU and
// CUDA): random bytes, with each block's f16 scales (and f16 / bf16 / f32
// values) set to finite values of a known range, so that every decoded value
// is finite and the products stay O(1). C and C++ (the .cu tests include it).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "frand.h"

static inline uint16_t stored_rnd16(uint64_t *seed) { return (uint16_t)((frand_next(seed) + 1.0f) * 32767.0f); }

// Byte offset of f16 scale k (0, 1, ..) of a block of type t; -1: no more.
static inline int stored_scale_at(aha_dtype t, int k) {
    switch (t) {
    case AHA_F16: case AHA_Q8_0: case AHA_Q4_0: case AHA_Q5_0: return k == 0 ? 0 : -1;
    case AHA_Q4_1: case AHA_Q5_1: case AHA_Q4_K: case AHA_Q5_K: return k < 2 ? 2 * k : -1;
    case AHA_Q2_K: return k < 2 ? 80 + 2 * k : -1;
    case AHA_Q3_K: return k == 0 ? 108 : -1;
    case AHA_Q6_K: return k == 0 ? 208 : -1;
    default: return -1;
    }
}

// rows x cols values of type t at p (rows * aha_dtype_bytes(t, cols, cols) bytes).
static inline void stored_rows_fill(aha_dtype t, uint8_t *p, int rows, int cols, uint64_t *seed) {
    const size_t bb = aha_dtype_block_bytes(t), nb = (size_t)rows * cols / aha_dtype_block(t);
    for (size_t i = 0; i < nb * bb; i++) p[i] = (uint8_t)stored_rnd16(seed);
    if (t == AHA_F32) {
        for (size_t i = 0; i < nb; i++) ((float *)(void *)p)[i] = frand_next(seed);
        return;
    }
    for (size_t b = 0; b < nb; b++) {
        uint8_t *q = p + b * bb;
        if (t == AHA_BF16) { // sign, exponent of 0.5..1, random mantissa
            uint16_t v = (uint16_t)((stored_rnd16(seed) & 0x807f) | 0x3f00);
            q[0] = (uint8_t)(v & 0xff), q[1] = (uint8_t)(v >> 8);
            continue;
        }
        for (int k = 0; stored_scale_at(t, k) >= 0; k++) { // 2^-7..2^-6 (f16: 0.5..1), either sign
            uint16_t v = (uint16_t)((stored_rnd16(seed) & 0x83ff) | (t == AHA_F16 ? 0x3800 : 0x2000));
            q[stored_scale_at(t, k)] = (uint8_t)(v & 0xff), q[stored_scale_at(t, k) + 1] = (uint8_t)(v >> 8);
        }
    }
}
