// Development-only CUDA code, kept out of the production folder and library
// (build/gpu/libaha_cuda.so), as llm.c keeps dev/cuda/ apart from llmc/: a
// kernel variant that the benchmarks measure against the runtime's, and the
// host twins of device bookkeeping that the tests compare it with. Only the
// programs of tests/gpu link it (kernels/cuda/cuda.mk: CUDA_DEV_OBJ).
#pragma once
#include "../aha_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- attention_tc.cu: tensor-core variant 2 (TF32 in, f32 out) ----------
// The same contracts as aha_attention_cuda / aha_attention_routed_cuda with
// QK^T and PV on the tensor cores (inputs rounded to TF32, ~1e-3 relative);
// head_dim 64 or 128. Benchmarked only: the runtime uses v1 and v3.
int aha_attention_tc_supports(int head_dim);
int aha_attention_tc_cuda(float *out, const float *q, const float *k, const float *v,
                          const aha_attn_shape *s, int n, int p0, cudaStream_t st);
int aha_attention_routed_tc_cuda(float *out, const float *q, const float *k, const float *v,
                                 const aha_attn_shape *s, int n, int p0, int window, int sinks,
                                 const uint8_t *gate, aha_route_ws *ws, cudaStream_t st);

// ---- route_host.c: routed attention's bookkeeping on the host -----------
// Index lists of head h as the device builds them; the counts are returned.
void aha_route_compact_host(const uint8_t *gate, int n, int H, int h, int *idx_g, int *ng,
                            int *idx_l, int *nl);
// FLOPs as the device counts them (aha_route_visible; unsigned integers: exact).
void aha_route_flops_host(const uint8_t *gate, int n, int H, int D, int p0, int window,
                          int sinks, unsigned long long *executed, unsigned long long *full);

#ifdef __cplusplus
}
#endif
