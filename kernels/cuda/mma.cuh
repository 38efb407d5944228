// Warp-level tensor-core products, mma.sync.m16n8k16 with f16 / bf16 inputs
// and f32 accumulate, as PTX ISA section "Matrix Fragments for mma.m16n8k16
// with floating point type" lays them out, and the loads that feed them:
// ldmatrix (shared memory to fragments) and cp.async (global to shared
// memory, bypassing registers). With g = lane / 4, t = lane % 4:
//   A (16 x 16, row major), a[4] .b32 registers of two elements each:
//     a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]
//     a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//   B (16 x 8, column major): b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]
//   C, D (16 x 8, f32): c[0..1] = C[g][2t, 2t+1], c[2..3] = C[g+8][2t, 2t+1]
// The lower 16 bits of a register hold the element of lower index (two
// consecutive halves in memory load as one register).
//   ldmatrix.x4: lanes 8j..8j+7 give the row addresses of 8 x 8 matrix j
//     (16 bytes each); register j of lane l receives row l/4, columns 2t,
//     2t+1 of it, or with .trans column l/4, rows 2t, 2t+1.
// The CPU emulator (tests/gpu/emu/cuda_emu.h) implements the same layouts
// from the same text; its cp.async copies only when the thread waits.
#pragma once
#include <stdint.h>
#ifndef AHA_CUDA_EMU
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// The two input types, as tags: BF16 = 1 picks bf16, 0 picks f16.
template <int BF16> __device__ __forceinline__ uint32_t mma_pack(float lo, float hi);

#ifndef AHA_CUDA_EMU
template <> __device__ __forceinline__ uint32_t mma_pack<1>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); // .x = lo (low half)
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t mma_pack<0>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

// d += A B for one m16n8k16 tile.
// 16 bytes global -> shared; bytes = 0 zero-fills (rows past the end).
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int bytes) {
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <bool TRANS> __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const uint16_t *row) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(row);
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

template <int BF16> __device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    if constexpr (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
template <> inline uint32_t mma_pack<1>(float lo, float hi) {
    return (uint32_t)__float2bfloat16_rn(lo).x | (uint32_t)__float2bfloat16_rn(hi).x << 16;
}
template <> inline uint32_t mma_pack<0>(float lo, float hi) {
    return (uint32_t)__float2half_rn(lo).x | (uint32_t)__float2half_rn(hi).x << 16;
}
template <int BF16> inline void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    emu::mma_16816(d, a, b, BF16);
}
inline void cp_async16(void *smem, const void *gmem, int bytes) { emu::cp_async(smem, gmem, bytes); }
inline void cp_async_commit() { emu::cp_async_commit(); }
template <int N> inline void cp_async_wait() { emu::cp_async_wait(N); }
template <bool TRANS> inline void ldmatrix_x4(uint32_t r[4], const uint16_t *row) { emu::ldmatrix_x4(r, row, TRANS); }
#endif
