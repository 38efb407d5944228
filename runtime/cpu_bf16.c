// bf16 copies of the model's matrices for --dtype bf16 on the CPU (cpu_bf16.h).
#include "cpu_bf16.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

#define ROWS_PER_STEP 64 // rows decoded to f32 at a time per thread while copying

// The matrices of a layer that become bf16, into w (room for 10 + 3 E):
// its projections, and where x is its mixture of experts (a copy) each
// expert's and the shared expert's (the router stays as stored: its logits
// are dot products, not products through here). Their count.
static int layer_matrices(aha_layer *L, aha_moe *x, int E, aha_weight **w) {
    aha_weight *p[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    int n = 0;
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) w[n++] = p[i];
    for (int e = 0; x && e < E; e++) {
        w[n++] = &x->gate[e];
        w[n++] = &x->up[e];
        w[n++] = &x->down[e];
    }
    if (x && x->sh_router) {
        w[n++] = &x->sh_gate;
        w[n++] = &x->sh_up;
        w[n++] = &x->sh_down;
    }
    return n;
}

// Elements a copy of w takes (0: w is bf16 already and is used in place).
static size_t copy_elems(const aha_weight *w) {
    return w->type == AHA_BF16 ? 0 : (size_t)w->rows * w->cols;
}

// *w becomes a bf16 matrix at dst: decoded to f32 from its stored type a few
// rows at a time, then rounded to nearest even.
static int to_bf16(aha_weight *w, aha_bf16 *dst) {
    if (w->type == AHA_BF16) return 0;
    int failed = 0;
#pragma omp parallel
    {
        float *buf = malloc((size_t)ROWS_PER_STEP * w->cols * sizeof *buf);
        if (!buf) failed = 1;
#pragma omp for schedule(static)
        for (int r0 = 0; r0 < w->rows; r0 += ROWS_PER_STEP) {
            if (!buf) continue;
            const int nr = w->rows - r0 < ROWS_PER_STEP ? w->rows - r0 : ROWS_PER_STEP;
            aha_weight_rows(w, r0, nr, buf);
            for (size_t i = 0; i < (size_t)nr * w->cols; i++) dst[(size_t)r0 * w->cols + i] = aha_bf16_from_f32(buf[i]);
        }
        free(buf);
    }
    if (failed) {
        aha_err("out of memory converting a [%d x %d] matrix to bf16", w->rows, w->cols);
        return -1;
    }
    *w = aha_weight_of(dst, AHA_BF16, w->rows, w->cols);
    return 0;
}

// The host's mixtures of experts copied, so that their matrices can be swapped.
static int copy_experts(aha_cpu_bf16 *b, const aha_model *m) {
    const int nl = m->cfg.n_layers, E = m->cfg.n_experts;
    if (!E) return 0;
    if (!(b->moe = aha_malloc((size_t)nl, sizeof *b->moe, "bf16 experts")) ||
        !(b->experts = aha_malloc((size_t)nl * 3 * E, sizeof *b->experts, "bf16 experts")))
        return -1;
    memcpy(b->experts, m->experts, (size_t)nl * 3 * E * sizeof *b->experts);
    for (int l = 0; l < nl; l++) {
        if (!m->layers[l].moe) continue;
        b->moe[l] = *m->layers[l].moe;
        aha_weight *w = b->experts + (size_t)l * 3 * E;
        b->moe[l].gate = w, b->moe[l].up = w + E, b->moe[l].down = w + 2 * E;
        b->layers[l].moe = &b->moe[l];
    }
    return 0;
}

int aha_cpu_bf16_init(aha_cpu_bf16 *b, const aha_model *m) {
    memset(b, 0, sizeof *b);
    const int nl = m->cfg.n_layers, E = m->cfg.n_experts;
    b->model = *m;
    aha_weight **w = aha_malloc(10 + 3 * (size_t)E, sizeof *w, "bf16 layers");
    if (!w || !(b->mm = aha_mm_bf16_init(AHA_BF16_AUTO)) ||
        !(b->layers = aha_malloc((size_t)nl, sizeof *b->layers, "bf16 layers"))) {
        free(w);
        aha_cpu_bf16_free(b);
        return -1;
    }
    memcpy(b->layers, m->layers, (size_t)nl * sizeof *b->layers);
    b->model.layers = b->layers;
    if (copy_experts(b, m) != 0) {
        free(w);
        aha_cpu_bf16_free(b);
        return -1;
    }
    size_t elems = copy_elems(&b->model.lm_head);
    for (int l = 0; l < nl; l++)
        for (int i = 0, n = layer_matrices(&b->layers[l], b->layers[l].moe ? &b->moe[l] : NULL, E, w); i < n; i++)
            elems += copy_elems(w[i]);
    if (elems && !(b->store = aha_malloc(elems, sizeof *b->store, "bf16 weights"))) {
        free(w);
        aha_cpu_bf16_free(b);
        return -1;
    }
    b->bytes = elems * sizeof *b->store;
    aha_bf16 *p = b->store;
    int rc = 0;
    for (int l = 0; rc == 0 && l < nl; l++)
        for (int i = 0, n = layer_matrices(&b->layers[l], b->layers[l].moe ? &b->moe[l] : NULL, E, w); rc == 0 && i < n;
             i++) {
            const size_t e = copy_elems(w[i]);
            rc = to_bf16(w[i], p);
            p += e;
        }
    free(w);
    if (rc == 0) rc = to_bf16(&b->model.lm_head, p);
    if (rc != 0) aha_cpu_bf16_free(b);
    return rc;
}

void aha_cpu_bf16_free(aha_cpu_bf16 *b) {
    aha_mm_bf16_free(b->mm);
    free(b->layers);
    free(b->moe);
    free(b->experts);
    free(b->store);
    memset(b, 0, sizeof *b);
}
