// The CUDA backend as a table of entry points: build/gpu/libaha_cuda.so
// exports one symbol, aha_cuda_api, and ./aha loads it on the first
// --device cuda (runtime/gpu_load.c). So ./aha never links the CUDA
// libraries: it starts without them and fast, and a build without nvcc is
// the same program.
#pragma once
#include "gpu.h"

typedef struct {
    int (*available)(char *why, size_t why_len);
    int (*describe)(char *buf, size_t len);
    aha_gpu_model *(*model_init)(const aha_model *m, aha_gpu_dtype dt);
    void (*model_free)(aha_gpu_model *w);
    size_t (*model_resident)(const aha_gpu_model *w, size_t *tile, char *types, size_t len);
    aha_gpu *(*init)(aha_gpu_model *w, int max_ctx, int max_batch);
    void (*free)(aha_gpu *g);
    void (*reset)(aha_gpu *g, int len);
    int (*n_past)(const aha_gpu *g);
    int (*submit)(aha_gpu *g, const int32_t *tokens, int n, const aha_call *c, const aha_gpu *kl_ref);
    int (*collect)(aha_gpu *g, aha_call_out *out);
    int (*forward_probe)(aha_gpu *g, const int32_t *tokens, int n, int all_logits, aha_probe *probe);
    const float *(*logits)(const aha_gpu *g);
    const float *(*router)(const aha_gpu *g);
} aha_gpu_api;

#define AHA_CUDA_API_SYMBOL "aha_cuda_api"
typedef const aha_gpu_api *(*aha_cuda_api_fn)(void);
