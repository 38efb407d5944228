// --dtype bf16 on the CPU against the f32 path (the reference), SmolLM2-135M
// on a fixed text of 256 tokens in one call: logits (max |diff|, top-1
// agreement), mean NLL, and the dependency pass's d_eps (what changed, and the
// oracle decisions at two windows that flip). Each is checked against a bound
// just above what was measured (docs/runtime.md, "--dtype bf16 on the CPU"); the bounds
// hold no matter which bf16 implementation runs (they compute the same
// numbers). The backend's name, the trace attribute, is cpu:bf16.
#include <stdint.h>

#include "check.h"
#include "err.h"
#include "run.h"

#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define N 256

// Measured on TEXT (2026-12-01, AVX2, the sgemm fallback); the bounds sit just above.
#define BOUND_LOGIT_MAX_ABS 0.35 // measured 0.285
#define BOUND_TOP1_MIN 0.97      // measured 0.984 (252 of 256 tokens)
#define BOUND_NLL_ABS 0.002      // measured 0.00077 nats (f32 3.15496, bf16 3.15418)
#define BOUND_DEP_CHANGED 0.035  // measured 0.0256 (eps 0.1), 0.0053 (eps 0.01) of 69120 d_eps
#define BOUND_FLIP 0.001         // measured 0.0004 (eps 0.1, w 64): oracle decisions d_eps > w flipped

static const char *TEXT =
    "The lighthouse keeper wrote in his log every evening, as his father had done before him. "
    "He noted the wind, the height of the waves, the ships that passed and the ones that did not. "
    "In the winter of the great storm he wrote very little: the lamp had to be trimmed every hour, "
    "and the glass cleaned of salt, and there was no time for words. When spring came he read the "
    "old logs again and found that his father had seen a storm like it forty years before, on the "
    "same night of the year, and had written the same three words at the bottom of the page: the "
    "light held. He closed the book, climbed the stairs, and looked out over the water. The boats "
    "were going out again, one after another, towards the banks where the fish were. He thought of "
    "his own son, who lived in the city and wrote programs for a bank, and wondered whether he "
    "would ever want to keep a light. Probably not, he decided, and that was as it should be. "
    "The light would be automatic in a few years anyway; the engineers had already come to measure "
    "the tower. Still, someone would have to write in the log. He made a note to ask about that. "
    "Then he went down to the kitchen, put the kettle on, and waited for the dark.";

static float eps[2] = {0.1f, 0.01f};
static const int FLIP_W[2] = {16, 64};

typedef struct {
    float *logits; // [N, vocab]
    uint32_t *dep; // [L, 2, N, H]
    double nll;    // mean over the N - 1 scored tokens
} pass;

static int run_pass(const aha_model *m, const char *dtype, const int32_t *ids, pass *p, char *name, size_t nl) {
    aha_backend b;
    aha_run r;
    if (aha_backend_init(&b, m, "cpu", dtype) != 0) return -1;
    snprintf(name, nl, "%s", b.name);
    if (aha_run_init(&r, &b, N, N) != 0) return aha_backend_free(&b), -1;
    int32_t targets[N];
    for (int i = 0; i < N; i++) targets[i] = i + 1 < N ? ids[i + 1] : -1;
    aha_probe probe = {0};
    probe.eps = eps, probe.n_eps = 2;
    aha_call c = {&probe, 0, 1, targets};
    aha_call_out o;
    int rc = aha_run_step(&r, ids, N, &c, &o);
    if (rc == 0) {
        const aha_config *cfg = &m->cfg;
        const size_t nlog = (size_t)N * cfg->vocab, ndep = (size_t)cfg->n_layers * 2 * N * cfg->n_heads;
        p->logits = malloc(nlog * sizeof(float)), p->dep = malloc(ndep * sizeof(uint32_t));
        memcpy(p->logits, r.st.logits, nlog * sizeof(float));
        memcpy(p->dep, o.dep, ndep * sizeof(uint32_t));
        p->nll = 0;
        for (int i = 0; i < N - 1; i++) p->nll += o.nll[i] / (N - 1);
    }
    aha_run_free(&r);
    aha_backend_free(&b);
    return rc;
}

int main(void) {
    FILE *f = fopen(MODEL, "rb");
    if (!f) {
        printf("SKIP bf16 forward: %s is not on this machine (scripts/setup.sh fetches it)\n", MODEL);
        return 0;
    }
    fclose(f);
    aha_model m;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    TEST("bf16 forward: SmolLM2 loads and the text has 256 tokens", {
        CHECK(aha_model_load(&m, MODEL) == 0, "%s", aha_errmsg());
        CHECK(aha_tok_encode(m.tok, TEXT, strlen(TEXT), &ids, &n_ids) == 0, "%s", aha_errmsg());
        CHECK(n_ids >= N, "%zu tokens", n_ids);
    });
    if (check_total_failed_) TEST_EXIT();
    pass f32 = {0}, b16 = {0};
    char n32[32], n16[32];
    TEST("bf16 forward: both passes run; the backend is named cpu:bf16", {
        CHECK(run_pass(&m, NULL, ids, &f32, n32, sizeof n32) == 0, "f32: %s", aha_errmsg());
        CHECK(run_pass(&m, "bf16", ids, &b16, n16, sizeof n16) == 0, "bf16: %s", aha_errmsg());
        CHECK(!strcmp(n32, "cpu") && !strcmp(n16, "cpu:bf16"), "names %s, %s", n32, n16);
    });
    if (check_total_failed_) TEST_EXIT();
    const aha_config *c = &m.cfg;
    const int V = c->vocab, L = c->n_layers, H = c->n_heads;
    double max_abs = 0;
    int top1 = 0;
    for (int t = 0; t < N; t++) {
        const float *a = f32.logits + (size_t)t * V, *b = b16.logits + (size_t)t * V;
        int ia = 0, ib = 0;
        for (int v = 0; v < V; v++) {
            max_abs = fmax(max_abs, fabs((double)a[v] - b[v]));
            if (a[v] > a[ia]) ia = v;
            if (b[v] > b[ib]) ib = v;
        }
        top1 += ia == ib;
    }
    long changed[2] = {0}, flips[2][2] = {{0}}, total = (long)L * N * H;
    for (int l = 0; l < L; l++)
        for (int e = 0; e < 2; e++)
            for (int i = 0; i < N * H; i++) {
                const size_t k = ((size_t)l * 2 + e) * N * H + i;
                changed[e] += f32.dep[k] != b16.dep[k];
                for (int w = 0; w < 2; w++) flips[e][w] += (f32.dep[k] > (uint32_t)FLIP_W[w]) != (b16.dep[k] > (uint32_t)FLIP_W[w]);
            }
    const double agree = (double)top1 / N, dnll = fabs(b16.nll - f32.nll);
    printf("  logits max |bf16 - f32| %.4f; top-1 agreement %.4f (%d/%d); mean NLL f32 %.5f bf16 %.5f (|diff| %.5f)\n",
           max_abs, agree, top1, N, f32.nll, b16.nll, dnll);
    double worst_dep = 0, worst_flip = 0;
    for (int e = 0; e < 2; e++) {
        printf("  eps %g: d_eps changed %.4f of %ld; oracle decisions flipped at w=%d %.4f, w=%d %.4f\n", eps[e],
               (double)changed[e] / total, total, FLIP_W[0], (double)flips[e][0] / total, FLIP_W[1],
               (double)flips[e][1] / total);
        worst_dep = fmax(worst_dep, (double)changed[e] / total);
        for (int w = 0; w < 2; w++) worst_flip = fmax(worst_flip, (double)flips[e][w] / total);
    }
    TEST("bf16 forward: logits within the bound of f32's (max abs), top-1 agreement", {
        CHECK(max_abs <= BOUND_LOGIT_MAX_ABS, "max |diff| %.4f > %.4f", max_abs, BOUND_LOGIT_MAX_ABS);
        CHECK(max_abs > 0, "bf16 logits equal f32's: the bf16 path did not run");
        CHECK(agree >= BOUND_TOP1_MIN, "top-1 agreement %.4f < %.4f", agree, BOUND_TOP1_MIN);
    });
    TEST("bf16 forward: mean NLL within the bound of f32's",
         CHECK(dnll <= BOUND_NLL_ABS, "|nll diff| %.5f > %.5f", dnll, BOUND_NLL_ABS));
    TEST("bf16 forward: d_eps changed and oracle decisions flipped within bounds", {
        CHECK(worst_dep <= BOUND_DEP_CHANGED, "d_eps changed %.4f > %.4f", worst_dep, BOUND_DEP_CHANGED);
        CHECK(worst_flip <= BOUND_FLIP, "decisions flipped %.4f > %.4f", worst_flip, BOUND_FLIP);
    });
    free(f32.logits), free(f32.dep), free(b16.logits), free(b16.dep), free(ids);
    aha_model_free(&m);
    TEST_EXIT();
}
