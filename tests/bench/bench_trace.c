// Trace writer benchmark on a SmolLM2-135M-shaped trace (30 layers, 9
// heads): dependency distances for 4 eps, learned-router gates and logits,
// one full run. Prints the file size per million (layer, token, head)
// decisions, per dataset, and the append and close throughput.
//
//   bench_trace [DIR] [TOKENS] [DOC_LEN]     defaults: /tmp 262144 2048
//
// The values are synthetic but shaped like real ones: per head a share of
// "global" tokens whose distance is spread over the whole context, the rest
// near the query (geometric, mean ~6), distances growing as eps shrinks.
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "trace.h"

enum { L = 30, H = 9, N_EPS = 4 };

static uint64_t rng = 88172645463325252ull;
static double urand(void) { // xorshift64
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); } // all threads

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    int64_t total = argc > 2 ? atoll(argv[2]) : 262144;
    int n = argc > 3 ? atoi(argv[3]) : 2048;
    static const double eps[N_EPS] = {0.5, 0.1, 0.05, 0.01};
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_trace_%d.h5", dir, (int)getpid());
    aha_trace_meta m = {.model_path = "SmolLM2-135M (synthetic)",
                        .arch = "llama",
                        .n_layers = L,
                        .n_heads = H,
                        .n_kv_heads = 3,
                        .head_dim = 64,
                        .vocab = 49152,
                        .aha = 1,
                        .router = "learned",
                        .tau = 0.5f,
                        .eps = eps,
                        .n_eps = N_EPS,
                        .mode = "observe",
                        .dataset = "synthetic",
                        .command_line = "bench_trace",
                        .text_width = 8, .source_width = 1};
    size_t cells = (size_t)L * n * H;
    int32_t *tokens = malloc((size_t)n * sizeof *tokens);
    const char **text = malloc((size_t)n * sizeof *text);
    uint8_t *gate = malloc(cells);
    float *logit = malloc(cells * sizeof *logit), *nll = malloc((size_t)n * sizeof *nll),
          *kl = calloc((size_t)n, 4);
    uint32_t *dep = malloc(N_EPS * cells * sizeof *dep);
    static const char *pieces[] = {"the", " of", " and", "ing", " a", ".", "\n", " model"};
    aha_trace *t = NULL;
    if (aha_trace_create(&t, path, &m, 1) < 0 || aha_trace_add_run(t, "full", "global", 0) < 0) {
        fprintf(stderr, "bench_trace: %s\n", aha_errmsg());
        return 1;
    }
    double t_app = 0, c_app = 0, worst = 0;
    int64_t docs = 0;
    for (int64_t done = 0; done < total; done += n, docs++) {
        for (int i = 0; i < n; i++) {
            tokens[i] = (int32_t)(urand() * 49152);
            text[i] = pieces[tokens[i] % 8];
            nll[i] = i == n - 1 ? NAN : (float)(urand() * 6);
        }
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                double p_global = 0.05 + 0.45 * ((l * H + h) % 10) / 10.0;
                for (int i = 0; i < n; i++) {
                    size_t c = ((size_t)l * n + i) * H + h;
                    double d = urand() < p_global ? 1 + floor(urand() * (i + 1))
                                                  : 1 + floor(-6 * log(1 - urand()));
                    for (int e = 0; e < N_EPS; e++) {
                        d = fmin(d + (e ? floor(-2 * e * log(1 - urand())) : 0), i + 1);
                        dep[e * cells + c] = (uint32_t)d;
                    }
                    logit[c] = (float)(log(dep[1 * cells + c]) - 4 + urand());
                    gate[c] = logit[c] > 0;
                }
            }
        aha_trace_run_doc run = {.nll = nll, .kl = kl, .flops_executed = 1, .flops_full = 1};
        aha_trace_doc d = {.n = n,
                           .source = "",
                           .sha256 = "",
                           .tokens = tokens,
                           .token_text = text,
                           .gate = gate,
                           .router_logit = logit,
                           .dep = dep,
                           .runs = &run};
        double t1 = now(), c1 = cpu();
        if (aha_trace_append(t, &d) < 0) {
            fprintf(stderr, "bench_trace: %s\n", aha_errmsg());
            return 1;
        }
        double t2 = now();
        t_app += t2 - t1, c_app += cpu() - c1, worst = fmax(worst, t2 - t1);
    }
    double t3 = now();
    if (aha_trace_close(t) < 0) {
        fprintf(stderr, "bench_trace: %s\n", aha_errmsg());
        return 1;
    }
    double t_close = now() - t3;
    int64_t T = docs * n;
    double decisions = (double)T * L * H;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hsize_t fsize = 0;
    H5Fget_filesize(f, &fsize);
    printf("trace      %" PRId64
           " docs x %d tokens, L=%d H=%d: %.1f MB, %.0f bytes per 1e6 (layer, token, head) "
           "decisions\n",
           docs, n, L, H, fsize / 1e6, fsize / decisions * 1e6);
    static const char *names[] = {"dependency/eps_0.5",
                                  "dependency/eps_0.1",
                                  "dependency/eps_0.05",
                                  "dependency/eps_0.01",
                                  "gate",
                                  "router_logit",
                                  "tokens",
                                  "token_text"};
    for (int i = 0; i < 8; i++) {
        hid_t d = H5Dopen2(f, names[i], H5P_DEFAULT);
        double per = (double)H5Dget_storage_size(d) / decisions * 1e6;
        printf("trace        %-20s %9.0f bytes per 1e6 decisions (%.2f bits each)\n", names[i], per,
               per * 8e-6);
        H5Dclose(d);
    }
    H5Fclose(f);
    printf("trace      append %.0f tokens/s (%.1f ms per %d-token doc, worst %.1f ms; %.0f tokens per "
           "CPU second); close %.2f s (%.0f tokens/s)\n",
           T / t_app, 1e3 * t_app / docs, n, 1e3 * worst, T / c_app, t_close, T / t_close);
    unlink(path);
    free(tokens), free(text), free(gate), free(logit), free(nll), free(kl), free(dep);
    return 0;
}
