// Weight matrices on the device in their stored type (CUDA twin of
// kernels/weight.c): the file's bytes are what device memory holds, and every
// product decodes them as it goes.
//
// Contract. dq_value decodes one value of a block of any common/dtype.h type
// bit for bit as aha_dtype_decode (ggml's arithmetic: each product and sum
// rounded on its own, __fmul_rn / __fadd_rn, never contracted into an FMA;
// the scale unpacking is dtype.h's own). On it:
//   - aha_weight_rows_cuda: rows r0.. of a matrix into f32, f16 or bf16 (the
//     half types rounded to nearest even from the decoded f32, f16
//     saturating, as aha_f32_to_half_cuda);
//   - aha_embed_cuda: the embedding lookup, a row per token (times the
//     model's embedding scale), as aha_weight_rows;
//   - aha_matmul_w_cuda: y = x w^T as aha_matmul_w. A matrix stored in the
//     products' operand type (f32 for f32, f16 for f16, bf16 for bf16) feeds
//     cuBLAS as it is; any other is decoded a tile of rows at a time into the
//     operand type and each tile is one cuBLAS product into its columns of y.
//     So a matrix is never decoded whole: the device holds the file's bytes
//     plus one tile (aha_mm_cuda.tile), whatever the model's size.
// A thread per value (grid-stride, at most DQ_BLOCKS blocks): a block's
// scales are read by the threads of its values from the cache; the work is
// the memory traffic of the tile it writes.
#include "aha_cuda.h"
#include "common.cuh"

#define DQ_THREADS 256
// 256k threads fill a GPU (more only adds launch work). The CPU emulator
// pays per thread, not per value: there a few blocks loop over the values
// (the same grid-stride code), or SmolLM2's LM head alone takes seconds.
#ifdef AHA_CUDA_EMU
#define DQ_BLOCKS 4
#else
#define DQ_BLOCKS 1024
#endif

__device__ __forceinline__ unsigned dq_u16(const uint8_t *p) { return p[0] | (unsigned)p[1] << 8; }
__device__ __forceinline__ float dq_f16(const uint8_t *p) { return __half2float(__ushort_as_half((unsigned short)dq_u16(p))); }
__device__ __forceinline__ float dq_fma_free(float d, float q, float m) { return __fadd_rn(__fmul_rn(d, q), m); }

// Nibble j (0-31) of a 32-value block's 16 bytes: low nibbles are values 0-15.
__device__ __forceinline__ int dq_nib(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4; }

// Value i of the block at x (common/dtype.c's decoder of type t, one value).
__device__ float dq_value(aha_dtype t, const uint8_t *x, int i) {
    switch (t) {
    case AHA_F32: return __uint_as_float(dq_u16(x) | dq_u16(x + 2) << 16);
    case AHA_F16: return dq_f16(x);
    case AHA_BF16: return __uint_as_float(dq_u16(x) << 16);
    case AHA_Q8_0: return __fmul_rn((float)(int8_t)x[2 + i], dq_f16(x));
    case AHA_Q4_0: return __fmul_rn(dq_f16(x), (float)(dq_nib(x + 2, i) - 8));
    case AHA_Q4_1: return dq_fma_free(dq_f16(x), (float)dq_nib(x + 4, i), dq_f16(x + 2));
    case AHA_Q5_0:
    case AHA_Q5_1: { // fifth bit i of the little-endian u32 qh
        const int one = t == AHA_Q5_1, q = dq_nib(x + 6 + 2 * one, i) | (x[2 + 2 * one + i / 8] >> (i % 8) & 1) << 4;
        return one ? dq_fma_free(dq_f16(x), (float)q, dq_f16(x + 2)) : __fmul_rn(dq_f16(x), (float)(q - 16));
    }
    case AHA_Q2_K:
    case AHA_Q3_K: { // 16 groups of 16 values; 2-bit values as aha_dtype_k2_group lays them out
        const int g = i / 16, l = i % 16, two = t == AHA_Q2_K;
        int shift;
        const uint8_t *q = aha_dtype_k2_group(x + (two ? 16 : 32), g, &shift);
        const float v = (float)(q[l] >> shift & 3);
        if (two) { // scale nibble and min nibble per group; f16 d, dmin at 80, 82
            const float dl = __fmul_rn(dq_f16(x + 80), (float)(x[g] & 0xf)), ml = __fmul_rn(dq_f16(x + 82), (float)(x[g] >> 4));
            return __fsub_rn(__fmul_rn(dl, v), ml);
        } // hmask bit g/2 of byte l (+16 for odd groups); scales at 96, f16 d at 108
        const float dl = __fmul_rn(dq_f16(x + 108), (float)(aha_dtype_q3_k_scale(x + 96, g) - 32));
        return __fmul_rn(dl, (float)((q[l] >> shift & 3) - (x[16 * (g % 2) + l] >> (g / 2) & 1 ? 0 : 4)));
    }
    case AHA_Q4_K:
    case AHA_Q5_K: { // 64 values per 32 bytes: low nibbles sub-block 2k, high 2k + 1
        const int five = t == AHA_Q5_K, k = i / 64, l = i % 32, hi = i % 64 / 32, j = 2 * k + hi;
        int sc, m;
        aha_dtype_q4_k_scale_min(x + 4, j, &sc, &m);
        const uint8_t b = x[16 + 32 * five + 32 * k + l];
        const int q = (hi ? b >> 4 : b & 0xf) | (five ? (x[16 + l] >> j & 1) << 4 : 0);
        return __fsub_rn(__fmul_rn(__fmul_rn(dq_f16(x), (float)sc), (float)q), __fmul_rn(dq_f16(x + 2), (float)m));
    }
    case AHA_Q6_K: { // halves of 128: quarter u of a half reads ql[l + 32 (u & 1)], nibble u / 2, qh bits 2u
        const int h = i / 128, u = i % 128 / 32, l = i % 32;
        const uint8_t lo = x[64 * h + l + 32 * (u & 1)], hb = x[128 + 32 * h + l] >> 2 * u & 3;
        const int q = ((u >= 2 ? lo >> 4 : lo & 0xf) | hb << 4) - 32;
        const float sc = (float)(int8_t)x[192 + 8 * h + l / 16 + 2 * u];
        return __fmul_rn(__fmul_rn(dq_f16(x + 208), sc), (float)q);
    }
    default: return __uint_as_float(0x7fc00000u); // not a type: NaN (the launchers refuse it first)
    }
}

// out[e] for e < rows * cols: value (e % cols) of row idx[e / cols] (or
// r0 + e / cols), times scale (0: none), converted by cvt.
template <typename T, typename F>
__global__ void __launch_bounds__(DQ_THREADS)
dequant_kernel(T *out, const uint8_t *w, aha_dtype t, int cols, size_t row_bytes, int bs, int bb,
               const int32_t *idx, int r0, long total, float scale, F cvt) {
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
        const long i = e / cols;
        const int c = (int)(e % cols);
        const long r = idx ? idx[i] : r0 + i;
        float v = dq_value(t, w + r * row_bytes + (size_t)(c / bs) * bb, c % bs);
        if (scale != 0.0f) v *= scale;
        out[e] = cvt(v);
    }
}

struct as_f32 {
    __device__ float operator()(float x) const { return x; }
};

static int weight_ok(const aha_weight *w, const char *who) {
    if ((unsigned)w->type >= AHA_DTYPE_COUNT || w->rows < 0 || w->cols <= 0 || !w->row_bytes ||
        w->row_bytes != aha_dtype_bytes(w->type, w->cols, w->cols)) {
        aha_err("%s: a %d x %d matrix of type %d with %zu-byte rows is not a stored matrix", who, w->rows,
                w->cols, (int)w->type, w->row_bytes);
        return 0;
    }
    return 1;
}

// rows values: idx[0..n) (dev) or r0..r0+n-1, into out of type op.
static int dequant(void *out, aha_dtype op, const aha_weight *w, const int32_t *idx, int r0, int n, float scale,
                   cudaStream_t st) {
    const long total = (long)n * w->cols;
    if (total <= 0) return 0;
    const long want = (total + DQ_THREADS - 1) / DQ_THREADS;
    const unsigned blocks = (unsigned)(want < DQ_BLOCKS ? want : DQ_BLOCKS);
    const uint8_t *data = (const uint8_t *)w->data;
    const int bs = aha_dtype_block(w->type), bb = (int)aha_dtype_block_bytes(w->type);
#define DQ_GO(T, F) \
    AHA_LAUNCH(blocks, DQ_THREADS, 0, st, dequant_kernel<T, F>)((T *)out, data, w->type, w->cols, w->row_bytes, bs, bb, idx, r0, total, scale, F())
    if (op == AHA_F32) DQ_GO(float, as_f32);
    else if (op == AHA_F16) DQ_GO(__half, aha_to_f16);
    else DQ_GO(__nv_bfloat16, aha_to_bf16);
#undef DQ_GO
    cudaLaunchCheck();
    return 0;
}

static int op_ok(aha_dtype op, const char *who) {
    if (op == AHA_F32 || op == AHA_F16 || op == AHA_BF16) return 1;
    aha_err("%s: operand type %s (f32, f16 or bf16)", who, aha_dtype_name(op));
    return 0;
}

extern "C" int aha_weight_rows_cuda(void *out, aha_dtype op, const aha_weight *w, int r0, int nr, cudaStream_t st) {
    if (!weight_ok(w, "aha_weight_rows_cuda") || !op_ok(op, "aha_weight_rows_cuda")) return -1;
    if (r0 < 0 || nr < 0 || r0 + nr > w->rows) {
        aha_err("aha_weight_rows_cuda: rows %d..%d of %d", r0, r0 + nr, w->rows);
        return -1;
    }
    return dequant(out, op, w, NULL, r0, nr, 0.0f, st);
}

extern "C" int aha_embed_cuda(float *x, const aha_weight *emb, const int32_t *tokens, int n, float scale,
                              cudaStream_t st) {
    if (!weight_ok(emb, "aha_embed_cuda")) return -1;
    return dequant(x, AHA_F32, emb, tokens, 0, n, scale, st);
}

extern "C" long aha_mm_tile_elems(const aha_weight *w, aha_dtype op, long cap) {
    if (w->type == op) return 0; // cuBLAS reads it as stored
    const long whole = (long)w->rows * w->cols;
    return whole < cap ? whole : cap / w->cols * w->cols;
}

extern "C" int aha_matmul_w_cuda(float *y, const float *x, const aha_weight *w, const float *bias, int n, int add,
                                 const aha_mm_cuda *mm, cudaStream_t st) {
    if (n <= 0) return 0;
    if (!weight_ok(w, "aha_matmul_w_cuda") || !op_ok(mm->op, "aha_matmul_w_cuda")) return -1;
    const int in = w->cols, out = w->rows;
    const long rows_per_tile = mm->tile_elems / in;
    if (mm->op != AHA_F32 && (long)n * in > mm->act_elems) {
        aha_err("aha_matmul_w_cuda: %d x %d activations, room for %ld values", n, in, mm->act_elems);
        return -1;
    }
    if (w->type != mm->op && rows_per_tile < 1) {
        aha_err("aha_matmul_w_cuda: a %s matrix of %d columns needs a tile of at least one row (tile: %ld values)",
                aha_dtype_name(w->type), in, mm->tile_elems);
        return -1;
    }
    const float one = 1.0f, beta = add ? 1.0f : 0.0f;
    const void *xin = x;
    const cudaDataType t = mm->op == AHA_F32 ? CUDA_R_32F : mm->op == AHA_F16 ? CUDA_R_16F : CUDA_R_16BF;
    if (mm->op != AHA_F32) {
        if (aha_f32_to_half_cuda(mm->act, in, x, in, n, in, mm->op == AHA_BF16, st)) return -1;
        xin = mm->act;
    }
    // y[:, r0 .. r0 + nr) = x w[r0 .. r0 + nr)^T: column-major, y's rows are w's
    for (int r0 = 0; r0 < out; r0 += (int)(w->type == mm->op ? out : rows_per_tile)) {
        const int nr = w->type == mm->op ? out : (int)(out - r0 < rows_per_tile ? out - r0 : rows_per_tile);
        const void *a = (const char *)w->data + (size_t)r0 * w->row_bytes;
        if (w->type != mm->op) {
            if (dequant(mm->tile, mm->op, w, NULL, r0, nr, 0.0f, st)) return -1;
            a = mm->tile;
        }
        if (mm->op == AHA_F32)
            cublasCheck(cublasSgemm(mm->blas, CUBLAS_OP_T, CUBLAS_OP_N, nr, n, in, &one, (const float *)a, in,
                                    (const float *)xin, in, &beta, y + r0, out));
        else
            cublasCheck(cublasGemmEx(mm->blas, CUBLAS_OP_T, CUBLAS_OP_N, nr, n, in, &one, a, t, in, xin, t, in,
                                     &beta, y + r0, CUDA_R_32F, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return bias ? aha_add_bias_cuda(y, bias, n, out, out, st) : 0;
}
