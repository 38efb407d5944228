// The files behind a model's weights: one GGUF, or one or more safetensors
// shards. Tensors are looked up by their Hugging Face name.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "tensor.h"

typedef struct aha_model_store aha_model_store;

// path: a HF folder (dir = 1) or a GGUF file. Every file is validated.
int aha_store_open(aha_model_store **s, const char *path, int dir);
void aha_store_close(aha_model_store *s);
// The GGUF behind the store, or NULL for safetensors.
const aha_gguf *aha_store_gguf(const aha_model_store *s);
// The files the store read: the GGUF; or model.safetensors.index.json (when
// there is one) and each safetensors file. Their count, and file i's path.
int aha_store_n_files(const aha_model_store *s);
const char *aha_store_file(const aha_model_store *s, int i);
// Find a tensor by HF name: *t is NULL when absent; *file names its file.
// A tensor found is noted as used: the model reads it, or checks it.
void aha_store_find(const aha_model_store *s, const char *hf_name, const aha_tensor **t,
                    const char **file);
// The first tensor of the files that no aha_store_find found and that
// known() does not accept (NULL = none is): 1 with *t and *file set, else 0.
int aha_store_unused(const aha_model_store *s, int (*known)(const char *name), const aha_tensor **t,
                     const char **file);
// A float32 view of t: in place when stored as aligned f32, else a converted
// copy the store owns (its size is added to *converted). NULL on OOM.
const float *aha_store_f32(aha_model_store *s, const aha_tensor *t, size_t *converted);
// n floats the store owns (freed with it), for weights derived at load. NULL on OOM.
float *aha_store_alloc(aha_model_store *s, int64_t n, const char *what);
// Count parameters and name the stored dtypes (e.g. "q4_1+q8_0+f32").
void aha_store_summary(const aha_model_store *s, int64_t *n_params, char **dtypes);
