// Device weight types by name: shared by builds with and without CUDA.
#include <string.h>

#include "err.h"
#include "gpu.h"

int aha_gpu_dtype_parse(const char *s, aha_gpu_dtype *dt) {
    if (!strcmp(s, "f32") || !strcmp(s, "float32")) *dt = AHA_GPU_F32;
    else if (!strcmp(s, "f16") || !strcmp(s, "float16")) *dt = AHA_GPU_F16;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) *dt = AHA_GPU_BF16;
    else {
        aha_err("--dtype: unknown type '%s' (f32, f16, bf16)", s);
        return -1;
    }
    return 0;
}

const char *aha_gpu_dtype_name(aha_gpu_dtype dt) {
    return dt == AHA_GPU_F32 ? "f32" : dt == AHA_GPU_F16 ? "f16" : "bf16";
}
