// --dtype bf16 on the CPU: the projection matrices of every layer (a mixture
// of experts' experts too) and lm_head as bf16 copies, made once when the backend starts (used in place
// when the file stores them as bf16), multiplied through matmul_bf16.h with
// the activations rounded to bf16 at each product. Embeddings, norms,
// attention, softmax and the dependency pass stay f32 (d_eps keeps its
// meaning); only the products' operands lose bits.
#pragma once
#include <stddef.h>

#include "matmul_bf16.h"
#include "model.h"

typedef struct {
    aha_model model;   // the host model, shallow, with layers[] and lm_head pointing at bf16 matrices
    aha_layer *layers; // [n_layers] model.layers: the host's, bf16 matrices swapped in
    aha_moe *moe;      // [n_layers] its mixtures of experts (layers[l].moe), bf16 experts swapped in
    aha_weight *experts; // [n_layers * 3 * n_experts] their expert matrices
    aha_bf16 *store;   // the copies, one block [bytes / 2]
    size_t bytes;      // bytes the copies hold (0 when every matrix was bf16 already)
    aha_mm_bf16 *mm;   // the product, its oneDNN primitives and scratch
} aha_cpu_bf16;

int aha_cpu_bf16_init(aha_cpu_bf16 *b, const aha_model *m);
void aha_cpu_bf16_free(aha_cpu_bf16 *b);
