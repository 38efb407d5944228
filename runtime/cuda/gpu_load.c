// gpu.h for ./aha: the CUDA backend is build/gpu/libaha_cuda.so (built where
// nvcc is), loaded on the first call that needs a device. Without it,
// --device cuda is one clear error and everything else works the same.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "gpu_api.h"

static const aha_gpu_api *api;
static char why_not[PATH_MAX + 300];

// AHA_CUDA_LIB, else build/gpu/libaha_cuda.so beside the executable.
static const aha_gpu_api *load(void) {
    if (api || why_not[0]) return api;
    char path[PATH_MAX] = "";
    const char *env = getenv("AHA_CUDA_LIB");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        char *slash = n > 0 ? (path[n] = '\0', strrchr(path, '/')) : NULL;
        if (slash) snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "build/gpu/libaha_cuda.so");
        else snprintf(path, sizeof path, "build/gpu/libaha_cuda.so");
    }
    if (access(path, F_OK) != 0) {
        if (env && *env) snprintf(why_not, sizeof why_not, "AHA_CUDA_LIB=%s does not exist", path);
        else snprintf(why_not, sizeof why_not, "this aha has no CUDA backend (no %s: `make` or `make cuda-lib` builds it, "
                      "with nvcc on PATH)", path);
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    aha_cuda_api_fn fn = h ? (aha_cuda_api_fn)dlsym(h, AHA_CUDA_API_SYMBOL) : NULL;
    if (!fn) {
        snprintf(why_not, sizeof why_not, "cannot load %s (%s)", path, dlerror());
        return NULL;
    }
    return api = fn();
}

int aha_gpu_available(char *why, size_t why_len) {
    if (load()) return api->available(why, why_len);
    snprintf(why, why_len, "%s", why_not);
    return 0;
}

int aha_gpu_describe(char *buf, size_t len) {
    if (load()) return api->describe(buf, len);
    snprintf(buf, len, "none (%s)", why_not);
    return -1;
}

aha_gpu_model *aha_gpu_model_init(const aha_model *m, aha_gpu_dtype dt) {
    if (load()) return api->model_init(m, dt);
    aha_err("--device cuda: %s", why_not);
    return NULL;
}

// The rest is reachable only through a model that aha_gpu_model_init made,
// so the library is loaded.
void aha_gpu_model_free(aha_gpu_model *w) {
    if (w) api->model_free(w);
}
size_t aha_gpu_model_resident(const aha_gpu_model *w, size_t *tile, char *types, size_t len) {
    return api->model_resident(w, tile, types, len);
}
aha_gpu *aha_gpu_init(aha_gpu_model *w, int max_ctx, int max_batch) { return api->init(w, max_ctx, max_batch); }
void aha_gpu_free(aha_gpu *g) {
    if (g) api->free(g);
}
void aha_gpu_reset(aha_gpu *g, int len) { api->reset(g, len); }
int aha_gpu_n_past(const aha_gpu *g) { return api->n_past(g); }
int aha_gpu_submit(aha_gpu *g, const int32_t *tokens, int n, const aha_call *c, const aha_gpu *kl_ref) {
    return api->submit(g, tokens, n, c, kl_ref);
}
int aha_gpu_collect(aha_gpu *g, aha_call_out *out) { return api->collect(g, out); }
int aha_gpu_forward_probe(aha_gpu *g, const int32_t *tokens, int n, int all_logits, aha_probe *probe) {
    return api->forward_probe(g, tokens, n, all_logits, probe);
}
const float *aha_gpu_logits(const aha_gpu *g) { return api->logits(g); }
const float *aha_gpu_router(const aha_gpu *g) { return api->router(g); }
