// The CUDA forward pass (runtime/forward_cuda.cu): the model's weights on the
// device, a device KV cache, and aha_forward_probe's semantics -- the same
// probe (observe: d_eps and window errors; route: a router's decisions
// followed by routed attention, FLOPs counted) with its outputs in host
// memory, as the CPU path leaves them. Plain C, no CUDA headers: code built
// without CUDA may include it; the functions exist only in builds with nvcc
// (kernels/cuda/cuda.mk), which define AHA_CUDA for the C side.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "forward.h"
#include "model.h"

// Weights on the device: float32, or float16 / bfloat16 with float32
// accumulation (cublasGemmEx). Norm weights, biases and the KV cache stay f32.
typedef enum { AHA_GPU_F32, AHA_GPU_F16, AHA_GPU_BF16 } aha_gpu_dtype;

typedef struct aha_gpu aha_gpu;

// 1 when a CUDA device is usable; else 0 with the reason in why.
int aha_gpu_available(char *why, size_t why_len);
// "f32" | "f16" | "bf16" -> 0, else -1.
int aha_gpu_dtype_parse(const char *s, aha_gpu_dtype *dt);
const char *aha_gpu_dtype_name(aha_gpu_dtype dt);

// Upload m's weights and allocate a device state for max_ctx tokens, at most
// max_batch per call. NULL with a one-line error (aha_err) on failure.
aha_gpu *aha_gpu_init(const aha_model *m, int max_ctx, int max_batch, aha_gpu_dtype dt);
void aha_gpu_free(aha_gpu *g);
// Forget the cached tokens (a new document).
void aha_gpu_reset(aha_gpu *g);
int aha_gpu_n_past(const aha_gpu *g);
// Host views filled by the last forward call: logits [n or 1, vocab] (as
// aha_state.logits) and router logits [n, L, H] (AHA models, as aha_state.router).
const float *aha_gpu_logits(const aha_gpu *g);
const float *aha_gpu_router(const aha_gpu *g);

// aha_forward_probe on the device. probe (may be NULL) as in forward.h: its
// dep / werr / gate outputs are host arrays, filled when the call returns.
int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits,
                          aha_probe *probe);
