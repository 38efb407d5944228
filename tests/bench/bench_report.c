// aha report benchmark: the analysis pass (aha_stats_gather + the JSON
// report) over a SmolLM2-135M-shaped trace of about 1e9 (layer, token, head)
// decisions: 30 layers x 9 heads x 3.7M tokens, one eps, learned gates.
//
//   bench_report [TRACE] [TOKENS]     defaults: /tmp/aha_bench_report.h5 3704064
//
// TRACE is written by the trace writer when it does not exist (minutes; it
// is kept for the next run). Prints decisions per second and peak memory.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "report.h"
#include "report_schema.h"
#include "trace.h"

enum { L = 30, H = 9, DOC = 2048 };

static uint64_t rng = 88172645463325252ull;
static double urand(void) { // xorshift64
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Synthetic values shaped like real ones: per head a share of "global"
// tokens whose distance spreads over the context, the rest near the query.
static int generate(const char *path, int64_t total) {
    static const double eps[1] = {0.01};
    static const int windows[] = {16, 32, 64, 128, 256, 512, 1024};
    aha_trace_meta m = {.model_path = "SmolLM2-135M (synthetic)", .arch = "llama", .n_layers = L, .n_heads = H,
                        .n_kv_heads = 3, .head_dim = 64, .vocab = 49152, .aha = 1, .router = "learned", .tau = 0.5f,
                        .eps = eps, .n_eps = 1, .windows = windows, .n_windows = 7, .mode = "observe",
                        .dataset = "synthetic", .command_line = "bench_report", .text_width = 8, .source_width = 1};
    size_t cells = (size_t)L * DOC * H;
    int32_t *tokens = calloc(DOC, sizeof *tokens);
    const char **text = calloc(DOC, sizeof *text);
    uint8_t *gate = malloc(cells);
    float *logit = malloc(cells * sizeof *logit), *nll = calloc(DOC, sizeof *nll), *kl = calloc(DOC, sizeof *kl);
    uint32_t *dep = malloc(cells * sizeof *dep);
    aha_trace *t = NULL;
    if (!tokens || !text || !gate || !logit || !nll || !kl || !dep || aha_trace_create(&t, path, &m, 1) < 0 ||
        aha_trace_add_run(t, "full", "global", 0) < 0)
        return -1;
    for (int i = 0; i < DOC; i++) text[i] = "tok";
    for (int64_t done = 0; done < total; done += DOC) {
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                double p_global = 0.05 + 0.45 * ((l * H + h) % 10) / 10.0;
                for (int i = 0; i < DOC; i++) {
                    size_t c = ((size_t)l * DOC + i) * H + h;
                    double d = urand() < p_global ? 1 + floor(urand() * (i + 1)) : 1 + floor(-6 * log(1 - urand()));
                    dep[c] = (uint32_t)fmin(d, i + 1);
                    logit[c] = (float)(log(dep[c]) - 4 + urand());
                    gate[c] = logit[c] > 0;
                }
            }
        aha_trace_run_doc run = {.nll = nll, .kl = kl, .flops_executed = 1, .flops_full = 1};
        aha_trace_doc d = {.n = DOC, .source = "", .sha256 = "", .tokens = tokens, .token_text = text, .gate = gate, .router_logit = logit,
                           .dep = dep, .runs = &run};
        if (aha_trace_append(t, &d) < 0) return -1;
    }
    free(tokens), free(text), free(gate), free(logit), free(nll), free(kl), free(dep);
    return aha_trace_close(t);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/tmp/aha_bench_report.h5";
    int64_t total = argc > 2 ? atoll(argv[2]) : 1809 * DOC; // 30 * 9 * 3704832 = 1.0003e9
    if (access(path, F_OK) != 0) {
        double t0 = now();
        if (generate(path, total) != 0) {
            fprintf(stderr, "bench_report: %s\n", aha_errmsg());
            return 1;
        }
        printf("report     wrote %s in %.0f s\n", path, now() - t0);
    }
    double t0 = now();
    cJSON *rep = aha_report_load(&path, 1, 0, 0);
    if (!rep) {
        fprintf(stderr, "bench_report: %s\n", aha_errmsg());
        return 1;
    }
    double dt = now() - t0;
    double decisions = rep_num(rep_at(rep, RF_REPORT_TRACES, 0), RF_TRACE_DECISIONS);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("report     %.3g decisions (d_eps + learned gate) in %.2f s: %.0f M decisions/s, peak RSS %.0f MB\n",
           decisions, dt, decisions / dt / 1e6, ru.ru_maxrss / 1024.0);
    cJSON_Delete(rep);
    return 0;
}
