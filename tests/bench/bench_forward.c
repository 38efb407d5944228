// Prefill and decode speed of the CPU forward pass, against the limits of
// this machine measured in the same run: a large sgemm (compute bound) and a
// streaming read (memory bound). Prints medians; see scripts/bench.sh.
// Usage: bench_forward [model.gguf] [reps=3] [all|last=all] [warmup=0]
// [stored|f32=stored] [f32|bf16=f32] [ctxs=512,2048] (--weights: matrices in their stored type, or converted;
// then the products' dtype, bf16 as --dtype bf16 runs them; the contexts, multiples of 256); "last"
// computes the lm_head for the last token of each prefill batch only, the
// work llama-bench's pp test does; warmup 1 runs one untimed prefill and
// decode step per ctx first, as llama-bench does by default
// (scripts/bench-peers.sh); ctxs: the contexts prefilled, 1 to 4 multiples of
// 256 (scripts/bench-peers-long.sh runs one long one per call).
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "blas_core.h"
#include "cpu_bf16.h"
#include "err.h"
#include "forward.h"
#include "model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double sgemm_gflops(int reps) {
    const int n = 2048;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    for (long i = 0; i < (long)n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f;
    double t[16];
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        t[r] = now_s() - t0;
    }
    free(a), free(b), free(c);
    return 2.0 * n * n * n / bench_median(t, reps) / 1e9;
}

static double read_gbps(int reps) { // streaming read of 1 GiB, all threads
    size_t n = (size_t)1 << 28;
    float *x = malloc(n * sizeof(float));
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) x[i] = 1.0f;
    double t[16];
    volatile float sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        float s = 0;
        // simd: let the sum vectorise so the loop is bound by memory, not adds
#pragma omp parallel for simd reduction(+ : s)
        for (size_t i = 0; i < n; i++) s += x[i];
        t[r] = now_s() - t0;
        sink += s;
    }
    free(x);
    return n * sizeof(float) / bench_median(t, reps) / 1e9;
}

// FLOPs of a forward over T new tokens after p0 cached ones: matmuls + attention
// (a natively local layer reads at most its window of keys); the lm_head over
// n_logits of them. A mixture-of-experts layer's MLP: its router, the
// n_experts_used experts a token goes to (not all n_experts), the shared expert.
// *attn_flops (if not NULL): the attention's part, QK^T and PV.
static double forward_flops(const aha_model *m, int p0, int T, int n_logits, double *attn_flops) {
    const aha_config *c = &m->cfg;
    double hd = (double)c->n_heads * c->head_dim, kvd = (double)c->n_kv_heads * c->head_dim;
    double per_tok = 0, attn = 0;
    for (int l = 0; l < c->n_layers; l++) {
        per_tok += 2.0 * c->dim * (hd + (c->aha ? c->n_heads : 0) + 2 * kvd + hd);
        if (c->n_experts && c->layer_moe[l])
            per_tok += 2.0 * c->dim * (c->n_experts + 3.0 * c->n_experts_used * c->moe_ffn_dim +
                                       (c->shared_ffn_dim ? 3.0 * c->shared_ffn_dim + 1 : 0));
        else
            per_tok += 2.0 * 3 * c->dim * c->ffn_dim;
        for (int t = p0; t < p0 + T; t++) {
            int w = m->layers[l].window, keys = w && w < t + 1 ? w : t + 1;
            attn += 4.0 * hd * keys; // QK^T and PV
        }
    }
    if (attn_flops) *attn_flops = attn;
    return per_tok * T + attn + 2.0 * c->dim * c->vocab * n_logits;
}

// Weight bytes a decode step must read: all but the experts, and of those
// the n_experts_used of n_experts one token goes to.
static double decode_weight_bytes(const aha_model *m) {
    const aha_config *c = &m->cfg;
    double experts = 0;
    for (long i = 0; m->experts && i < (long)c->n_layers * 3 * c->n_experts; i++)
        experts += (double)m->experts[i].rows * m->experts[i].row_bytes;
    double all = (double)m->mapped_bytes + (double)m->converted_bytes;
    return all - experts + (c->n_experts ? experts * c->n_experts_used / c->n_experts : 0);
}

// "512,2048": at most max contexts, each a positive multiple of 256; their count, or -1.
static int parse_ctxs(const char *s, int *ctxs, int max) {
    int n = 0;
    char *end;
    do {
        long v = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || v < 256 || v > (1 << 20) || v % 256 || n == max) return -1;
        ctxs[n++] = (int)v;
        s = end + 1;
    } while (*end);
    return n;
}

// One prefill of ids[0..ctx) from an empty cache, batch tokens per call: 0, or
// -1 with the error printed.
static int prefill(const aha_model *m, aha_state *s, const int32_t *ids, int ctx, int batch, int all_logits) {
    s->n_past = 0;
    for (int i = 0; i < ctx; i += batch)
        if (aha_forward(m, s, ids + i, batch, all_logits) != 0) {
            fprintf(stderr, "bench: %s\n", aha_errmsg());
            return -1;
        }
    return 0;
}

int main(int argc, char **argv) {
    const char *core = aha_blas_core_wanted(); // as ./aha does (common/blas_core.h)
    if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0) execv("/proc/self/exe", argv);
    const char *path = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    const char *logits = argc > 3 ? argv[3] : "all";
    int all_logits = strcmp(logits, "all") == 0, warmup = argc > 4 ? atoi(argv[4]) : 0;
    aha_weights how = AHA_WEIGHTS_STORED;
    const char *dtype = argc > 6 ? argv[6] : "f32";
    const int bf16 = !strcmp(dtype, "bf16");
    int ctxs[8];
    const int n_ctx = parse_ctxs(argc > 7 ? argv[7] : "512,2048", ctxs, 8);
    if ((!all_logits && strcmp(logits, "last") != 0) || reps < 1 || reps > 16 ||
        (warmup != 0 && warmup != 1) || (argc > 5 && aha_enum_parse(&aha_weights_names, "weights", argv[5], (int *)&how) != 0) ||
        (!bf16 && strcmp(dtype, "f32") != 0) || n_ctx < 1) {
        fprintf(stderr, "usage: bench_forward [model.gguf] [reps=3, 1..16] [all|last=all] [warmup=0|1] "
                        "[stored|f32=stored] [f32|bf16=f32] [ctxs=512,2048: at most 8, multiples of 256]\n");
        return 1;
    }
    aha_model host;
    aha_cpu_bf16 b16 = {0};
    if (aha_model_load_as(&host, path, how) != 0 || (bf16 && aha_cpu_bf16_init(&b16, &host) != 0)) {
        fprintf(stderr, "bench: %s\n", aha_errmsg());
        return 1;
    }
    aha_model m = bf16 ? b16.model : host; // bf16: the host model with bf16 matrices
    const aha_config *c = &m.cfg;
    printf("model      %s (%.1fM params; --weights %s: %.0f MiB mapped in the stored type, %.0f MiB f32)\n",
           path, m.n_params / 1e6, aha_weights_name(how), m.mapped_bytes / 1048576.0, m.converted_bytes / 1048576.0);
    printf("threads    %d (OpenMP), BLAS %s, core %s\n", omp_get_max_threads(), openblas_get_config(),
           openblas_get_corename());
    printf("logits     %s\n", all_logits ? "every prompt token (the lm_head over all of them)"
                                          : "last token of each 256-token prefill batch only");
    printf("warmup     %s\n", warmup ? "one untimed prefill and decode step per ctx" : "none");
    printf("dtype      %s\n", bf16 ? aha_mm_bf16_describe(b16.mm) : "f32");
    printf("work       %.2f GFLOP a token in the layers", forward_flops(&m, 0, 1, 0, NULL) / 1e9);
    if (c->n_experts) printf(" (its %d of %d experts)", c->n_experts_used, c->n_experts);
    printf(", %.2f GFLOP a token's logits\n", 2.0 * c->dim * c->vocab / 1e9);
    // The limits (a 2048^3 sgemm, a 1 GiB read) are measured after the runs,
    // so the peak RSS is aha's alone: the big sgemm leaves OpenBLAS's
    // buffers resident beyond what aha's products touch (24 MiB on SmolLM2).
    double tpm[8], tdm[8], gf[8], bytes[8], attn[8], total[8];
    int ctx_max = 0;
    for (int ci = 0; ci < n_ctx; ci++) {
        int ctx = ctxs[ci], batch = 256, decode = 32;
        aha_state s;
        if (aha_state_init(&s, &m, ctx, batch) != 0) return 1;
        s.bf16 = b16.mm; // NULL for f32
        int32_t *ids = malloc(sizeof(int32_t) * ctx);
        for (int i = 0; i < ctx; i++) ids[i] = (int32_t)((i * 7919L + 13) % c->vocab);
        double tp[16], td[16];
        if (warmup) {
            if (prefill(&m, &s, ids, ctx, batch, all_logits) != 0) return 1;
            s.n_past = ctx - 1;
            aha_forward(&m, &s, ids, 1, 0);
        }
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            if (prefill(&m, &s, ids, ctx, batch, all_logits) != 0) return 1;
            tp[r] = now_s() - t0;
            // decode the last tokens of the context one at a time
            s.n_past = ctx - decode;
            t0 = now_s();
            for (int i = 0; i < decode; i++) aha_forward(&m, &s, ids + i, 1, 0);
            td[r] = (now_s() - t0) / decode;
        }
        tpm[ci] = bench_median(tp, reps), tdm[ci] = bench_median(td, reps);
        total[ci] = forward_flops(&m, 0, ctx, all_logits ? ctx : ctx / batch, &attn[ci]);
        gf[ci] = total[ci] / tpm[ci] / 1e9;
        // bytes a decode step must read: every weight it uses once plus the KV cache
        bytes[ci] = decode_weight_bytes(&m) + 2.0 * c->n_layers * ctx * c->n_kv_heads * c->head_dim * sizeof(float);
        if (ctx > ctx_max) ctx_max = ctx;
        free(ids);
        aha_state_free(&s);
    }
    char line[256];
    long hwm_kb = -1;
    FILE *st = fopen("/proc/self/status", "r");
    while (st && fgets(line, sizeof line, st))
        if (sscanf(line, "VmHWM: %ld kB", &hwm_kb) == 1) break;
    if (st) fclose(st);
    double peak = sgemm_gflops(5), bw = read_gbps(5);
    printf("limits     sgemm 2048^3: %.1f GFLOP/s; streaming read: %.1f GB/s (measured after the runs)\n", peak, bw);
    for (int ci = 0; ci < n_ctx; ci++) {
        const double dec_limit = bw * 1e9 / bytes[ci];
        printf("ctx %-5d  prefill %7.1f tok/s  %6.1f GFLOP/s = %3.0f%% of sgemm | decode %6.1f tok/s"
               " = %3.0f%% of the %.1f tok/s bandwidth limit\n",
               ctxs[ci], ctxs[ci] / tpm[ci], gf[ci], 100 * gf[ci] / peak, 1 / tdm[ci], 100 / tdm[ci] / dec_limit,
               dec_limit);
        printf("ctx %-5d  FLOPs %.1f G, of which attention (QK^T and PV) %.1f G = %.1f%%\n", ctxs[ci],
               total[ci] / 1e9, attn[ci] / 1e9, 100 * attn[ci] / total[ci]);
    }
    FILE *mf = fopen(path, "rb");
    double file = 0, kv = 2.0 * c->n_layers * ctx_max * c->n_kv_heads * c->head_dim * sizeof(float);
    if (mf && fseek(mf, 0, SEEK_END) == 0) file = (double)ftell(mf);
    if (mf) fclose(mf);
    printf("peak RSS   %.0f MiB (model + ctx-%d state; %.0f MiB of it converted to f32 at load) = %.2fx of "
           "file %.0f MiB + KV cache %.0f MiB\n",
           hwm_kb / 1024.0, ctx_max, m.converted_bytes / 1048576.0, hwm_kb * 1024.0 / (file + kv), file / 1048576.0,
           kv / 1048576.0);
    if (bf16) printf("bf16       %.0f MiB of bf16 copies of the matrices\n", b16.bytes / 1048576.0);
    aha_cpu_bf16_free(&b16);
    aha_model_free(&host);
    return 0;
}
