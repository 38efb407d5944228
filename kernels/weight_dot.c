// Fused dequantize-dot: one stored row with a float32 vector, reading each
// block once and never writing the decoded values. AVX2+FMA+F16C versions for
// the types the shipped models use (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0,
// q4_K, q6_K), AVX-512 ones for q8_0, q4_0, q4_1; every other type, and
// every type without AVX2, decodes a block at a time into a small buffer and
// dots that (the portable path). aha_weight_dot_level picks the best the
// build has, or a lower one (tests run each). Block layouts: common/dtype.c.
#include <pthread.h>
#include <string.h>

#include "f16.h"
#include "weight.h"

// Portable: decode up to 256 values at a time, 8 partial sums.
static float dot_generic(aha_dtype t, const uint8_t *row, const float *x, int cols) {
    const int bs = aha_dtype_block(t), per = bs >= 256 ? 1 : 256 / bs;
    const size_t bb = aha_dtype_block_bytes(t);
    float buf[256], s[8] = {0};
    for (int c = 0; c < cols; c += per * bs) {
        int nb = (cols - c) / bs < per ? (cols - c) / bs : per, m = nb * bs;
        aha_dtype_decode(t, row + (size_t)(c / bs) * bb, buf, nb);
        int i = 0;
        for (; i + 8 <= m; i += 8)
            for (int k = 0; k < 8; k++) s[k] += buf[i + k] * x[c + i + k];
        for (; i < m; i++) s[0] += buf[i] * x[c + i];
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

static inline float hsum(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

// Block scales (f16) through a table of all 65536 halves: the broadcast then
// reads memory, where vcvtph2ps and a register broadcast cost two shuffle-port
// uops a scale, the port the 4-bit dots' permutes need (SmolLM2 Q4_1 decode
// on an AVX-512 Xeon: see docs/benchmarks.md). Exact: aha_f16_to_f32's values.
static float f16_table[1 << 16];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;
static void f16_table_init(void) {
    for (uint32_t h = 0; h < 1u << 16; h++) f16_table[h] = aha_f16_to_f32((uint16_t)h);
}
static inline float h2f(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return f16_table[h];
}

static inline __m128i ld16(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)p); }

// acc + 16 signed (i8) or unsigned (u8) bytes of b times x[0..15].
static inline __m256 fma16_i8(__m128i b, const float *x, __m256 acc) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_loadu_ps(x), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))),
                           _mm256_loadu_ps(x + 8), acc);
}
static inline __m256 fma16_u8(__m128i b, const float *x, __m256 acc) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_loadu_ps(x), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))),
                           _mm256_loadu_ps(x + 8), acc);
}
// Sum of x[0..n-1] for n a multiple of 8, as one vector.
static inline __m256 sum_x(const float *x, int n) {
    __m256 s = _mm256_loadu_ps(x);
    for (int i = 8; i < n; i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(x + i));
    return s;
}

static float dot_f32(const uint8_t *row, const float *x, int cols) {
    const float *w = (const float *)(const void *)row;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= cols; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    }
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; i < cols; i++) s += w[i] * x[i];
    return s;
}

static float dot_f16(const uint8_t *row, const float *x, int cols) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= cols; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(ld16(row + 2 * i)), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(ld16(row + 2 * i + 16)), _mm256_loadu_ps(x + i + 8), a1);
    }
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; i < cols; i++) s += h2f(row + 2 * i) * x[i];
    return s;
}

static inline __m256 bf16x8(const uint8_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(ld16(p)), 16));
}

static float dot_bf16(const uint8_t *row, const float *x, int cols) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= cols; i += 16) {
        a0 = _mm256_fmadd_ps(bf16x8(row + 2 * i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(bf16x8(row + 2 * i + 16), _mm256_loadu_ps(x + i + 8), a1);
    }
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; i < cols; i++) {
        uint32_t u = (uint32_t)(row[2 * i] | row[2 * i + 1] << 8) << 16;
        float f;
        memcpy(&f, &u, 4);
        s += f * x[i];
    }
    return s;
}

// Q8_0 (34 bytes): d, 32 x int8.
static float dot_q8_0(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < cols / 32; b++, row += 34, x += 32) {
        __m256 s = fma16_i8(ld16(row + 2), x, _mm256_setzero_ps());
        s = fma16_i8(ld16(row + 18), x + 16, s);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(row)), s, acc);
    }
    return hsum(acc);
}

static inline __m128i lo_nib(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(0xf)); }
static inline __m128i hi_nib(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0xf)); }

// Q4_0 (18 bytes): d, 16 bytes of nibbles (low: values 0-15, high: 16-31); d*(q-8).
static float dot_q4_0(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    const __m128i eight = _mm_set1_epi8(8);
    for (int b = 0; b < cols / 32; b++, row += 18, x += 32) {
        __m128i v = ld16(row + 2);
        __m256 s = fma16_i8(_mm_sub_epi8(lo_nib(v), eight), x, _mm256_setzero_ps());
        s = fma16_i8(_mm_sub_epi8(hi_nib(v), eight), x + 16, s);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(row)), s, acc);
    }
    return hsum(acc);
}

// Q4_1 (20 bytes): d, m, nibbles as Q4_0; d*q + m, so d * sum(q x) + m * sum(x).
static float dot_q4_1(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < cols / 32; b++, row += 20, x += 32) {
        __m128i v = ld16(row + 4);
        __m256 s = fma16_u8(lo_nib(v), x, _mm256_setzero_ps());
        s = fma16_u8(hi_nib(v), x + 16, s);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(row)), s, acc);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(row + 2)), sum_x(x, 32), acc);
    }
    return hsum(acc);
}

// 32 bytes: 0xff where bit i of the little-endian u32 at p is set (llama.cpp's
// bytes_from_bits_32).
static inline __m256i bits_to_bytes(const uint8_t *p) {
    uint32_t u;
    memcpy(&u, p, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                           0x0101010101010101, 0x0000000000000000);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u), shuf);
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

// Q5_0 (22 bytes): d, u32 fifth bits, nibbles as Q4_0; d*(q-16).
static float dot_q5_0(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    const __m128i sixteen = _mm_set1_epi8(16);
    for (int b = 0; b < cols / 32; b++, row += 22, x += 32) {
        __m256i h = _mm256_and_si256(bits_to_bytes(row + 2), _mm256_set1_epi8(16));
        __m128i v = ld16(row + 6);
        __m128i q0 = _mm_or_si128(lo_nib(v), _mm256_castsi256_si128(h));
        __m128i q1 = _mm_or_si128(hi_nib(v), _mm256_extracti128_si256(h, 1));
        __m256 s = fma16_i8(_mm_sub_epi8(q0, sixteen), x, _mm256_setzero_ps());
        s = fma16_i8(_mm_sub_epi8(q1, sixteen), x + 16, s);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(row)), s, acc);
    }
    return hsum(acc);
}

// Q4_K (144 bytes): d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes of
// nibbles; 64 values per 32 bytes (low nibbles sub-block 2k, high 2k+1);
// d*sc*q - dmin*m per 32-value sub-block.
static float dot_q4_k(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < cols / 256; b++, row += 144) {
        const float d = h2f(row), dmin = h2f(row + 2);
        const uint8_t *q = row + 16;
        for (int j = 0; j < 8; j += 2, q += 32, x += 64) {
            int sc0, m0, sc1, m1;
            aha_dtype_q4_k_scale_min(row + 4, j, &sc0, &m0);
            aha_dtype_q4_k_scale_min(row + 4, j + 1, &sc1, &m1);
            __m128i v0 = ld16(q), v1 = ld16(q + 16);
            __m256 s0 = fma16_u8(lo_nib(v1), x + 16, fma16_u8(lo_nib(v0), x, _mm256_setzero_ps()));
            __m256 s1 = fma16_u8(hi_nib(v1), x + 48, fma16_u8(hi_nib(v0), x + 32, _mm256_setzero_ps()));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc0), s0, acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc1), s1, acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)m0), sum_x(x, 32), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)m1), sum_x(x + 32, 32), acc);
        }
    }
    return hsum(acc);
}

// Q6_K (210 bytes): 128 bytes ql, 64 bytes qh, 16 int8 scales, d; per half
// of 128 values ql[l] / ql[l+32] hold values l, l+32 (low nibbles) and l+64,
// l+96 (high), qh[l] their top bits in pairs 0, 2, 4, 6; d*sc*(q-32), one
// scale per 16 values.
static float dot_q6_k(const uint8_t *row, const float *x, int cols) {
    __m256 acc = _mm256_setzero_ps();
    const __m128i m4 = _mm_set1_epi8(0xf), m2 = _mm_set1_epi8(0x30), k32 = _mm_set1_epi8(32);
    for (int b = 0; b < cols / 256; b++, row += 210) {
        const float d = h2f(row + 208);
        const uint8_t *ql = row, *qh = row + 128;
        const int8_t *sc = (const int8_t *)(row + 192);
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, x += 128) {
            for (int g = 0; g < 2; g++) { // l = 16g .. 16g+15, scales sc[g + 0/2/4/6]
                __m128i a = ld16(ql + 16 * g), c = ld16(ql + 32 + 16 * g), h = ld16(qh + 16 * g);
                __m128i q0 = _mm_or_si128(_mm_and_si128(a, m4), _mm_and_si128(_mm_slli_epi16(h, 4), m2));
                __m128i q1 = _mm_or_si128(_mm_and_si128(c, m4), _mm_and_si128(_mm_slli_epi16(h, 2), m2));
                __m128i q2 = _mm_or_si128(hi_nib(a), _mm_and_si128(h, m2));
                __m128i q3 = _mm_or_si128(hi_nib(c), _mm_and_si128(_mm_srli_epi16(h, 2), m2));
                const __m256 z = _mm256_setzero_ps();
                const float *xg = x + 16 * g;
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g]), fma16_i8(_mm_sub_epi8(q0, k32), xg, z), acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g + 2]), fma16_i8(_mm_sub_epi8(q1, k32), xg + 32, z), acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g + 4]), fma16_i8(_mm_sub_epi8(q2, k32), xg + 64, z), acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g + 6]), fma16_i8(_mm_sub_epi8(q3, k32), xg + 96, z), acc);
            }
        }
    }
    return hsum(acc);
}

typedef float dot_fn(const uint8_t *row, const float *x, int cols);
static dot_fn *const fast2[AHA_DTYPE_COUNT] = {
    [AHA_F32] = dot_f32,   [AHA_F16] = dot_f16,   [AHA_BF16] = dot_bf16,
    [AHA_Q8_0] = dot_q8_0, [AHA_Q4_0] = dot_q4_0, [AHA_Q4_1] = dot_q4_1,
    [AHA_Q5_0] = dot_q5_0, [AHA_Q4_K] = dot_q4_k, [AHA_Q6_K] = dot_q6_k,
};

#if defined(__AVX512F__)
// AVX-512 for the block types of the demo model's decode (SmolLM2 Q4_1: Q4_1
// matrices, a Q8_0 lm_head) and Q4_0: 16 values per instruction, about half
// the instructions of the AVX2 dots per block (decode 5-20% faster). f32 rows
// are bound by memory: 512-bit dots measured slower there than AVX2's.

// 16 signed bytes as 16 floats.
static inline __m512 i8x16(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }

static float dot_q8_0_512(const uint8_t *row, const float *x, int cols) {
    __m512 acc = _mm512_setzero_ps();
    for (int b = 0; b < cols / 32; b++, row += 34, x += 32) {
        __m512 s = _mm512_mul_ps(i8x16(ld16(row + 2)), _mm512_loadu_ps(x));
        s = _mm512_fmadd_ps(i8x16(ld16(row + 18)), _mm512_loadu_ps(x + 16), s);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(h2f(row)), s, acc);
    }
    return _mm512_reduce_add_ps(acc);
}

// 4-bit blocks through a 16-entry table: the block's 16 possible values
// (d*q + m, one FMA) and one permute per 16 weights, in place of a widening
// and a conversion each, and the scale folded in (Q4_1 decode +25%). vpermps
// reads the low 4 bits of each dword index: the low nibble as widened, the
// high one after a shift. Two accumulators: acc[0] low, acc[1] high nibbles.
static inline void nib_fma_512(__m128i nibs, __m512 lut, const float *x, __m512 acc[2]) {
    const __m512i q = _mm512_cvtepu8_epi32(nibs);
    acc[0] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, lut), _mm512_loadu_ps(x), acc[0]);
    acc[1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), lut), _mm512_loadu_ps(x + 16), acc[1]);
}
#define IOTA16 _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)

static float dot_q4_0_512(const uint8_t *row, const float *x, int cols) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int b = 0; b < cols / 32; b++, row += 18, x += 32) {
        const float d = h2f(row); // d*q - 8d: -8d is exact, so d*(q-8) rounded once
        nib_fma_512(ld16(row + 2), _mm512_fmadd_ps(_mm512_set1_ps(d), IOTA16, _mm512_set1_ps(-8 * d)), x, acc);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

static float dot_q4_1_512(const uint8_t *row, const float *x, int cols) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int b = 0; b < cols / 32; b++, row += 20, x += 32)
        nib_fma_512(ld16(row + 4), _mm512_fmadd_ps(_mm512_set1_ps(h2f(row)), IOTA16, _mm512_set1_ps(h2f(row + 2))), x, acc);
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

static dot_fn *const fast512[AHA_DTYPE_COUNT] = {
    [AHA_Q8_0] = dot_q8_0_512, [AHA_Q4_0] = dot_q4_0_512, [AHA_Q4_1] = dot_q4_1_512,
};
#define BEST AHA_DOT_AVX512
#else
#define BEST AHA_DOT_AVX2
#endif
#else
#define BEST AHA_DOT_PORTABLE
#endif

static int level = BEST;

int aha_weight_dot_level(int want) { return level = want < BEST ? want : BEST; }

float aha_weight_dot(const aha_weight *w, int r, const float *x) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    pthread_once(&f16_once, f16_table_init);
#endif
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const unsigned t = (unsigned)w->type;
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (level >= AHA_DOT_AVX512 && t < AHA_DTYPE_COUNT && fast512[t]) return fast512[t](row, x, w->cols);
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (level >= AHA_DOT_AVX2 && t < AHA_DTYPE_COUNT && fast2[t]) return fast2[t](row, x, w->cols);
#endif
    return dot_generic(w->type, row, x, w->cols);
}
