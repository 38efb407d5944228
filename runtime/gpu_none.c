// The CUDA entry points of gpu.h in a build without nvcc: each says so and
// fails, so that --device cuda is a clear error rather than a link failure.
// Builds with nvcc link runtime/*_cuda.cu instead (kernels/cuda/cuda.mk).
#include <stdio.h>

#include "err.h"
#include "gpu.h"

#define NO_CUDA "--device cuda: this aha was built without CUDA (nvcc was not found by make)"

int aha_gpu_available(char *why, size_t why_len) {
    snprintf(why, why_len, "built without CUDA");
    return 0;
}

int aha_gpu_describe(char *buf, size_t len) {
    snprintf(buf, len, "none (built without CUDA)");
    return -1;
}

aha_gpu_model *aha_gpu_model_init(const aha_model *m, aha_gpu_dtype dt) {
    (void)m, (void)dt;
    aha_err(NO_CUDA);
    return NULL;
}

aha_gpu *aha_gpu_init(aha_gpu_model *w, int max_ctx, int max_batch) {
    (void)w, (void)max_ctx, (void)max_batch;
    aha_err(NO_CUDA);
    return NULL;
}

// Nothing below can be reached: no model or state exists without CUDA.
void aha_gpu_model_free(aha_gpu_model *w) { (void)w; }
void aha_gpu_free(aha_gpu *g) { (void)g; }
void aha_gpu_reset(aha_gpu *g) { (void)g; }
int aha_gpu_n_past(const aha_gpu *g) { return (void)g, 0; }
const float *aha_gpu_logits(const aha_gpu *g) { return (void)g, NULL; }
const float *aha_gpu_router(const aha_gpu *g) { return (void)g, NULL; }

int aha_gpu_submit(aha_gpu *g, const int32_t *tokens, int n, const aha_call *c, const aha_gpu *kl_ref) {
    (void)g, (void)tokens, (void)n, (void)c, (void)kl_ref;
    aha_err(NO_CUDA);
    return -1;
}

int aha_gpu_collect(aha_gpu *g, aha_call_out *out) {
    (void)g, (void)out;
    aha_err(NO_CUDA);
    return -1;
}

int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits, aha_probe *probe) {
    (void)g, (void)tokens, (void)n, (void)all_logits, (void)probe;
    aha_err(NO_CUDA);
    return -1;
}
