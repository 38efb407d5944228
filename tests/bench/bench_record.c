// Recording overhead and routed-attention savings on SmolLM2-135M (or the
// model given; scripts/bench.sh runs it at ctx 512 and 2048, and on Gemma-3
// 270M, with ROUTED 0: 1. only):
//  1. aha record (observe: dependency pass for 3 eps, 8 windows, trace writes)
//     against the plain prefill of the same contexts (same ids, same ctx, same
//     256-token chunks, NLL of every token in both), interleaved, in one run;
//  2. routed attention at w=128 with 10% global vs all-global, T = 2048, 8192;
//  3. trace bytes per million (layer, token, head) decisions;
//  4. the dependency pass alone, one row at a time against 16-row groups;
//  5. what the trace's Fletcher-32 checksums cost: aha record with and
//     without them (trace_codec_checksum), interleaved with 1.: time and size.
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attention.h"
#include "bench.h"
#include "blas_core.h"
#include "dataset.h"
#include "dependency.h"
#include "err.h"
#include "forward.h"
#include "model.h"
#include "record.h"
#include "run.h"
#include "trace_codec.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

// Routed attention of one layer's shape: n queries after p0 cached keys.
static void bench_routed(int T, int reps) {
    const int H = 9, KV = 3, D = 64, w = 128, n = 256, p0 = T - n;
    aha_attn_shape s = {H, KV, D, H * D, KV * D, 0, 0, 0, 0};
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

// The first n_tok ids of the dataset's documents (each as aha record reads
// it: BOS included), concatenated into one token file of one document, so that
// record cuts it into contexts of exactly ctx tokens. 0, or -1 with an error.
static int write_ids(const aha_model *m, const char *data, int n_tok, const char *path, int32_t *ids) {
    aha_dataset *ds;
    aha_ds_opts dso = {.format = AHA_DS_AUTO};
    if (aha_ds_open(&ds, data, &dso) != 0) return -1;
    aha_doc doc;
    int have = 0, more;
    while (have < n_tok && (more = aha_ds_next(ds, &doc)) == 1) {
        int32_t *d;
        size_t n;
        if (aha_doc_ids(m, &doc, &d, &n) != 0) break;
        for (size_t i = 0; i < n && have < n_tok; i++) ids[have++] = d[i];
        free(d);
    }
    aha_ds_close(ds);
    if (have < n_tok) {
        aha_err("%s: %d tokens, the bench needs %d", data, have, n_tok);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    uint64_t docs = 1;
    uint32_t n = (uint32_t)n_tok;
    int ok = f && fwrite("AHATOK01", 8, 1, f) == 1 && fwrite(&docs, 8, 1, f) == 1 && fwrite(&n, 4, 1, f) == 1 &&
             fwrite(ids, 4, (size_t)n_tok, f) == (size_t)n_tok;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) aha_err("%s: cannot write the bench's token file", path);
    return ok ? 0 : -1;
}

// What aha ppl does on the same contexts: one run, the same 256-token chunks,
// every token's logits and NLL (record computes them for its quality columns).
static int plain_prefill(aha_run *run, const int32_t *ids, int n_tok, int ctx, int32_t *targets) {
    for (int c0 = 0; c0 < n_tok; c0 += ctx) {
        const int T = n_tok - c0 < ctx ? n_tok - c0 : ctx;
        for (int t = 0; t < T; t++) targets[t] = c0 + t + 1 < n_tok ? ids[c0 + t + 1] : -1;
        aha_run_reset(run, T);
        for (int b0 = 0; b0 < T; b0 += 256) {
            aha_call c = {.targets = targets + b0};
            aha_call_out out;
            if (aha_run_step(run, ids + c0 + b0, T - b0 < 256 ? T - b0 : 256, &c, &out) != 0) return -1;
        }
    }
    return 0;
}

// CPU seconds of the process so far (every thread's, the trace writer's too).
static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// aha record with o into o->out, its summary lines silenced (they are not the
// bench's): wall and CPU seconds into *t and *c, the trace's bytes into *bytes.
static int record_once(const aha_record_opts *o, double *t, double *c, double *bytes) {
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) dup2(null, 1);
    double t0 = aha_now_s(), c0 = cpu_s();
    int rc = aha_record_run(o);
    *t = aha_now_s() - t0, *c = cpu_s() - c0;
    fflush(stdout);
    if (saved >= 0 && null >= 0) dup2(saved, 1);
    if (saved >= 0) close(saved);
    if (null >= 0) close(null);
    struct stat sb;
    *bytes = stat(o->out, &sb) == 0 ? (double)sb.st_size : 0;
    if (rc != 0) fprintf(stderr, "bench: %s\n", aha_errmsg());
    return rc;
}

// Seconds trace_fletcher32 takes over n bytes (a median, 1 MiB at a time):
// the writer sums each stored chunk once, and a chunk it compresses on close
// once more.
static double fletcher_s(double n) {
    enum { MB = 1 << 20 };
    unsigned char *b = malloc(MB);
    double t[9];
    volatile uint32_t sink = 0; // the sums are not optimised away
    for (int i = 0; i < MB; i++) b[i] = (unsigned char)(i * 2654435761u >> 24);
    for (int r = 0; r < 9; r++) {
        double t0 = aha_now_s();
        sink ^= trace_fletcher32(b, MB);
        t[r] = aha_now_s() - t0;
    }
    free(b);
    return bench_median(t, 9) * n / MB;
}

static double load_avg(void) {
    double x = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &x) != 1) x = -1;
    if (f) fclose(f);
    return x;
}

// The dependency pass alone (3 eps, 4 sinks) on 256 rows of T keys shaped
// as a real head's: 10% on the sinks, 85% decaying over the last ~64 keys,
// 5% spread over the whole row, so the running sum crosses eps 0.1 only near
// the query and the pass reads almost every key, as it does on real text. One
// row at a time (aha_dependency) against 16-row groups (aha_dependency_rows,
// what aha_attention runs), one thread; their numbers must be equal.
static int bench_dep(int T, int reps) {
    const int n = 256, t0 = T - n, sinks = 4;
    float *p = malloc(sizeof(float) * (size_t)n * T);
    uint32_t *d1 = malloc(sizeof(uint32_t) * 3 * n), *d2 = malloc(sizeof(uint32_t) * 3 * n);
    for (int i = 0; i < n; i++) {
        float *row = p + (long)i * T;
        double sum = 0, rec = 0;
        for (int j = 0; j <= t0 + i; j++) rec += exp(-(t0 + i - j) / 64.0);
        for (int j = 0; j < T; j++) {
            double x = j > t0 + i ? 0
                     : (j < sinks ? 0.1 / sinks : 0) + 0.85 * exp(-(t0 + i - j) / 64.0) / rec +
                           0.05 * (frand() + 1) / (t0 + i + 1);
            row[j] = (float)x, sum += x;
        }
        for (int j = 0; j < T; j++) row[j] = (float)(row[j] / sum);
    }
    const float eps[3] = {0.01f, 0.05f, 0.1f};
    double t1[16], t2[16];
    for (int r = 0; r < reps; r++) {
        double t = aha_now_s();
        for (int i = 0; i < n; i++) {
            uint32_t d[3];
            aha_dependency(p + (long)i * T, t0 + i, sinks, eps, 3, d);
            for (int e = 0; e < 3; e++) d1[e * n + i] = d[e];
        }
        t1[r] = aha_now_s() - t;
        t = aha_now_s();
        aha_dependency_rows(p, T, n, t0, sinks, eps, 3, d2, n, 1);
        t2[r] = aha_now_s() - t;
    }
    int same = !memcmp(d1, d2, sizeof(uint32_t) * 3 * n);
    double a = bench_median(t1, reps), b = bench_median(t2, reps);
    printf("dep pass   256 rows of %d keys (3 eps, 4 sinks, one thread): one row at a time %.2f ms, 16-row groups "
           "%.2f ms -> %.1fx faster, d_eps %s (median of %d, load average %.1f)\n", T, 1e3 * a, 1e3 * b, a / b,
           same ? "identical" : "DIFFER", reps, load_avg());
    free(p), free(d1), free(d2);
    return same ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *core = aha_blas_core_wanted(); // as ./aha does (common/blas_core.h)
    if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0) execv("/proc/self/exe", argv);
    const char *model = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    const char *data = argc > 2 ? argv[2] : "datasets/corpora/prose";
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    int routed = argc > 4 ? atoi(argv[4]) : 1; // 0: only 1. (2. and 4. have SmolLM2's shapes, not the model's)
    int ctx = argc > 5 ? atoi(argv[5]) : 2048, n_tok = argc > 6 ? atoi(argv[6]) : 4096;
    if (reps < 1 || reps > 16 || ctx < 256 || ctx % 256 || n_tok < 0 || n_tok % ctx) {
        fprintf(stderr, "usage: bench_record [MODEL] [DATA] [REPS 1..16, 3] [ROUTED 0|1, 1] [CTX, a multiple of "
                        "256, 2048] [N_TOK, a multiple of CTX, 4096; 0: only the dependency pass line]\n");
        return 1;
    }
    if (n_tok == 0) {
        return bench_dep(ctx, reps);
    }
    printf("model      %s\nthreads    %d\n", model, omp_get_max_threads());
    // 1. record vs plain prefill of the same contexts: the dataset's first
    // n_tok tokens as one token file, so both see n_tok / ctx full contexts.
    char dir[] = "/tmp/aha_bench_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char trace[64], tok[64];
    snprintf(trace, sizeof trace, "%s/trace.h5", dir);
    snprintf(tok, sizeof tok, "%s/ids.tok", dir);
    aha_model m;
    aha_backend be;
    aha_run run;
    int32_t *ids = malloc(sizeof(int32_t) * n_tok), *targets = malloc(sizeof(int32_t) * ctx);
    if (aha_model_load(&m, model) != 0 || write_ids(&m, data, n_tok, tok, ids) != 0 ||
        aha_ctx_resolve(&m, &ctx, ctx) != 0 || aha_backend_init(&be, &m, "cpu", NULL) != 0 ||
        aha_run_init(&run, &be, ctx, 256) != 0) {
        fprintf(stderr, "bench: %s\n", aha_errmsg());
        return 1;
    }
    aha_record_opts o = {.s = AHA_RUN_SETTINGS_DEFAULT};
    o.s.model = model, o.s.data = tok, o.out = trace, o.s.ctx = ctx;
    o.n_eps = 3, o.eps[0] = 0.01f, o.eps[1] = 0.05f, o.eps[2] = 0.1f;
    int ws[] = {16, 32, 64, 128, 256, 512, 1024, 2048};
    memcpy(o.windows, ws, sizeof ws);
    o.n_windows = 8, o.tau = 0.5f, o.force = 1, o.quiet = 1;
    o.mode = AHA_MODE_OBSERVE, o.command_line = "bench_record", o.device = "cpu";
    double tp[16], trec[16], tload[16], cp[16], crec[16], cload[16], tnos[16], cnos[16], bsum = 0, bnos = 0,
           la0 = load_avg();
    for (int r = 0; r < reps; r++) { // interleaved, so both see the same load
        aha_model m2;
        double tl = aha_now_s(), cl = cpu_s();
        aha_model_load(&m2, model); // what aha_record_run spends before recording
        tload[r] = aha_now_s() - tl, cload[r] = cpu_s() - cl;
        aha_model_free(&m2);
        double t0 = aha_now_s(), c0 = cpu_s();
        if (plain_prefill(&run, ids, n_tok, ctx, targets) != 0) {
            fprintf(stderr, "bench: %s\n", aha_errmsg());
            return 1;
        }
        tp[r] = aha_now_s() - t0, cp[r] = cpu_s() - c0;
        for (int k = 0; k < 2; k++) { // 5.: with checksums (what aha writes) and without, in turns first
            trace_codec_checksum = (k + r) % 2;
            int rc = trace_codec_checksum ? record_once(&o, &trec[r], &crec[r], &bsum)
                                          : record_once(&o, &tnos[r], &cnos[r], &bnos);
            trace_codec_checksum = 1;
            if (rc != 0) return 1;
        }
    }
    double p = bench_median(tp, reps), rr = bench_median(trec, reps) - bench_median(tload, reps);
    // CPU seconds too: on a shared machine they move less than the wall clock
    double pc = bench_median(cp, reps), rc = bench_median(crec, reps) - bench_median(cload, reps);
    struct stat sb;
    stat(trace, &sb);
    double rn = bench_median(tnos, reps) - bench_median(tload, reps);
    double cn = bench_median(cnos, reps) - bench_median(cload, reps);
    printf("checksums  Fletcher-32 on every chunk of the trace: aha record %.3f s vs %.3f s without -> %+.2f%% "
           "record time, CPU %+.2f%% (target <= 3%%; model load not included); trace %.0f vs %.0f bytes -> %+.2f%% "
           "(medians of %d, interleaved, each first in turn)\n",
           rr, rn, 100 * (rr / rn - 1), 100 * (rc / cn - 1), bsum, bnos, 100 * (bsum / bnos - 1), reps);
    double fl = fletcher_s(bsum); // what the sums alone cost, free of the machine's noise
    printf("checksums  Fletcher-32 itself over the trace's %.0f bytes: %.2f ms = %.3f%% of the record time\n", bsum,
           1e3 * fl, 100 * fl / rr);
    double decisions = (double)m.cfg.n_layers * n_tok * m.cfg.n_heads;
    printf("record     %d tokens of %s in %d contexts of %d (3 eps, 8 windows; same ids, 256-token chunks): "
           "aha record %.1f tok/s vs plain prefill with NLL %.1f tok/s -> %.2fx, CPU seconds %.2fx (target <= "
           "1.1x; trace writes included, model load not; median of %d, load average %.1f-%.1f)\n",
           n_tok, data, n_tok / ctx, ctx, n_tok / rr, n_tok / p, rr / p, rc / pc, reps, la0, load_avg());
    if (routed) // once per model: the ctx-512 line's trace says the same
        printf("trace      %.2f MB for %.3g decisions = %.2f MB per million decisions\n",
           sb.st_size / 1e6, decisions, sb.st_size / 1e6 / (decisions / 1e6));
    unlink(trace);
    unlink(tok);
    rmdir(dir);
    free(ids), free(targets);
    aha_run_free(&run);
    aha_backend_free(&be);
    aha_model_free(&m);
    // 2. routed attention
    if (routed) bench_routed(2048, reps), bench_routed(8192, reps);
    if (routed && bench_dep(ctx, reps) != 0) return 1;
    return 0;
}
