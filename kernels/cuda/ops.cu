// CUDA twins of the O(n) kernels of kernels/ops.h and kernels/vmath.c, plus
// the router gate (runtime/router.c's learned and oracle rules).
//
// Contracts (as the CPU twins; see aha_cuda.h for the layouts):
//   rmsnorm  out = w * (x * (1 / sqrtf((float)(sum x^2 / n) + eps))), sum in double
//   rope     pairs (i, i + D/2) or (2i, 2i+1); angle = (float)pos * inv_freq[i]
//   swiglu   gate = gate / (1 + expf(-gate)) * up
//   geglu    gate = gate / (1 + expf(-2 sqrt(2/pi) (gate + 0.044715 gate^3))) * up
//   softcap  x = cap * tanhf(x / cap)
//   gate     learned: logit > logf(tau / (1 - tau)); oracle: d_eps > w
//   score    nll = logsumexp(row) - row[target]; KL(softmax(ref) || softmax(row))
//   nonfinite  the first NaN or Inf of a stage (atomicMin over stage, index)
// Built without --use_fast_math: expf / cosf / sinf are the accurate ones.
#include "../kl_round.h"
#include "aha_cuda.h"
#include "common.cuh"

// gridDim.y is at most 65,535: the tokens stride by it (a call may hold more).
#define AHA_GRID_Y_MAX 65535

// Block-wide reductions; every thread gets the result. blockDim.x is a
// multiple of 32, at most 1024.
__device__ double block_sum_d(double v) {
    __shared__ double part[32];
    v = aha_warp_sum_d(v);
    __syncthreads(); // part may still be read by an earlier call
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        double u = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.0;
        u = aha_warp_sum_d(u);
        if (threadIdx.x == 0) part[0] = u;
    }
    __syncthreads();
    return part[0];
}

__device__ float block_max(float v) {
    __shared__ float part[32];
    v = aha_warp_max(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) { // filler -inf, not part[0], which lane 0 writes below
        float u = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : -INFINITY;
        u = aha_warp_max(u);
        if (threadIdx.x == 0) part[0] = u;
    }
    __syncthreads();
    return part[0];
}

// One block per row: double sum of squares (block reduction), float scale.
// Up to 1024 threads: the bound keeps registers within what that needs.
__global__ void __launch_bounds__(1024) rmsnorm_kernel(float *out, const float *x, const float *w, int tok_stride,
                               int groups, int n, float eps) {
    const int t = blockIdx.x / groups, g = blockIdx.x % groups;
    const long off = (long)t * tok_stride + (long)g * n;
    const float *xr = x + off;
    float *orow = out + off;
    double ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)xr[i] * xr[i];
    const float r = 1.0f / sqrtf((float)(block_sum_d(ss) / n) + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) orow[i] = w[i] * (xr[i] * r);
}

extern "C" int aha_rmsnorm_cuda(float *out, const float *x, const float *w, int n_tok,
                                int tok_stride, int groups, int n, float eps, cudaStream_t st) {
    if (n_tok <= 0) return 0;
    int threads = n >= 1024 ? 1024 : n >= 256 ? 256 : 64;
    AHA_LAUNCH((unsigned)n_tok * groups, threads, 0, st, rmsnorm_kernel)(out, x, w, tok_stride, groups, n,
                                                                  eps);
    cudaLaunchCheck();
    return 0;
}

// One thread per (token, frequency i): rotates that pair in every head.
__global__ void rope_kernel(float *x, int n, int tok_stride, int n_heads, int head_dim, int pos0,
                            const float *inv_freq, int adjacent) {
    const int half = head_dim / 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= half) return;
    const int a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
    for (int t = blockIdx.y; t < n; t += gridDim.y) {
        const float ang = (float)(pos0 + t) * inv_freq[i];
        const float c = cosf(ang), s = sinf(ang);
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (long)t * tok_stride + (long)h * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * c - x1 * s;
            v[b] = x1 * c + x0 * s;
        }
    }
}

extern "C" int aha_rope_cuda(float *x, int n_tok, int tok_stride, int n_heads, int head_dim,
                             int pos0, const float *inv_freq, int adjacent, cudaStream_t st) {
    if (n_tok <= 0) return 0;
    if (head_dim % 2) {
        aha_err("aha_rope_cuda: odd head_dim %d", head_dim);
        return -1;
    }
    dim3 grid(aha_ceil_div(head_dim / 2, 64), n_tok < AHA_GRID_Y_MAX ? n_tok : AHA_GRID_Y_MAX);
    AHA_LAUNCH(grid, 64, 0, st, rope_kernel)(x, n_tok, tok_stride, n_heads, head_dim, pos0, inv_freq, adjacent);
    cudaLaunchCheck();
    return 0;
}

// gate = act(gate) * up: SwiGLU (silu), or GeGLU (GELU = 0 / 1) with the
// tanh GELU written as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3),
// as aha_geglu computes it.
template <bool GELU> __global__ void glu_kernel(float *gate, const float *up, long n) {
    const float beta2 = 1.5957691216057308f, kappa = 0.044715f; // 2 sqrt(2/pi)
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float g = gate[i];
        gate[i] = g / (1.0f + expf(GELU ? -beta2 * (g + kappa * g * g * g) : -g)) * up[i];
    }
}

static unsigned grid_for(long n, int threads) {
    long b = (n + threads - 1) / threads;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

extern "C" int aha_swiglu_cuda(float *gate, const float *up, long n, cudaStream_t st) {
    if (n <= 0) return 0;
    AHA_LAUNCH(grid_for(n, 256), 256, 0, st, glu_kernel<false>)(gate, up, n);
    cudaLaunchCheck();
    return 0;
}

extern "C" int aha_geglu_cuda(float *gate, const float *up, long n, cudaStream_t st) {
    if (n <= 0) return 0;
    AHA_LAUNCH(grid_for(n, 256), 256, 0, st, glu_kernel<true>)(gate, up, n);
    cudaLaunchCheck();
    return 0;
}

__global__ void softcap_kernel(float *x, long n, float cap) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        x[i] = cap * tanhf(x[i] / cap);
}

extern "C" int aha_softcap_cuda(float *x, long n, float cap, cudaStream_t st) {
    if (n <= 0) return 0;
    AHA_LAUNCH(grid_for(n, 256), 256, 0, st, softcap_kernel)(x, n, cap);
    cudaLaunchCheck();
    return 0;
}

__global__ void add_bias_kernel(float *y, const float *bias, int out, int ld, long total) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
        y[(i / out) * ld + i % out] += bias[i % out];
}

extern "C" int aha_add_bias_cuda(float *y, const float *bias, int n, int out, int ld,
                                 cudaStream_t st) {
    long total = (long)n * out;
    if (total <= 0 || !bias) return 0;
    AHA_LAUNCH(grid_for(total, 256), 256, 0, st, add_bias_kernel)(y, bias, out, ld, total);
    cudaLaunchCheck();
    return 0;
}

__global__ void add_kernel(float *x, const float *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        x[i] += y[i];
}

extern "C" int aha_add_cuda(float *x, const float *y, long n, cudaStream_t st) {
    if (n <= 0) return 0;
    AHA_LAUNCH(grid_for(n, 256), 256, 0, st, add_kernel)(x, y, n);
    cudaLaunchCheck();
    return 0;
}

__global__ void gate_learned_kernel(uint8_t *gate, const float *logits, int stride, int n, int H,
                                    float cut) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= (long)n * H) return;
    gate[i] = logits[(i / H) * stride + i % H] > cut;
}

extern "C" int aha_gate_learned_cuda(uint8_t *gate, const float *logits, int logit_stride, int n,
                                     int H, float tau, cudaStream_t st) {
    if (n <= 0) return 0;
    const float cut = logf(tau / (1 - tau)); // the host's logf, as aha_router_decide
    AHA_LAUNCH(grid_for((long)n * H, 256), 256, 0, st, gate_learned_kernel)(gate, logits, logit_stride, n,
                                                                    H, cut);
    cudaLaunchCheck();
    return 0;
}

__global__ void gate_oracle_kernel(uint8_t *gate, const uint32_t *dep, long total, uint32_t w) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < total) gate[i] = dep[i] > w;
}

extern "C" int aha_gate_oracle_cuda(uint8_t *gate, const uint32_t *dep, int n, int H, int window,
                                    cudaStream_t st) {
    long total = (long)n * H;
    if (total <= 0) return 0;
    AHA_LAUNCH(grid_for(total, 256), 256, 0, st, gate_oracle_kernel)(gate, dep, total, (uint32_t)window);
    cudaLaunchCheck();
    return 0;
}

__global__ void nonfinite_kernel(const float *x, long n, unsigned long long tag, unsigned long long *first) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        if (!isfinite(x[i])) atomicMin(first, tag | (unsigned long long)i << 1 | (unsigned long long)isnan(x[i]));
}

extern "C" int aha_nonfinite_cuda(const float *x, long n, unsigned stage, unsigned long long *first, cudaStream_t st) {
    if (n <= 0) return 0;
    const unsigned grid = grid_for(n, 256) < 1024 ? grid_for(n, 256) : 1024; // a strided pass, no more blocks
    AHA_LAUNCH(grid, 256, 0, st, nonfinite_kernel)(x, n, (unsigned long long)stage << 40, first);
    cudaLaunchCheck();
    return 0;
}

// One block per row: logsumexp as aha_logsumexp (float max, double sum of
// exp), nll = lse - row[target], and KL(softmax(ref) || softmax(row)) in
// aha_kl_logits's form, which is exactly 0 for identical rows.
__device__ float row_lse(const float *x, int V) {
    float mx = x[0];
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, x[i]);
    mx = block_max(mx);
    double s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(x[i] - mx);
    return mx + (float)log(block_sum_d(s));
}

__global__ void score_kernel(float *nll, float *kl, const float *logits, const float *ref,
                             const int32_t *targets, int V) {
    const long r = blockIdx.x;
    const float *q = logits + r * V;
    const float lq = row_lse(q, V);
    if (threadIdx.x == 0) nll[r] = targets[r] < 0 ? nanf("") : lq - q[targets[r]];
    if (!kl) return;
    const float *p = ref + r * V;
    const float lp = row_lse(p, V);
    double acc = 0, mass = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        const float e = expf(p[i] - lp);
        acc += e * (p[i] - q[i]);
        mass += e;
    }
    acc = block_sum_d(acc);
    mass = block_sum_d(mass);
    if (threadIdx.x == 0) {
        const double d = acc - ((double)lp - lq) * mass;
        kl[r] = (float)aha_kl_settle(d, lp, lq);
    }
}

extern "C" int aha_score_cuda(float *nll, float *kl, const float *logits, const float *ref,
                              const int32_t *targets, int n, int vocab, cudaStream_t st) {
    if (n <= 0) return 0;
    AHA_LAUNCH(n, 256, 0, st, score_kernel)(nll, ref ? kl : NULL, logits, ref, targets, vocab);
    cudaLaunchCheck();
    return 0;
}

// Row r of dst (stride dst_ld) = row r of src (stride src_ld), cols values,
// rounded to nearest even (one 2-D form for weights, activations and caches).
template <typename T, typename F>
__global__ void to_half_kernel(T *d, long dld, const float *s, long sld, long rows, long cols, F cvt) {
    const long n = rows * cols;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const long r = i / cols, c = i % cols;
        d[r * dld + c] = cvt(s[r * sld + c]);
    }
}
extern "C" int aha_f32_to_half_cuda(void *dst, long dst_ld, const float *src, long src_ld, long rows, long cols,
                                    int bf16, cudaStream_t st) {
    const long n = rows * cols;
    if (n <= 0) return 0;
    if (bf16)
        AHA_LAUNCH(grid_for(n, 256), 256, 0, st, to_half_kernel<__nv_bfloat16, aha_to_bf16>)(
            (__nv_bfloat16 *)dst, dst_ld, src, src_ld, rows, cols, aha_to_bf16());
    else
        AHA_LAUNCH(grid_for(n, 256), 256, 0, st, to_half_kernel<__half, aha_to_f16>)((__half *)dst, dst_ld, src, src_ld,
                                                                                 rows, cols, aha_to_f16());
    cudaLaunchCheck();
    return 0;
}
