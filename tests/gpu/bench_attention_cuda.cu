// GPU benchmarks of issue 5, every figure on one line each:
//   1. dense causal attention TFLOP/s at T = 4k/16k/32k for the three kernels
//      (v1 fp32, v2 TF32, v3 bf16 mma); PyTorch SDPA on the same shapes is
//      tests/gpu/sdpa_bench.py, which given this program's output also prints
//      each kernel's ratio to SDPA (gpu-check.sh runs both; target: dense >=
//      50% of SDPA's TFLOP/s);
//   2. routed attention at 10% / 25% / 100% global, w = 128 / 256, sinks 4:
//      time, executed TFLOP/s, speed-up over all-global (target at 32k and
//      10% global: >= 4x);
//   3. the dependency pass (6 eps; then + 6 windows) against dense attention
//      on the same shape (target <= 2x its time);
//   4. cuBLAS GEMM: projection shapes of a 1B-class model (OLMo-2-1B: dim
//      2048, ffn 8192, 4096 tokens) in f32 / f16 / bf16 (f32 accumulate)
//      against the large-square peak of each type measured in the same run;
//   5. products with the weights in their stored type (Q4_K, Q6_K, Q8_0,
//      bf16; kernels/cuda/weight.cu: bf16 tiles into cuBLAS) against cuBLAS
//      on the same matrix decoded once, at those shapes: time, ratio, and the
//      largest difference of the outputs.
//   build/gpu/bench_attention_cuda [--quick]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/dev/aha_cuda_dev.h"
#include "cuda/common.cuh"
#include "../frand.h"
#include "../stored_rows.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { return frand_next(&rng); }

static float *drandom(long n, float scale) {
    float *h = (float *)malloc(sizeof(float) * n), *d;
    for (long i = 0; i < n; i++) h[i] = frand() * scale;
    cudaCheckExit(cudaMalloc(&d, sizeof(float) * n));
    cudaCheckExit(cudaMemcpy(d, h, sizeof(float) * n, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static cudaEvent_t ev0, ev1;
// Milliseconds per call of f: one warm-up, then reps timed together.
#define TIME_MS(reps, ms, ...)                                                 \
    do {                                                                       \
        __VA_ARGS__;                                                           \
        cudaCheckExit(cudaDeviceSynchronize());                                    \
        cudaCheckExit(cudaEventRecord(ev0));                                       \
        for (int r_ = 0; r_ < (reps); r_++) { __VA_ARGS__; }                   \
        cudaCheckExit(cudaEventRecord(ev1));                                       \
        cudaCheckExit(cudaEventSynchronize(ev1));                                  \
        float t_;                                                              \
        cudaCheckExit(cudaEventElapsedTime(&t_, ev0, ev1));                        \
        ms = t_ / (reps);                                                      \
    } while (0)

static double causal_flops(int H, int D, int n, int p0) {
    double keys = 0;
    for (int i = 0; i < n; i++) keys += p0 + i + 1;
    return 4.0 * D * H * keys;
}

// The three kernels on the same problem: v1 fp32 (attention_routed.cu), v2
// TF32 (dev/attention_tc.cu), v3 bf16 mma (attention_mma.cu: its inputs are
// converted once, outside the timing, as the runtime keeps a bf16 cache).
static const char *vname[] = {"v1 fp32", "v2 TF32", "v3 bf16 mma"};
typedef struct {
    const float *q, *k, *v; // f32 [n, H*D], [T, KV*D]
    void *q16, *k16, *v16;  // the same in bf16
    aha_attn_shape s;
} inputs;

static void full(int var, float *out, const inputs *in, int n, int p0) {
    if (var == 0) aha_attention_cuda(out, in->q, in->k, in->v, &in->s, n, p0, NULL, NULL, 0);
    else if (var == 1) aha_attention_tc_cuda(out, in->q, in->k, in->v, &in->s, n, p0, 0);
    else aha_attention_mma_cuda(out, in->q16, in->k16, in->v16, &in->s, n, p0, 1, 0);
}

static void routed(int var, float *out, const inputs *in, int n, int w, const uint8_t *gate, aha_route_ws *ws) {
    if (var == 0) aha_attention_routed_cuda(out, in->q, in->k, in->v, &in->s, n, 0, w, 4, gate, ws, 0);
    else if (var == 1) aha_attention_routed_tc_cuda(out, in->q, in->k, in->v, &in->s, n, 0, w, 4, gate, ws, 0);
    else aha_attention_routed_mma_cuda(out, in->q16, in->k16, in->v16, &in->s, n, 0, 1, w, 4, gate, ws, 0);
}

static void *to_bf16(const float *x, long n) {
    void *d;
    cudaCheckExit(cudaMalloc(&d, 2 * n));
    aha_f32_to_half_cuda(d, n, x, n, 1, n, 1, 0);
    return d;
}

static void bench_attention(int quick) {
    const int H = 32, KV = 8, D = 128; // a llama-style 8B attention shape (GQA 4)
    const int Ts[] = {4096, 16384, 32768};
    const int nT = quick ? 1 : 3;
    printf("== attention: H %d, KV %d, D %d, prefill of T tokens (p0 = 0)\n", H, KV, D);
    for (int ti = 0; ti < nT; ti++) {
        const int T = Ts[ti], n = T;
        inputs in;
        in.s = (aha_attn_shape){H, KV, D, H * D, KV * D};
        float *q = drandom((long)n * H * D, 2), *k = drandom((long)T * KV * D, 1), *v = drandom((long)T * KV * D, 1);
        in.q = q, in.k = k, in.v = v;
        in.q16 = to_bf16(q, (long)n * H * D), in.k16 = to_bf16(k, (long)T * KV * D);
        in.v16 = to_bf16(v, (long)T * KV * D);
        float *out, *m, *l;
        cudaCheckExit(cudaMalloc(&out, sizeof(float) * (long)n * H * D));
        cudaCheckExit(cudaMalloc(&m, sizeof(float) * (long)n * H));
        cudaCheckExit(cudaMalloc(&l, sizeof(float) * (long)n * H));
        const int reps = T >= 16384 ? 1 : 3;
        const double fd = causal_flops(H, D, n, 0);
        for (int var = 0; var < 3; var++) {
            float ms;
            TIME_MS(reps, ms, full(var, out, &in, n, 0));
            printf("dense   T %5d: %8.2f ms  %7.2f TFLOP/s  (%s)\n", T, ms, fd / ms * 1e-9, vname[var]);
        }
        uint8_t *hg = (uint8_t *)malloc((long)n * H), *dg;
        cudaCheckExit(cudaMalloc(&dg, (long)n * H));
        aha_route_ws ws;
        aha_route_ws_alloc(&ws, n, H);
        const int windows[] = {128, 256};
        const double rates[] = {1.0, 0.25, 0.10};
        for (int wi = 0; wi < 2; wi++) {
            float ms_all[3] = {0, 0, 0};
            for (int ri = 0; ri < 3; ri++) {
                for (long i = 0; i < (long)n * H; i++) hg[i] = (frand() * 0.5f + 0.5f) < rates[ri];
                cudaCheckExit(cudaMemcpy(dg, hg, (long)n * H, cudaMemcpyHostToDevice));
                for (int var = 0; var < 3; var++) {
                    float ms;
                    TIME_MS(reps, ms, routed(var, out, &in, n, windows[wi], dg, &ws));
                    aha_attn_flops f = {0, 0};
                    aha_route_ws_flops(&ws, &f, 0);
                    const double exec = f.executed / (reps + 1); // warm-up + reps accumulated
                    if (ri == 0) ms_all[var] = ms;
                    printf("routed  T %5d w %3d global %3.0f%%: %8.2f ms  %7.2f TFLOP/s executed  "
                           "(%.1f%% of full FLOPs)  %5.2fx vs all-global  (%s)\n",
                           T, windows[wi], rates[ri] * 100, ms, exec / ms * 1e-9,
                           100 * exec / (f.full / (reps + 1)), ms_all[var] / ms, vname[var]);
                }
            }
        }
        // Dependency pass against dense attention on the same shape: the last
        // nq queries of the context (the pass is O(n * T) like attention).
        const int nq = T < 4096 ? T : 4096, p0 = T - nq;
        const float eps[] = {0.5f, 0.2f, 0.1f, 0.05f, 0.01f, 0.001f};
        const int wins[] = {16, 32, 64, 128, 256, 1024};
        uint32_t *dep;
        float *werr;
        cudaCheckExit(cudaMalloc(&dep, sizeof(uint32_t) * 6 * (long)nq * H));
        cudaCheckExit(cudaMalloc(&werr, sizeof(float) * 6 * (long)nq * H));
        const float *qt = q + (long)p0 * H * D;
        float ms_d, ms_s, ms_p, ms_pw;
        TIME_MS(3, ms_d, aha_attention_cuda(out, qt, k, v, &in.s, nq, p0, m, l, 0));
        TIME_MS(3, ms_s, aha_attention_cuda(NULL, qt, k, v, &in.s, nq, p0, m, l, 0)); // the bf16 path's first pass
        aha_observe o1 = {.eps = eps, .n_eps = 6, .sinks = 4, .dep = dep},
                    o2 = {.eps = eps, .n_eps = 6, .windows = wins, .n_windows = 6, .sinks = 4, .dep = dep, .werr = werr};
        TIME_MS(1, ms_p, aha_dependency_cuda(qt, k, v, &in.s, nq, p0, m, l, &o1, 0));
        TIME_MS(1, ms_pw, aha_dependency_cuda(qt, k, v, &in.s, nq, p0, m, l, &o2, 0));
        printf("depend  T %5d (last %d queries): dense %.2f ms; pass 2 (6 eps) %.2f ms -> observe total "
               "%.2fx dense; + 6 windows %.2f ms -> %.2fx dense\n",
               T, nq, ms_d, ms_p, (ms_d + ms_p) / ms_d, ms_pw, (ms_d + ms_pw) / ms_d);
        printf("depend  T %5d (last %d queries): first pass alone (statistics, no PV; --dtype bf16) %.2f ms = "
               "%.2fx dense\n", T, nq, ms_s, ms_s / ms_d);
        aha_route_ws_free(&ws);
        cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(m), cudaFree(l), cudaFree(dg);
        cudaFree(in.q16), cudaFree(in.k16), cudaFree(in.v16);
        cudaFree(dep), cudaFree(werr);
        free(hg);
    }
}

// y[n, out] = x[n, in] @ w[out, in]^T, as runtime/cuda/forward_cuda.cu calls it.
static void gemm(cublasHandle_t hb, int type, void *y, const void *x, const void *w, int n, int in,
                 int out) {
    const float one = 1.0f, zero = 0.0f;
    if (type == 0) {
        cublasCheckExit(cublasSgemm(hb, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, (const float *)w, in,
                                (const float *)x, in, &zero, (float *)y, out));
    } else {
        cudaDataType t = type == 1 ? CUDA_R_16F : CUDA_R_16BF;
        cublasCheckExit(cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, t, in, x, t, in, &zero,
                                 y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}

// y = x w^T with w stored (random blocks of type t at the LM head's size, each
// shape reading a prefix), bf16 operands, the runtime's 8M-value tile,
// against cuBLAS on the matrix decoded to bf16 once (the same operands).
static void bench_stored(cublasHandle_t hb, const int proj[][3], const char *const pname[], int quick) {
    const aha_dtype types[] = {AHA_Q4_K, AHA_Q6_K, AHA_Q8_0, AHA_BF16};
    const long most = 100352L * 2048, tile_cap = 1L << 23; // AHA_GPU_TILE (runtime/cuda/model_cuda.cu)
    float *x = drandom(4096L * 8192, 1), *y, *y2;
    void *tile, *act, *whole, *w;
    cudaCheckExit(cudaMalloc(&y, sizeof(float) * 4096L * 100352)); // n x out at its largest: the LM head
    cudaCheckExit(cudaMalloc(&y2, sizeof(float) * 4096L * 100352));
    cudaCheckExit(cudaMalloc(&tile, 2 * tile_cap + 2 * 8192));
    cudaCheckExit(cudaMalloc(&act, 2 * 4096L * 8192));
    cudaCheckExit(cudaMalloc(&whole, 2 * most));
    cudaCheckExit(cudaMalloc(&w, aha_dtype_bytes(AHA_F32, most, 2048)));
    printf("== stored-type products (bf16 tiles into cuBLAS) vs cuBLAS bf16 on the decoded matrix\n");
    for (int ti = 0; ti < (quick ? 1 : 4); ti++) {
        const aha_dtype t = types[ti];
        const size_t bytes = aha_dtype_bytes(t, most, 2048);
        uint8_t *h = (uint8_t *)malloc(bytes);
        stored_rows_fill(t, h, 100352, 2048, &rng);
        cudaCheckExit(cudaMemcpy(w, h, bytes, cudaMemcpyHostToDevice));
        free(h);
        for (int p = 0; p < 4; p++) {
            const int n = proj[p][0], in = proj[p][1], out = proj[p][2];
            const aha_weight wt = aha_weight_of(w, t, out, in);
            const aha_mm_cuda mm = {hb, AHA_BF16, tile, aha_mm_tile_elems(&wt, AHA_BF16, tile_cap), act, (long)n * in};
            float ms, ms_ref;
            TIME_MS(5, ms, if (aha_matmul_w_cuda(y, x, &wt, NULL, n, 0, &mm, 0)) { fprintf(stderr, "%s\n", aha_errmsg()); exit(1); });
            if (aha_weight_rows_cuda(whole, AHA_BF16, &wt, 0, out, 0)) { fprintf(stderr, "%s\n", aha_errmsg()); exit(1); }
            TIME_MS(5, ms_ref, gemm(hb, 2, y2, act, whole, n, in, out)); // act: x in bf16, from the call above
            float *hy = (float *)malloc(sizeof(float) * (long)n * out), *hy2 = (float *)malloc(sizeof(float) * (long)n * out);
            cudaCheckExit(cudaMemcpy(hy, y, sizeof(float) * (long)n * out, cudaMemcpyDeviceToHost));
            cudaCheckExit(cudaMemcpy(hy2, y2, sizeof(float) * (long)n * out, cudaMemcpyDeviceToHost));
            double diff = 0, mag = 0;
            for (long i = 0; i < (long)n * out; i++) diff = fmax(diff, fabs((double)hy[i] - hy2[i])), mag = fmax(mag, fabs(hy2[i]));
            free(hy), free(hy2);
            const double tf = 2.0 * n * in * (double)out / ms * 1e-9;
            printf("stored %-4s %-22s: %8.3f ms %7.1f TFLOP/s; cuBLAS on the decoded matrix %8.3f ms -> %.2fx; "
                   "max |diff| %.3g of max |y| %.3g\n", aha_dtype_name(t), pname[p], ms, tf, ms_ref, ms / ms_ref, diff, mag);
        }
    }
    cudaFree(x), cudaFree(y), cudaFree(y2), cudaFree(tile), cudaFree(act), cudaFree(whole), cudaFree(w);
}

static void bench_gemm(int quick) {
    cublasHandle_t hb;
    cublasCheckExit(cublasCreate(&hb));
    const char *names[] = {"f32", "f16", "bf16"};
    const int sq = quick ? 4096 : 8192;
    // Buffers big enough for the square and the LM head (100352 x 2048).
    const long cap = 100352L * 2048 > (long)sq * sq ? 100352L * 2048 : (long)sq * sq;
    void *a, *b, *c;
    cudaCheckExit(cudaMalloc(&a, sizeof(float) * cap));
    cudaCheckExit(cudaMalloc(&b, sizeof(float) * cap));
    cudaCheckExit(cudaMalloc(&c, sizeof(float) * cap));
    float *ra = drandom(cap, 1);
    printf("== cuBLAS GEMM (f32 accumulate): projections of OLMo-2-1B at 4096 tokens vs %d^3 peak\n", sq);
    // Projection shapes: {n, in, out}
    const int proj[][3] = {{4096, 2048, 2048}, {4096, 2048, 8192}, {4096, 8192, 2048}, {4096, 2048, 100352}};
    const char *pname[] = {"q/k/v/o 2048x2048", "gate/up 2048->8192", "down 8192->2048", "lm_head 2048->100352"};
    for (int t = 0; t < 3; t++) {
        if (t) aha_f32_to_half_cuda(a, cap, ra, cap, 1, cap, t == 2, 0);
        if (t == 0) cudaCheckExit(cudaMemcpy(a, ra, sizeof(float) * cap, cudaMemcpyDeviceToDevice));
        cudaCheckExit(cudaMemcpy(b, a, sizeof(float) * cap, cudaMemcpyDeviceToDevice));
        float ms;
        TIME_MS(5, ms, gemm(hb, t, c, a, b, sq, sq, sq));
        const double peak = 2.0 * sq * sq * (double)sq / ms * 1e-9;
        printf("gemm %-4s square %d: %8.3f ms %8.1f TFLOP/s (the peak below)\n", names[t], sq, ms, peak);
        for (int p = 0; p < 4; p++) {
            const int n = proj[p][0], in = proj[p][1], out = proj[p][2];
            if ((long)out * in > cap || (long)n * in > cap || (long)n * out > cap) continue;
            TIME_MS(5, ms, gemm(hb, t, c, a, b, n, in, out));
            const double tf = 2.0 * n * in * (double)out / ms * 1e-9;
            printf("gemm %-4s %-22s: %8.3f ms %8.1f TFLOP/s  %5.1f%% of peak\n", names[t], pname[p], ms, tf,
                   100 * tf / peak);
        }
    }
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ra);
    bench_stored(hb, proj, pname, quick);
    cublasCheckExit(cublasDestroy(hb));
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("SKIP bench_attention_cuda: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
        return 0;
    }
    cudaDeviceProp prop;
    cudaCheckExit(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, sm_%d%d, %d SMs, %.0f GB\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, prop.totalGlobalMem / 1e9);
    cudaCheckExit(cudaEventCreate(&ev0));
    cudaCheckExit(cudaEventCreate(&ev1));
    bench_gemm(quick);
    bench_attention(quick);
    return 0;
}
