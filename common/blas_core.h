// OpenBLAS picks its kernels when it loads, from the CPU model; a model it
// does not know (0.3.21 on Xeon Emerald Rapids) falls back to Prescott's SSE3
// kernels, 3-4x slower at prefill than the AVX-512 ones on the same CPU.
#pragma once

// When OPENBLAS_CORETYPE is unset and OpenBLAS runs a core older than AVX2 on
// a CPU with AVX2+FMA (or AVX-512), the core to ask for: "Haswell" or
// "SkylakeX". The caller sets OPENBLAS_CORETYPE and starts its program again
// (OpenBLAS reads it only at load). NULL when nothing is to change.
const char *aha_blas_core_wanted(void);
