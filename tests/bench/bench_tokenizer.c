// Tokenizer speed on a real GGUF (SmolLM2's byte-level BPE by default;
// scripts/bench.sh also runs Gemma-3's SentencePiece-style one): the load
// (GGUF open + vocab and merges, which Gemma derives from its vocab) and the
// encode throughput on 1 MB of the conformance texts (prose, code, CJK,
// emoji, numbers) over and over. Prints medians; see scripts/bench.sh.
// (Figures, not asserts: test_tokenizer checks the ids.)
//
//   bench_tokenizer [MODEL] [REPS]   defaults: models/SmolLM2-135M-Instruct.Q4_1.gguf 5
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "err.h"
#include "gguf.h"
#include "mapfile.h"
#include "tokenizer.h"

#define TEXTS "tests/fixtures/tok_texts.json"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// 1 MB (and a little more) of the conformance texts repeated; NULL on error.
static char *bench_text(size_t *n) {
    aha_map m;
    if (aha_map_open(&m, TEXTS) != 0) return NULL;
    cJSON *texts = cJSON_ParseWithLength((const char *)m.data, m.size), *e;
    aha_map_close(&m);
    size_t cap = 1 << 20, max = 0;
    cJSON_ArrayForEach(e, texts) {
        if (cJSON_IsString(e) && strlen(e->valuestring) > max) max = strlen(e->valuestring);
    }
    char *text = cJSON_GetArraySize(texts) > 0 ? malloc(cap + max) : NULL;
    *n = 0;
    while (text && *n < cap)
        cJSON_ArrayForEach(e, texts) if (cJSON_IsString(e)) {
            size_t k = strlen(e->valuestring);
            memcpy(text + *n, e->valuestring, k);
            *n += k;
        }
    cJSON_Delete(texts);
    if (!text) aha_err("%s: no texts", TEXTS);
    return text;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 16) reps = 5;
    size_t n;
    char *text = bench_text(&n);
    if (!text) {
        fprintf(stderr, "bench_tokenizer: %s\n", aha_errmsg());
        return 1;
    }
    double load[16], enc[16];
    size_t n_ids = 0;
    char kind[64] = "";
    for (int r = 0; r < reps; r++) {
        aha_gguf g;
        aha_tokenizer *t = NULL;
        double t0 = now_s();
        if (aha_gguf_open(&g, path) != 0 || aha_tok_load_gguf(&t, &g) != 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", aha_errmsg());
            return 1;
        }
        load[r] = now_s() - t0;
        int32_t *ids;
        t0 = now_s();
        if (aha_tok_encode(t, text, n, &ids, &n_ids) != 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", aha_errmsg());
            return 1;
        }
        enc[r] = now_s() - t0;
        snprintf(kind, sizeof kind, "%s", aha_tok_kind(t));
        free(ids);
        aha_tok_free(t);
        aha_gguf_close(&g);
    }
    const char *base = strrchr(path, '/');
    printf("tokenizer  %s, %s: load %.1f ms (GGUF open included); encode %.2f MB/s (%zu bytes -> %zu ids)\n",
           base ? base + 1 : path, kind, bench_median(load, reps) * 1e3, n / 1e6 / bench_median(enc, reps), n, n_ids);
    free(text);
    return 0;
}
