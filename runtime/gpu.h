// The CUDA forward pass (runtime/forward_cuda.cu): the model's weights on the
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
// Plain C, no CUDA headers: code built without CUDA includes it too. Builds
// without nvcc link runtime/gpu_none.c, whose functions say so and fail.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "forward.h"
#include "model.h"

// Weights on the device: float32, or float16 / bfloat16 with float32
// accumulation (cublasGemmEx). Norm weights, biases and the KV cache stay f32.
typedef enum { AHA_GPU_F32, AHA_GPU_F16, AHA_GPU_BF16 } aha_gpu_dtype;

typedef struct aha_gpu_model aha_gpu_model;
typedef struct aha_gpu aha_gpu;

// What one call asks for beyond the forward pass itself.
typedef struct {
    const aha_probe *probe;  // NULL = plain; only its settings are read (eps,
                             // windows, sinks, router, window, doc), its
                             // output arrays are not: see aha_gpu_out
    int last_logits;         // copy the last token's logits back
    int all_rows;            // compute every token's logits (kept on the device)
    const int32_t *targets;  // [n] next token of each (< 0: none), or NULL: score nll
                             // (implies all_rows)
    const aha_gpu *kl_ref;   // or NULL: KL(ref || this) per token; ref's call on the
                             // same tokens (with targets) was the one submitted just before
} aha_gpu_call;

// One call's outputs in pinned host memory, valid until the state's next
// submit but one (two slots alternate).
typedef struct {
    int n;                  // tokens of the call
    const uint32_t *dep;    // [L, n_eps, n, H] observe: d_eps
    const float *werr;      // [L, n_werr, n, H] observe: window-output errors
    const uint8_t *gate;    // [L, n, H] routed: the decisions attention followed
    const float *router;    // [n, L, H] router logits (AHA models)
    const float *logits;    // [vocab] the last token's (last_logits)
    const float *nll, *kl;  // [n] (targets; kl with kl_ref, else zeros)
    aha_attn_flops flops;   // attention FLOPs of the call, executed and full
} aha_gpu_out;

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
// A device state for max_ctx tokens, at most max_batch per call.
aha_gpu *aha_gpu_init(aha_gpu_model *w, int max_ctx, int max_batch);
void aha_gpu_free(aha_gpu *g);
// Forget the cached tokens (a new document); calls in flight are unaffected.
void aha_gpu_reset(aha_gpu *g);
int aha_gpu_n_past(const aha_gpu *g);

// Enqueue n tokens at positions n_past.. (advances n_past). -1 with an error
// for a bad argument or when two calls are already uncollected.
int aha_gpu_submit(aha_gpu *g, const int32_t *tokens, int n, const aha_gpu_call *c);
// Wait for the oldest uncollected call; -1 with the error the device reported.
int aha_gpu_collect(aha_gpu *g, aha_gpu_out *out);

// aha_forward_probe on the device, synchronously (submit + collect): probe's
// output arrays are filled, and the logits (every row with all_logits, else
// the last) and router logits are at aha_gpu_logits / aha_gpu_router.
int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits,
                          aha_probe *probe);
const float *aha_gpu_logits(const aha_gpu *g);   // [n or 1, vocab]
const float *aha_gpu_router(const aha_gpu *g);   // [n, L, H]
