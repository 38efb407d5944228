// Warp-level tensor-core products, mma.sync.m16n8k16 with f16 / bf16 inputs
// and f32 accumulate, as PTX ISA section "Matrix Fragments for mma.m16n8k16
// with floating point type" lays them out. With g = lane / 4, t = lane % 4:
//   A (16 x 16, row major), a[4] .b32 registers of two elements each:
//     a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]
//     a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//   B (16 x 8, column major): b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]
//   C, D (16 x 8, f32): c[0..1] = C[g][2t, 2t+1], c[2..3] = C[g+8][2t, 2t+1]
// The lower 16 bits of a register hold the element of lower index (two
// consecutive halves in memory load as one register). The CPU emulator
// (tests/gpu/emu/cuda_emu.h) implements the same layout from the same text.
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
#endif
