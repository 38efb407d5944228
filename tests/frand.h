// The C tests' and benchmarks' pseudo-random numbers: xorshift64, uniform
// floats in [-1, 1) (24 random bits, exact). Each file keeps its own state
// and seed, so its data stays what it was.
#pragma once
#include <stdint.h>

static inline float frand_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)((*s >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
