// Internals shared by runtime/model_cuda.cu (weights) and runtime/forward_cuda.cu
// (states and calls): error macros that report through aha_err, the device
// weights of a model.
#pragma once
#ifndef AHA_CUDA_EMU
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "buf.h"
#include "err.h"
#include "gpu.h"
}
#include "cuda/aha_cuda.h"
#include "cuda/common.cuh"

// Errors inside a forward call: reported with aha_err (common.cuh) and
// returned as -1 rather than exit, so that the CLI can print one line.
#define CU(call) cudaCheck(call)
#define CUB(call) cublasCheck(call)
#define OK(call)                                                                        \
    do {                                                                                \
        if ((call) != 0) return -1;                                                     \
    } while (0)


// The products' operand type as a stored type (kernels/cuda/weight.cu's op).
static inline aha_dtype gpu_op(aha_gpu_dtype dt) {
    return dt == AHA_GPU_F32 ? AHA_F32 : dt == AHA_GPU_F16 ? AHA_F16 : AHA_BF16;
}

// Device allocations of one owner, freed together.
typedef struct {
    void **p;        // [n] device pointers
    int n;           // ...
    size_t cap;      // ... allocated (host memory)
    cudaStream_t st; // the owner's stream: the zero fill runs on it, not the legacy default stream
} dev_allocs;

static inline void *dev_alloc(dev_allocs *a, size_t bytes) {
    void *p = NULL;
    if (aha_grow(&a->p, &a->cap, (size_t)a->n + 1, sizeof *a->p, "device allocations") != 0) return NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        aha_err("out of device memory (%zu bytes more)", bytes);
        return NULL;
    }
    a->p[a->n++] = p;
    if (cudaMemsetAsync(p, 0, bytes ? bytes : 1, a->st) != cudaSuccess) {
        aha_err("cannot clear %zu bytes of device memory", bytes);
        return NULL;
    }
    return p;
}

static inline void dev_free_all(dev_allocs *a) {
    for (int i = 0; i < a->n; i++) cudaFree(a->p[i]);
    free(a->p);
    memset(a, 0, sizeof *a);
}

typedef struct {
    aha_weight wq, wk, wv, wo, w_gate, w_up, w_down; // the stored matrices, data on the device
    const float *attn_norm, *bq, *bk, *bv, *br, *q_norm, *k_norm, *post_attn_norm, *ffn_norm,
        *post_ffn_norm;     // f32, NULL where the architecture has none
    const float *inv_freq;  // [head_dim / 2] this layer's RoPE table (the model's global or local one),
                            // NULL: a NoPE layer
    const float *inv_freq_long; // [head_dim / 2] longrope: the long factors' table, else NULL
} dev_layer;

struct aha_gpu_model {
    const aha_model *m;     // host model (config, tokenizer, routers' needs)
    aha_gpu_dtype dt;       // the products' operand type
    cudaStream_t st;        // every call of every state runs here, in order
    cublasHandle_t blas;    // bound to st
    dev_layer *layers;      // [n_layers]
    aha_weight tok_emb;     // [vocab, dim] stored (the lookup decodes a row per token)
    aha_weight lm_head;     // [vocab, dim] stored; the embedding's bytes when tied
    const float *out_norm;  // [dim]
    const float *inv_freq;  // [head_dim / 2] global layers' RoPE frequencies
    const float *inv_freq_local; // [head_dim / 2] natively local layers' (gemma3), else NULL
    const float *inv_freq_long;  // [head_dim / 2] longrope: the long factors', else NULL
    void *tile;             // decoded weight rows of one product (aha_mm_cuda); st orders its users
    long tile_elems;        // values of dt it holds (0: every matrix is stored in dt)
    size_t resident;        // bytes of weights on the device (matrices as stored, f32 norms)
    unsigned types;         // bit t: a matrix of stored type t (aha_dtype) is on the device
    dev_allocs mem;
};
