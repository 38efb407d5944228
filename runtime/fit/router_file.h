// Router files (aha fit): AHA routers fitted to a frozen model, one [H, dim]
// float32 tensor `router.<l>.weight` per layer in a safetensors file, with
// the fit's settings and the model's identity in its __metadata__.
// global iff sigmoid(x . w) > tau, x the layer's attention input (what
// q_proj reads), tau = sigmoid(threshold) as the file stores it.
#pragma once
#include <stdint.h>

#include "model.h"

#define AHA_ROUTER_META_MAX 64 // aha fit writes 35

typedef struct {
    int L, H, dim;
    float *w;                 // [L, H, dim] router weights
    float *bias;              // [L, H] router biases (aha fit --bias / --per-head), else NULL
    double threshold;         // global iff logit > threshold
    int n_meta;
    char *meta_key[AHA_ROUTER_META_MAX], *meta_val[AHA_ROUTER_META_MAX]; // as stored
} aha_router_file;

// The model's identity as a router file records it (arch, n_layers, n_heads,
// dim, n_params, q_checksum); val[i] for key[i]; returns the count.
int aha_router_identity(const aha_model *m, const char *key[8], char val[8][64]);
// Read path and check it was fitted for m: a shape or identity mismatch is
// one error naming the field. 0 or -1.
int aha_router_file_load(aha_router_file *rf, const char *path, const aha_model *m);
void aha_router_file_free(aha_router_file *rf);
const char *aha_router_file_meta(const aha_router_file *rf, const char *key); // NULL if absent
// Write w [L, H, dim], bias [L, H] (NULL: none) and the metadata pairs (n
// of them) to path.
int aha_router_file_save(const char *path, const float *w, const float *bias, int L, int H, int dim,
                         const char **key, const char **val, int n);
// Make m an AHA model whose router is rf's: q_proj becomes [H*D + H, dim],
// the router rows appended (or replaced where m already has them), and a
// router bias becomes the layers' br. The
// fused matrices are owned by *owned ([L] pointers; free with
// aha_router_unfuse after the model's last use).
int aha_router_fuse(const aha_router_file *rf, aha_model *m, float ***owned);
void aha_router_unfuse(float **owned, int L);

// Write m (its router fused: aha_router_fuse) as an AHA checkpoint, a
// Hugging Face folder dir: config.json and the tokenizer files copied from
// m's folder, model.safetensors in float32 with q_proj [H*D + H, dim]. Only
// for models loaded from a Hugging Face folder, without a router bias (AHA's
// q_proj has none to carry it). 0 or -1.
int aha_router_export(const aha_model *m, const char *dir, const char **key, const char **val, int n_meta);
// The files it writes in dir: the first AHA_EXPORT_N_COPIED copied from the
// model's folder (config.json always, the others where the model has them),
// then model.safetensors.
#define AHA_EXPORT_N_COPIED 5
#define AHA_EXPORT_N_FILES 6
extern const char *const aha_router_export_files[AHA_EXPORT_N_FILES];
