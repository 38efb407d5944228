// Shared by every CUDA kernel file: error checks that name the file and line
// and say what usually causes the error, launch helpers, warp reductions.
#pragma once
#ifndef AHA_CUDA_EMU // tests/gpu/emu/cuda_emu.h stands in for these
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif
#include <stdio.h>
#include <stdlib.h>

// Launch: AHA_LAUNCH(grid, block, smem, stream, kernel)(args...). A macro so
// that the CPU emulator (tests/gpu/emu/cuda_emu.h) can run the same source.
#ifndef AHA_CUDA_EMU
#define AHA_LAUNCH(grid, block, smem, st, ...) __VA_ARGS__<<<grid, block, smem, st>>>
#define AHA_DYN_SMEM(type, name) extern __shared__ __align__(128) type name[]
#else
#define AHA_LAUNCH(grid, block, smem, st, ...) emu::launch(grid, block, smem, __VA_ARGS__)
#define AHA_DYN_SMEM(type, name) type *name = (type *)emu::dyn_smem().data()
#endif

// A hint for the errors people actually hit.
static inline const char *aha_cuda_hint(cudaError_t e) {
    switch (e) {
    case cudaErrorNoDevice: return "no CUDA device visible (CUDA_VISIBLE_DEVICES? driver loaded?)";
    case cudaErrorInsufficientDriver: return "the driver is older than this CUDA runtime";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
        return "built for another GPU: rebuild with CUDA_ARCH=sm_XX of this device";
    case cudaErrorMemoryAllocation: return "out of device memory: smaller batch or context";
    case cudaErrorInvalidConfiguration: return "bad launch shape (block size or shared memory)";
    case cudaErrorIllegalAddress: return "out-of-bounds access: run under compute-sanitizer";
    default: return "";
    }
}

static inline void aha_cuda_check(cudaError_t e, const char *file, int line) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "[CUDA ERROR] at %s:%d: %s (%s)%s%s\n", file, line, cudaGetErrorString(e),
            cudaGetErrorName(e), *aha_cuda_hint(e) ? ": " : "", aha_cuda_hint(e));
    exit(EXIT_FAILURE);
}
#define cudaCheck(err) aha_cuda_check((err), __FILE__, __LINE__)

static inline const char *aha_cublas_hint(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cublasCreate failed or was not called (no device?)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "out of device memory";
    case CUBLAS_STATUS_INVALID_VALUE: return "bad size, leading dimension or pointer";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "this GPU lacks the data type or math mode asked for";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "type/compute combination not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "kernel failed to launch";
    default: return "";
    }
}

static inline void aha_cublas_check(cublasStatus_t s, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "[cuBLAS ERROR] %d at %s:%d: %s\n", (int)s, file, line, aha_cublas_hint(s));
    exit(EXIT_FAILURE);
}
#define cublasCheck(status) aha_cublas_check((status), __FILE__, __LINE__)

// After a launch: catches bad launch configurations at the call site.
#define cudaLaunchCheck() cudaCheck(cudaGetLastError())

static inline int aha_ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

__device__ __forceinline__ float aha_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float aha_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double aha_warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
