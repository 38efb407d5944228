// Recording overhead and routed-attention savings on SmolLM2-135M (or the
// model given; scripts/bench.sh runs it on Gemma-3 270M too, without 2.):
//  1. aha record (observe: dependency pass for 3 eps, 8 windows, trace writes)
//     against the plain prefill of the same tokens, in one run;
//  2. routed attention at w=128 with 10% global vs all-global, T = 2048, 8192;
//  3. trace bytes per million (layer, token, head) decisions.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attention.h"
#include "bench.h"
#include "err.h"
#include "forward.h"
#include "model.h"
#include "record.h"
#include "run.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

// Routed attention of one layer's shape: n queries after p0 cached keys.
static void bench_routed(int T, int reps) {
    const int H = 9, KV = 3, D = 64, w = 128, n = 256, p0 = T - n;
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0, 0, 0};
    float *q = malloc(sizeof(float) * n * H * D), *k = malloc(sizeof(float) * T * KV * D);
    float *v = malloc(sizeof(float) * T * KV * D), *out = malloc(sizeof(float) * n * H * D);
    uint8_t *all = malloc((size_t)n * H), *some = malloc((size_t)n * H);
    for (long i = 0; i < (long)n * H * D; i++) q[i] = frand();
    for (long i = 0; i < (long)T * KV * D; i++) k[i] = frand(), v[i] = frand();
    memset(all, 1, (size_t)n * H);
    for (int i = 0; i < n * H; i++) some[i] = (frand() + 1) * 0.5f < 0.10f;
    double tg[16], tr[16];
    for (int r = 0; r < reps; r++) {
        aha_attn_flops f = {0, 0};
        aha_route ra = {w, 0, all}, rs = {w, 0, some};
        double t0 = aha_now_s();
        aha_attention_routed(out, q, k, v, &s, n, p0, &ra, &f);
        tg[r] = aha_now_s() - t0;
        t0 = aha_now_s();
        aha_attention_routed(out, q, k, v, &s, n, p0, &rs, &f);
        tr[r] = aha_now_s() - t0;
    }
    double g = bench_median(tg, reps), x = bench_median(tr, reps);
    printf("routed     T=%-5d w=%d, last 256 queries x 9 heads: all-global %.2f ms, 10%% global "
           "%.2f ms -> %.1fx less attention time\n", T, w, 1e3 * g, 1e3 * x, g / x);
    free(q), free(k), free(v), free(out), free(all), free(some);
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    const char *data = argc > 2 ? argv[2] : "datasets/corpora/prose";
    int reps = argc > 3 ? atoi(argv[3]) : 3, ctx = 2048, n_tok = 2 * ctx;
    int routed = argc > 4 ? atoi(argv[4]) : 1; // 0: skip 2. (its shapes are SmolLM2's, not the model's)
    printf("model      %s\nthreads    %d\n", model, omp_get_max_threads());
    // 1. record vs plain prefill of the same number of tokens
    char out[] = "/tmp/aha_bench_XXXXXX";
    if (!mkdtemp(out)) return 1;
    char trace[64];
    snprintf(trace, sizeof trace, "%s/trace.h5", out);
    aha_record_opts o = {0};
    o.model = model, o.data = data, o.out = trace, o.ctx = ctx, o.batch = 256;
    o.max_tokens = n_tok, o.n_eps = 3, o.eps[0] = 0.01f, o.eps[1] = 0.05f, o.eps[2] = 0.1f;
    int ws[] = {16, 32, 64, 128, 256, 512, 1024, 2048};
    memcpy(o.windows, ws, sizeof ws);
    o.n_windows = 8, o.tau = 0.5f, o.format = "auto", o.force = 1, o.quiet = 1;
    o.mode = "observe", o.command_line = "bench_record", o.device = "cpu";
    aha_model m;
    if (aha_model_load(&m, model) != 0) {
        fprintf(stderr, "bench: %s\n", aha_errmsg());
        return 1;
    }
    aha_state st;
    aha_state_init(&st, &m, ctx, 256);
    int32_t *ids = malloc(sizeof(int32_t) * ctx);
    for (int i = 0; i < ctx; i++) ids[i] = (int32_t)((i * 7919L + 13) % m.cfg.vocab);
    double tp[16], trec[16], tload[16];
    for (int r = 0; r < reps; r++) {
        aha_model m2;
        double tl = aha_now_s();
        aha_model_load(&m2, model); // what aha_record_run spends before recording
        tload[r] = aha_now_s() - tl;
        aha_model_free(&m2);
        double t0 = aha_now_s();
        for (int c = 0; c < n_tok / ctx; c++) {
            st.n_past = 0;
            for (int i = 0; i < ctx; i += 256) aha_forward(&m, &st, ids + i, 256, 1);
        }
        tp[r] = aha_now_s() - t0;
        t0 = aha_now_s();
        int rc = aha_record_run(&o);
        trec[r] = aha_now_s() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench: %s\n", aha_errmsg());
            return 1;
        }
    }
    double p = bench_median(tp, reps), rr = bench_median(trec, reps) - bench_median(tload, reps);
    struct stat sb;
    stat(trace, &sb);
    double decisions = (double)m.cfg.n_layers * n_tok * m.cfg.n_heads;
    printf("record     %d tokens at ctx %d (3 eps, 8 windows, %s): %.1f tok/s vs plain prefill "
           "%.1f tok/s -> overhead %.0f%% (target <= 25%%; trace writes included, model load not)\n",
           n_tok, ctx, data, n_tok / rr, n_tok / p, 100 * (rr / p - 1));
    printf("trace      %.2f MB for %.3g decisions = %.2f MB per million decisions\n",
           sb.st_size / 1e6, decisions, sb.st_size / 1e6 / (decisions / 1e6));
    unlink(trace);
    rmdir(out);
    free(ids);
    aha_state_free(&st);
    aha_model_free(&m);
    // 2. routed attention
    if (routed) bench_routed(2048, reps), bench_routed(8192, reps);
    return 0;
}
