// End-to-end record throughput on the device (issue 5): a 1B-class model
// (OLMo-2-1B's dimensions: 16 layers, dim 2048, 16 heads of 128, ffn 8192,
// vocab 100352) with random weights, a 4096-token context fed in chunks of
// 512, plain and observed (6 eps + 6 windows, the record pass), the weights
// stored as bf16 (bf16 products), Q4_K (decoded a tile at a time into bf16
// products) and f32 (f32 products). Prints tokens/s per configuration.
//   build/gpu/bench_forward_cuda [--quick]   (--quick: 4 layers, 2048 tokens)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "err.h"
#include "forward.h"
#include "gpu.h"
}
#include "../frand.h"
#include "../stored_rows.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float *rnd(size_t n, float scale, float offset) {
    float *x = (float *)malloc(sizeof(float) * n);
    if (!x) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) x[i] = offset + scale * frand_next(&rng);
    return x;
}

// A random rows x cols f32 weight matrix (the handle the model holds).
static aha_weight rndw(size_t rows, size_t cols, float scale) {
    return aha_weight_f32(rnd(rows * cols, scale, 0), (int)rows, (int)cols);
}

// f in stored type t: its values rounded to bf16 (a bf16 checkpoint), or
// random blocks (a quantized one: the values do not change the speed).
static aha_weight stored(const aha_weight *f, aha_dtype t) {
    if (t == AHA_F32) return *f;
    const size_t n = (size_t)f->rows * f->cols;
    uint8_t *p = (uint8_t *)malloc(aha_dtype_bytes(t, (int64_t)n, f->cols));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    if (t == AHA_BF16)
        for (size_t i = 0; i < n; i++) {
            uint32_t b;
            memcpy(&b, (const float *)f->data + i, 4);
            const uint16_t h = (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16); // to nearest even
            memcpy(p + 2 * i, &h, 2);
        }
    else stored_rows_fill(t, p, f->rows, f->cols, &rng);
    return aha_weight_of(p, t, f->rows, f->cols);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    char why[160];
    if (!aha_gpu_available(why, sizeof why)) {
        printf("SKIP bench_forward_cuda: no CUDA device (%s)\n", why);
        return 0;
    }
    aha_model m;
    memset(&m, 0, sizeof m);
    aha_config *c = &m.cfg;
    c->arch = AHA_ARCH_OLMO2;
    c->dim = 2048, c->n_layers = quick ? 4 : 16, c->n_heads = 16, c->n_kv_heads = 16, c->head_dim = 128;
    c->ffn_dim = 8192, c->vocab = 100352, c->max_ctx = 4096, c->norm_eps = 1e-6f, c->rope_theta = 500000;
    const int dim = c->dim, hd = c->n_heads * c->head_dim, ffn = c->ffn_dim, ctx = quick ? 2048 : 4096;
    const float ws = 1.0f / sqrtf((float)dim);
    double t0 = now();
    // One set of random layer weights shared by every layer (the speed is the same).
    aha_layer L;
    memset(&L, 0, sizeof L);
    L.wq = rndw(hd, dim, ws), L.wk = rndw(hd, dim, ws), L.wv = rndw(hd, dim, ws);
    L.wo = rndw(dim, hd, ws), L.w_gate = rndw(ffn, dim, ws), L.w_up = rndw(ffn, dim, ws);
    L.w_down = rndw(dim, ffn, 1.0f / sqrtf((float)ffn));
    L.q_norm = rnd(hd, 0.1f, 1), L.k_norm = rnd(hd, 0.1f, 1);
    L.post_attn_norm = rnd(dim, 0.1f, 1), L.post_ffn_norm = rnd(dim, 0.1f, 1);
    m.layers = (aha_layer *)malloc(sizeof(aha_layer) * c->n_layers);
    for (int l = 0; l < c->n_layers; l++) m.layers[l] = L;
    m.tok_emb = rndw(c->vocab, dim, 1);
    m.lm_head = rndw(c->vocab, dim, ws);
    m.out_norm = rnd(dim, 0.1f, 1);
    m.inv_freq = (float *)malloc(sizeof(float) * 64);
    for (int i = 0; i < 64; i++) m.inv_freq[i] = powf(c->rope_theta, -2.0f * i / 128);
    printf("== forward: OLMo-2-1B shape, %d layers, random weights (made in %.1f s), context %d in chunks of 512\n",
           c->n_layers, now() - t0, ctx);
    int32_t *tokens = (int32_t *)malloc(sizeof(int32_t) * ctx);
    for (int t = 0; t < ctx; t++) tokens[t] = (int32_t)((t * 7919u) % (unsigned)c->vocab);
    const float eps[] = {0.5f, 0.2f, 0.1f, 0.05f, 0.01f, 0.001f};
    const int wins[] = {16, 32, 64, 128, 256, 1024};
    const int B = 512;
    int32_t *targets = (int32_t *)malloc(sizeof(int32_t) * ctx);
    for (int t = 0; t < ctx; t++) targets[t] = t + 1 < ctx ? tokens[t + 1] : -1;
    const aha_layer L32 = L;
    const aha_weight emb32 = m.tok_emb, head32 = m.lm_head;
    const struct { aha_dtype stored; aha_gpu_dtype dt; } configs[] = {
        {AHA_BF16, AHA_GPU_BF16}, {AHA_Q4_K, AHA_GPU_BF16}, {AHA_F32, AHA_GPU_F32}};
    for (int di = 0; di < 3; di++) {
        const aha_dtype st = configs[di].stored;
        aha_weight *mats[] = {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
        const aha_weight *mats32[] = {&L32.wq, &L32.wk, &L32.wv, &L32.wo, &L32.w_gate, &L32.w_up, &L32.w_down};
        for (int i = 0; i < 7; i++) *mats[i] = stored(mats32[i], st);
        for (int l = 0; l < c->n_layers; l++) m.layers[l] = L;
        m.tok_emb = stored(&emb32, st), m.lm_head = stored(&head32, st);
        char label[32];
        snprintf(label, sizeof label, "%s/%s", aha_dtype_name(st), aha_gpu_dtype_name(configs[di].dt));
        t0 = now();
        aha_gpu_model *w = aha_gpu_model_init(&m, configs[di].dt);
        aha_gpu *g = w ? aha_gpu_init(w, ctx, B) : NULL;
        if (!g) { printf("init failed: %s\n", aha_errmsg()); return 1; }
        const double t_up = now() - t0;
        for (int observe = 0; observe < 2; observe++) {
            // As aha record drives it: chunk b submitted, chunk b - 1 collected.
            aha_probe p;
            memset(&p, 0, sizeof p);
            p.eps = eps, p.n_eps = 6, p.werr_windows = wins, p.n_werr = 6, p.sinks = 4;
            for (int rep = 0; rep < 2; rep++) { // first pass warms up
                aha_gpu_reset(g, ctx);
                t0 = now();
                aha_call_out out;
                for (int t = 0; t <= ctx; t += B) {
                    aha_call call = {observe ? &p : NULL, !observe, 0, observe ? targets + t : NULL};
                    if ((t < ctx && aha_gpu_submit(g, tokens + t, B, &call, NULL)) || (t && aha_gpu_collect(g, &out))) {
                        printf("forward failed: %s\n", aha_errmsg());
                        return 1;
                    }
                }
                const double dt = now() - t0;
                if (rep)
                    printf("forward %-9s %-34s: %8.1f tokens/s  (%.2f s for %d tokens; upload %.1f s)\n",
                           label, observe ? "record (6 eps + 6 windows + nll)" : "plain", ctx / dt, dt, ctx, t_up);
            }
        }
        aha_gpu_free(g);
        aha_gpu_model_free(w);
        for (int i = 0; st != AHA_F32 && i < 7; i++) free((void *)mats[i]->data);
        if (st != AHA_F32) free((void *)m.tok_emb.data), free((void *)m.lm_head.data);
    }
    return 0;
}
