// bf16 copies of the model's matrices for --dtype bf16 on the CPU (cpu_bf16.h).
#include "cpu_bf16.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

#define ROWS_PER_STEP 64 // rows decoded to f32 at a time per thread while copying

// The matrices that become bf16: a layer's seven projections.
static aha_weight *layer_matrix(aha_layer *L, int i) {
    aha_weight *w[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    return w[i];
}
#define LAYER_MATRICES 7

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

int aha_cpu_bf16_init(aha_cpu_bf16 *b, const aha_model *m) {
    memset(b, 0, sizeof *b);
    const int nl = m->cfg.n_layers;
    b->model = *m;
    if (!(b->mm = aha_mm_bf16_init(AHA_BF16_AUTO)) ||
        !(b->layers = aha_malloc((size_t)nl, sizeof *b->layers, "bf16 layers"))) {
        aha_cpu_bf16_free(b);
        return -1;
    }
    memcpy(b->layers, m->layers, (size_t)nl * sizeof *b->layers);
    b->model.layers = b->layers;
    size_t elems = copy_elems(&b->model.lm_head);
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < LAYER_MATRICES; i++) elems += copy_elems(layer_matrix(&b->layers[l], i));
    if (elems && !(b->store = aha_malloc(elems, sizeof *b->store, "bf16 weights"))) {
        aha_cpu_bf16_free(b);
        return -1;
    }
    b->bytes = elems * sizeof *b->store;
    aha_bf16 *p = b->store;
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < LAYER_MATRICES; i++) {
            aha_weight *w = layer_matrix(&b->layers[l], i);
            const size_t e = copy_elems(w);
            if (to_bf16(w, p) != 0) return aha_cpu_bf16_free(b), -1;
            p += e;
        }
    if (to_bf16(&b->model.lm_head, p) != 0) return aha_cpu_bf16_free(b), -1;
    return 0;
}

void aha_cpu_bf16_free(aha_cpu_bf16 *b) {
    aha_mm_bf16_free(b->mm);
    free(b->layers);
    free(b->store);
    memset(b, 0, sizeof *b);
}
