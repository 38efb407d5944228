// The one symbol libaha_cuda.so exports (runtime/gpu_api.h): everything else
// in the library is built with hidden visibility.
extern "C" {
#include "gpu_api.h"
}

extern "C" __attribute__((visibility("default"))) const aha_gpu_api *aha_cuda_api(void) {
    static const aha_gpu_api api = {aha_gpu_available, aha_gpu_describe, aha_gpu_model_init,
                                    aha_gpu_model_free, aha_gpu_model_resident, aha_gpu_init, aha_gpu_free, aha_gpu_reset,
                                    aha_gpu_n_past, aha_gpu_submit, aha_gpu_collect,
                                    aha_gpu_forward_probe, aha_gpu_logits, aha_gpu_router};
    return &api;
}
