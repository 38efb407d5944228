// The one rule for a KL that comes out negative (aha_kl_logits and its CUDA
// twin, score_kernel in kernels/cuda/ops.cu). KL >= 0 exactly; computed from
// float logits it carries the rounding of the two logsumexps, each good to a
// few float ulps of its magnitude. A value within that bound below 0 is
// rounding and becomes 0; a more negative one is returned as it is, so a
// wrong number shows instead of hiding as a perfect match.
#pragma once
#include <float.h>
#include <math.h>

#ifdef __CUDACC__
#define AHA_KL_HD __host__ __device__
#else
#define AHA_KL_HD
#endif

// kl computed with logsumexps lp (reference) and lq: the bound in nats.
static inline AHA_KL_HD double aha_kl_round_bound(double lp, double lq) {
    return 8.0 * FLT_EPSILON * (1.0 + fabs(lp) + fabs(lq));
}

static inline AHA_KL_HD double aha_kl_settle(double kl, double lp, double lq) {
    return kl < 0 && kl >= -aha_kl_round_bound(lp, lq) ? 0.0 : kl;
}
