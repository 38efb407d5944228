#include "blas_core.h"

#include <cblas.h>
#include <stdlib.h>
#include <strings.h>

const char *aha_blas_core_wanted(void) {
    static const char *const avx2_cores[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"};
    if (getenv("OPENBLAS_CORETYPE") || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return NULL;
    const char *core = openblas_get_corename();
    for (size_t i = 0; core && i < sizeof avx2_cores / sizeof *avx2_cores; i++)
        if (strcasecmp(core, avx2_cores[i]) == 0) return NULL;
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512cd");
    return avx512 ? "SkylakeX" : "Haswell";
}
