// Shared by every CUDA kernel file: error checks that name the file and line
// and say what usually causes the error (one aha_err line, return -1), launch
// helpers, warp reductions.
#pragma once
#ifndef AHA_CUDA_EMU // tests/gpu/emu/cuda_emu.h stands in for these
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "err.h"
}

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

// Errors a kernel leaves behind (sticky, asynchronous): any later call
// reports them, so the file:line that finds one is not where it happened.
static inline int aha_cuda_async_error(cudaError_t e) {
    switch ((int)e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorMisalignedAddress:
    case cudaErrorAssert: case cudaErrorIllegalInstruction: case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace: case cudaErrorInvalidPc: case cudaErrorLaunchTimeout:
        return 1;
    default: return 0;
    }
}

// One line through aha_err (common/err.h; ./aha prints it) naming where the
// error was found; non-zero when e is an error. Library code returns -1 on
// it (gpu_impl.cuh promises that); it never exits the process.
static inline int aha_cuda_failed(cudaError_t e, const char *file, int line) {
    if (e == cudaSuccess) return 0;
    if (!aha_cuda_async_error(e)) (void)cudaGetLastError(); // reported: not again at the next launch check
    const char *hint = aha_cuda_hint(e);
    if (aha_cuda_async_error(e))
        aha_err("CUDA error %s (%s) found at %s:%d, left by this or an earlier kernel (CUDA_LAUNCH_BLOCKING=1 "
                "reports it at its launch)%s%s", cudaGetErrorName(e), cudaGetErrorString(e), file, line,
                *hint ? ": " : "", hint);
    else
        aha_err("CUDA error %s (%s) at %s:%d%s%s", cudaGetErrorName(e), cudaGetErrorString(e), file, line,
                *hint ? ": " : "", hint);
    return 1;
}
#define cudaCheck(err)                                                                  \
    do {                                                                                \
        if (aha_cuda_failed((err), __FILE__, __LINE__)) return -1;                      \
    } while (0)

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

static inline int aha_cublas_failed(cublasStatus_t s, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return 0;
    aha_err("cuBLAS error %d at %s:%d: %s", (int)s, file, line, aha_cublas_hint(s));
    return 1;
}
#define cublasCheck(status)                                                             \
    do {                                                                                \
        if (aha_cublas_failed((status), __FILE__, __LINE__)) return -1;                 \
    } while (0)

// After a launch: a bad launch shape is reported here, at its own launch;
// an earlier kernel's fault says so (aha_cuda_async_error).
#define cudaLaunchCheck() cudaCheck(cudaGetLastError())

// Test and benchmark programs: the same line on stderr, then exit.
static inline void aha_cuda_check_exit(cudaError_t e, const char *file, int line) {
    if (!aha_cuda_failed(e, file, line)) return;
    fprintf(stderr, "%s\n", aha_errmsg());
    exit(EXIT_FAILURE);
}
#define cudaCheckExit(err) aha_cuda_check_exit((err), __FILE__, __LINE__)
static inline void aha_cublas_check_exit(cublasStatus_t st, const char *file, int line) {
    if (!aha_cublas_failed(st, file, line)) return;
    fprintf(stderr, "%s\n", aha_errmsg());
    exit(EXIT_FAILURE);
}
#define cublasCheckExit(status) aha_cublas_check_exit((status), __FILE__, __LINE__)

// The dynamic shared memory limit of kernel, raised to bytes once per device
// (the attribute belongs to the device current at the call): *done is the
// caller's static, one per kernel instantiation, bit d for device d.
template <typename K> static inline int aha_smem_attr(K kernel, int bytes, unsigned long long *done) {
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev));
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0;
    if (*done & bit) return 0;
    cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    *done |= bit;
    return 0;
}

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

// f32 -> f16 / bf16, rounded to nearest even, as functors for the conversion
// kernels (ops.cu, weight.cu). f16 saturates (NaN stays NaN): a value past
// 65504 becomes the largest finite half, not Inf, so that P = 0 times it
// stays 0 at masked keys.
struct aha_to_f16 {
    __device__ __half operator()(float x) const {
        return __float2half_rn(x != x ? x : fminf(fmaxf(x, -65504.0f), 65504.0f));
    }
};
struct aha_to_bf16 {
    __device__ __nv_bfloat16 operator()(float x) const { return __float2bfloat16_rn(x); }
};
