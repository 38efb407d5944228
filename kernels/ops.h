// CPU reference kernels for one transformer block. Plain loops where the work
// is O(n); BLAS where it is a matrix product.
#pragma once

// y[n, out] = x[n, in] @ w[out, in]^T (+ bias[out] when bias != NULL).
void aha_matmul(float *y, const float *x, const float *w, const float *bias, int n, int in,
                int out);
// out[i] = x[i] / rms(x) * w[i] over n values, computed in float32 as HF does.
void aha_rmsnorm(float *out, const float *x, const float *w, int n, float eps);
// Rotate n_heads heads of head_dim values at position pos, in place.
// adjacent = 0 pairs (i, i + D/2) (HF rotate-half); 1 pairs (2i, 2i + 1).
void aha_rope(float *x, int n_heads, int head_dim, int pos, const float *inv_freq, int adjacent);
// gate[i] = silu(gate[i]) * up[i].
void aha_swiglu(float *gate, const float *up, int n);
// gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, PyTorch's approximate="tanh").
void aha_geglu(float *gate, const float *up, int n);
// x[i] = cap * tanh(x[i] / cap): gemma2's attention and final logit softcapping.
void aha_softcap(float *x, int n, float cap);
// In-place softmax over n values (max-subtracted).
void aha_softmax(float *x, int n);
// log(sum(exp(x))) over n logits: the normaliser of a next-token distribution.
float aha_logsumexp(const float *x, int n);
// KL(softmax(p) || softmax(q)) from two rows of n logits: exactly 0 for
// identical rows; negative only beyond rounding's bound (kl_round.h).
float aha_kl_logits(const float *p, const float *q, int n);
// The index of the first NaN or Inf of x[0..n), -1 when every value is
// finite: the forward pass's check after each stage (a NaN stops the run).
long aha_nonfinite(const float *x, long n);
