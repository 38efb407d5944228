#include "f16.h"

#include <string.h>

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float aha_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return from_bits(sign | 0x7f800000 | man << 13); // inf, NaN keeps payload
    if (exp != 0) return from_bits(sign | (exp + 127 - 15) << 23 | man << 13);
    if (man == 0) return from_bits(sign);                             // +-0
    // Subnormal man * 2^-24: shift the leading 1 up to the implicit bit.
    uint32_t e = 127 - 15 + 1;
    while (!(man & 0x400)) {
        man <<= 1;
        e--;
    }
    return from_bits(sign | e << 23 | (man & 0x3ff) << 13);
}

float aha_bf16_to_f32(uint16_t h) { return from_bits((uint32_t)h << 16); }

// Rounded to nearest even, as numpy's astype(float16).
uint16_t aha_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff) return sign | 0x7c00 | (m ? 0x200 : 0);
    int he = (int)e - 127 + 15;
    if (he >= 31) return sign | 0x7c00;
    if (he <= 0) { // subnormal half (or zero)
        if (he < -10) return sign;
        m |= 0x800000;
        int shift = 14 - he;
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return sign | (uint16_t)hm;
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; // a carry may round up to inf: right
    return sign | (uint16_t)h;
}

// Each decoder turns n consecutive blocks at x into n * block floats at y.
