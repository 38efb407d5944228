// Dtype traits and block decoders to float32. Block layouts follow ggml
// (ggml-common.h / ggml-quants.c); the tests compare against gguf-py.
#include "dtype.h"

#include <stdint.h>
#include <string.h>

#include "f16.h"

// Dequantized values must match ggml bit for bit, so no fused multiply-adds.
// GCC never fuses under -std=c11; clang fuses inside an expression unless told.
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

// Stored floats are little-endian and the mapped F32 data is used in place.
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian host required");

#define QK 32    // values per block of Q8_0/Q5_0/Q5_1/Q4_0/Q4_1
#define QK_K 256 // values per super-block of the K quants (Q2_K..Q6_K)

static const struct {
    const char *name;
    int block;       // values per block
    size_t bytes;    // bytes per block
} dtypes[AHA_DTYPE_COUNT] = {
    [AHA_F32] = {"F32", 1, 4},
    [AHA_F16] = {"F16", 1, 2},
    [AHA_BF16] = {"BF16", 1, 2},
    [AHA_Q8_0] = {"Q8_0", QK, 2 + QK},
    [AHA_Q4_0] = {"Q4_0", QK, 2 + QK / 2},
    [AHA_Q4_1] = {"Q4_1", QK, 4 + QK / 2},
    [AHA_Q5_0] = {"Q5_0", QK, 2 + 4 + QK / 2},
    [AHA_Q5_1] = {"Q5_1", QK, 4 + 4 + QK / 2},
    [AHA_Q2_K] = {"Q2_K", QK_K, QK_K / 16 + QK_K / 4 + 4},
    [AHA_Q3_K] = {"Q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2},
    [AHA_Q4_K] = {"Q4_K", QK_K, 4 + 12 + QK_K / 2},
    [AHA_Q5_K] = {"Q5_K", QK_K, 4 + 12 + QK_K / 8 + QK_K / 2},
    [AHA_Q6_K] = {"Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2},
};

static int dtype_ok(aha_dtype t) { return (unsigned)t < AHA_DTYPE_COUNT; }

const char *aha_dtype_name(aha_dtype t) { return dtype_ok(t) ? dtypes[t].name : "?"; }
int aha_dtype_block(aha_dtype t) { return dtype_ok(t) ? dtypes[t].block : 0; }
size_t aha_dtype_block_bytes(aha_dtype t) { return dtype_ok(t) ? dtypes[t].bytes : 0; }

size_t aha_dtype_bytes(aha_dtype t, int64_t n, int64_t row) {
    int64_t bs = aha_dtype_block(t);
    if (bs == 0 || n < 0 || row <= 0 || row % bs != 0 || n % row != 0) return (size_t)-1;
    uint64_t blocks = (uint64_t)(n / bs);
    size_t bb = dtypes[t].bytes;
    if (blocks >= SIZE_MAX / bb) return (size_t)-1; // keeps (size_t)-1 a pure sentinel
    return (size_t)blocks * bb;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | (uint32_t)rd16(p + 2) << 16; }

// Each decoder turns n consecutive blocks at x into n * block floats at y.
typedef void deq_fn(const uint8_t *x, float *y, int64_t n);

static void deq_f32(const uint8_t *x, float *y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

static void deq_f16(const uint8_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = aha_f16_to_f32(rd16(x + 2 * i));
}

static void deq_bf16(const uint8_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = aha_bf16_to_f32(rd16(x + 2 * i));
}

// Q8_0: f16 d, 32 x int8 q; value d*q.
static void deq_q8_0(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += 2 + QK, y += QK) {
        float d = aha_f16_to_f32(rd16(x));
        for (int i = 0; i < QK; i++) y[i] = (float)(int8_t)x[2 + i] * d;
    }
}

// Q4_0: f16 d, 16 bytes; low nibbles are values 0-15, high nibbles 16-31.
static void deq_q4_0(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += 2 + QK / 2, y += QK) {
        float d = aha_f16_to_f32(rd16(x));
        const uint8_t *q = x + 2;
        for (int i = 0; i < QK / 2; i++) {
            y[i] = d * (float)((q[i] & 0xf) - 8);
            y[i + QK / 2] = d * (float)((q[i] >> 4) - 8);
        }
    }
}

// Q4_1: f16 d, f16 m, 16 bytes of nibbles as in Q4_0; value d*q + m.
static void deq_q4_1(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += 4 + QK / 2, y += QK) {
        float d = aha_f16_to_f32(rd16(x)), m = aha_f16_to_f32(rd16(x + 2));
        const uint8_t *q = x + 4;
        for (int i = 0; i < QK / 2; i++) {
            y[i] = d * (float)(q[i] & 0xf) + m;
            y[i + QK / 2] = d * (float)(q[i] >> 4) + m;
        }
    }
}

// Q5_0/Q5_1 values 0-31: nibbles as in Q4_0, and bit i of the little-endian
// u32 at qh is the fifth bit of value i.
static void q5_unpack(const uint8_t *qh, const uint8_t *qs, int q[QK]) {
    uint32_t h = rd32(qh);
    for (int i = 0; i < QK / 2; i++) {
        q[i] = (qs[i] & 0xf) | (int)((h >> i) & 1) << 4;
        q[i + QK / 2] = (qs[i] >> 4) | (int)((h >> (i + QK / 2)) & 1) << 4;
    }
}

// Q5_0: f16 d, u32 qh, 16 bytes of nibbles; value d*(q-16).
static void deq_q5_0(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += dtypes[AHA_Q5_0].bytes, y += QK) {
        float d = aha_f16_to_f32(rd16(x));
        int q[QK];
        q5_unpack(x + 2, x + 6, q);
        for (int i = 0; i < QK; i++) y[i] = d * (float)(q[i] - 16);
    }
}

// Q5_1: f16 d, f16 m, u32 qh, 16 bytes of nibbles; value d*q + m.
static void deq_q5_1(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += dtypes[AHA_Q5_1].bytes, y += QK) {
        float d = aha_f16_to_f32(rd16(x)), m = aha_f16_to_f32(rd16(x + 2));
        int q[QK];
        q5_unpack(x + 4, x + 8, q);
        for (int i = 0; i < QK; i++) y[i] = d * (float)q[i] + m;
    }
}

// Q2_K super-block: 16 scale bytes (low nibble scale, high nibble min), 64
// bytes of 2-bit values, f16 d, f16 dmin; value d*sc*q - dmin*m.
static void deq_q2_k(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += dtypes[AHA_Q2_K].bytes) {
        const uint8_t *sc = x, *qs = x + QK_K / 16;
        float d = aha_f16_to_f32(rd16(x + QK_K / 16 + QK_K / 4));
        float dmin = aha_f16_to_f32(rd16(x + QK_K / 16 + QK_K / 4 + 2));
        for (int g = 0; g < QK_K / 16; g++, y += 16) {
            int shift;
            const uint8_t *q = aha_dtype_k2_group(qs, g, &shift);
            float dl = d * (float)(sc[g] & 0xf), ml = dmin * (float)(sc[g] >> 4);
            for (int l = 0; l < 16; l++) y[l] = dl * (float)((q[l] >> shift) & 3) - ml;
        }
    }
}

// Q3_K super-block: 32 bytes hmask, 64 bytes of 2-bit values, 12 bytes of
// scales, f16 d. Bit j of hmask[l] is the third bit of value 32*j + l, and a
// clear bit subtracts 4; value d*(sc-32)*q.
static void deq_q3_k(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += dtypes[AHA_Q3_K].bytes) {
        const uint8_t *hm = x, *qs = x + QK_K / 8, *sc = x + QK_K / 8 + QK_K / 4;
        float d = aha_f16_to_f32(rd16(sc + 12));
        for (int g = 0; g < QK_K / 16; g++, y += 16) {
            int shift;
            const uint8_t *q = aha_dtype_k2_group(qs, g, &shift);
            const uint8_t *h = hm + 16 * (g % 2);
            int bit = g / 2; // the 32-value run this group is in
            float dl = d * (float)(aha_dtype_q3_k_scale(sc, g) - 32);
            for (int l = 0; l < 16; l++)
                y[l] = dl * (float)(((q[l] >> shift) & 3) - ((h[l] >> bit) & 1 ? 0 : 4));
        }
    }
}

// Q4_K / Q5_K super-block: f16 d, f16 dmin, 12 bytes of scales/mins, (Q5_K
// only) 32 bytes qh, 128 bytes of nibbles. Each 64 values use 32 bytes: low
// nibbles are sub-block 2k, high nibbles sub-block 2k+1; bit j of qh[l] is
// the fifth bit of value 32*j + l. Value d*sc*q - dmin*m per 32-value sub-block.
static void deq_k_scale_min(const uint8_t *x, float *y, int64_t n, aha_dtype t) {
    const int five = t == AHA_Q5_K;
    for (int64_t b = 0; b < n; b++, x += dtypes[t].bytes) {
        float d = aha_f16_to_f32(rd16(x)), dmin = aha_f16_to_f32(rd16(x + 2));
        const uint8_t *scales = x + 4, *qh = x + 16, *q = x + 16 + (five ? QK_K / 8 : 0);
        for (int j = 0; j < QK_K / 32; j += 2, q += 32, y += 64) {
            int sc0, m0, sc1, m1;
            aha_dtype_q4_k_scale_min(scales, j, &sc0, &m0);
            aha_dtype_q4_k_scale_min(scales, j + 1, &sc1, &m1);
            float d0 = d * (float)sc0, o0 = dmin * (float)m0;
            float d1 = d * (float)sc1, o1 = dmin * (float)m1;
            for (int l = 0; l < 32; l++) {
                int h0 = five ? ((qh[l] >> j) & 1) << 4 : 0;
                int h1 = five ? ((qh[l] >> (j + 1)) & 1) << 4 : 0;
                y[l] = d0 * (float)((q[l] & 0xf) | h0) - o0;
                y[l + 32] = d1 * (float)((q[l] >> 4) | h1) - o1;
            }
        }
    }
}

static void deq_q4_k(const uint8_t *x, float *y, int64_t n) { deq_k_scale_min(x, y, n, AHA_Q4_K); }
static void deq_q5_k(const uint8_t *x, float *y, int64_t n) { deq_k_scale_min(x, y, n, AHA_Q5_K); }

// Q6_K super-block: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
// 16 int8 scales (one per 16 values), f16 d; value d*scale*(q - 32). Each half
// of 128 values uses 64 ql bytes and 32 qh bytes: ql[l] and ql[l+32] give the
// low nibbles of values l and l+32 and the high nibbles of l+64 and l+96;
// qh[l] holds the top bits of l, l+32, l+64, l+96 in bit pairs 0, 2, 4, 6.
static void deq_q6_k(const uint8_t *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n; b++, x += dtypes[AHA_Q6_K].bytes) {
        const uint8_t *ql = x, *qh = x + QK_K / 2;
        const int8_t *sc = (const int8_t *)(x + QK_K / 2 + QK_K / 4);
        float d = aha_f16_to_f32(rd16(x + QK_K / 2 + QK_K / 4 + QK_K / 16));
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                int s = l / 16;
                int q0 = ((ql[l] & 0xf) | (qh[l] & 3) << 4) - 32;
                int q1 = ((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * (float)sc[s] * (float)q0;
                y[l + 32] = d * (float)sc[s + 2] * (float)q1;
                y[l + 64] = d * (float)sc[s + 4] * (float)q2;
                y[l + 96] = d * (float)sc[s + 6] * (float)q3;
            }
        }
    }
}

static deq_fn *const decoders[AHA_DTYPE_COUNT] = {
    [AHA_F32] = deq_f32,   [AHA_F16] = deq_f16,   [AHA_BF16] = deq_bf16,
    [AHA_Q8_0] = deq_q8_0, [AHA_Q4_0] = deq_q4_0, [AHA_Q4_1] = deq_q4_1,
    [AHA_Q5_0] = deq_q5_0, [AHA_Q5_1] = deq_q5_1, [AHA_Q2_K] = deq_q2_k,
    [AHA_Q3_K] = deq_q3_k, [AHA_Q4_K] = deq_q4_k, [AHA_Q5_K] = deq_q5_k,
    [AHA_Q6_K] = deq_q6_k,
};

void aha_dtype_decode(aha_dtype t, const void *x, float *y, int64_t nb) {
    if (dtype_ok(t) && nb > 0) decoders[t](x, y, nb);
}

aha_weight aha_weight_of(const void *data, aha_dtype t, int rows, int cols) {
    size_t rb = aha_dtype_bytes(t, cols, cols);
    return (aha_weight){data, t, rows, cols, rb == (size_t)-1 ? 0 : rb};
}

size_t aha_weight_bytes(const aha_weight *w) { return (size_t)w->rows * w->row_bytes; }

aha_weight aha_weight_f32(const float *w, int rows, int cols) {
    return aha_weight_of(w, AHA_F32, rows, cols);
}
