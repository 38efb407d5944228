// The CUDA forward pass (runtime/cuda/forward_cuda.cu): the model's weights on the
// device (aha_gpu_model), one device state per run (aha_gpu: KV cache,
// activations, outputs) and aha_forward_probe's semantics -- the same probe
// (observe: d_eps and window errors; route: a router's decisions followed by
// routed attention, FLOPs counted).
//
// Calls are asynchronous: aha_gpu_submit enqueues a chunk on the model's
// stream and returns; aha_gpu_collect waits for the oldest call not yet
// collected and hands out its outputs, copied back into pinned host memory.
// Two calls per state may be in flight, so the host reads chunk b while the
// device runs chunk b + 1. Every state of one model shares its stream: calls
// run in the order they were submitted.
//
// Plain C, no CUDA headers. ./aha reaches these through runtime/cuda/gpu_load.c,
// which loads build/gpu/libaha_cuda.so (built where nvcc is) on first use;
// tests link the CUDA objects directly.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "forward.h"
#include "model.h"

// Weights on the device stay in their stored type (the file's bytes: Q4_1,
// Q6_K, bf16, ...); aha_gpu_dtype is the products' operand type: each
// product decodes its matrix, a tile of rows at a time, to f32, f16 or bf16
// for cuBLAS (f32 accumulate). Norm weights, biases and the KV cache are f32.
typedef enum { AHA_GPU_F32, AHA_GPU_F16, AHA_GPU_BF16 } aha_gpu_dtype;

typedef struct aha_gpu_model aha_gpu_model;
typedef struct aha_gpu aha_gpu;

// 1 when a CUDA device is usable; else 0 with the reason in why.
int aha_gpu_available(char *why, size_t why_len);
// "f32" | "f16" | "bf16" -> 0, else -1 (aha_err).
int aha_gpu_dtype_parse(const char *s, aha_gpu_dtype *dt);
const char *aha_gpu_dtype_name(aha_gpu_dtype dt);
// The device's name and memory, for provenance and benchmarks.
int aha_gpu_describe(char *buf, size_t len);

// Upload m's weights (m must outlive the result). NULL with a one-line error.
aha_gpu_model *aha_gpu_model_init(const aha_model *m, aha_gpu_dtype dt);
void aha_gpu_model_free(aha_gpu_model *w);
// What the model holds on the device: the bytes of its weights (returned;
// matrices as stored, f32 norms and biases), the bytes of the products'
// decode tile (*tile) and the matrices' stored types ("Q4_1+Q8_0") in types.
size_t aha_gpu_model_resident(const aha_gpu_model *w, size_t *tile, char *types, size_t len);
// A device state for max_ctx tokens, at most max_batch per call.
aha_gpu *aha_gpu_init(aha_gpu_model *w, int max_ctx, int max_batch);
void aha_gpu_free(aha_gpu *g);
// Forget the cached tokens: a new context of len tokens (a longrope model
// takes the factors HF picks for that length, as aha_state_reset); calls in
// flight are unaffected.
void aha_gpu_reset(aha_gpu *g, int len);
int aha_gpu_n_past(const aha_gpu *g);

// Enqueue n tokens at positions n_past.. (advances n_past); c may be NULL.
// kl_ref (or NULL): a state of the same model whose call on the same tokens,
// with targets, was submitted just before: KL(ref || this) per token. -1 with
// an error for a bad argument or when two calls are already uncollected.
int aha_gpu_submit(aha_gpu *g, const int32_t *tokens, int n, const aha_call *c,
                   const aha_gpu *kl_ref);
// Wait for the oldest uncollected call; its outputs are in pinned host
// memory. -1 with the error the device reported.
int aha_gpu_collect(aha_gpu *g, aha_call_out *out);

// aha_forward_probe on the device, synchronously (submit + collect): probe's
// output arrays are filled, and the logits (every row with all_logits, else
// the last) and router logits are at aha_gpu_logits / aha_gpu_router.
int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits,
                          aha_probe *probe);
const float *aha_gpu_logits(const aha_gpu *g);   // [n or 1, vocab]
const float *aha_gpu_router(const aha_gpu *g);   // [n, L, H]
