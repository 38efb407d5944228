// A transformer checkpoint in memory: its configuration and float32 weights.
// Loaded from a Hugging Face folder (config.json + safetensors, sharded or not)
// or from a GGUF file. Quantized and half-precision weights are converted to
// float32 at load; float32 weights are used in place from the mapping.
#pragma once
#include <stdint.h>

#include "tokenizer.h"

typedef enum { AHA_ARCH_LLAMA, AHA_ARCH_QWEN2, AHA_ARCH_QWEN3, AHA_ARCH_OLMO2 } aha_arch;

// How RoPE pairs the dimensions of a head: HF checkpoints rotate halves
// (d, d + D/2); llama.cpp's llama GGUFs store Q/K permuted for adjacent pairs
// (2i, 2i+1).
typedef enum { AHA_ROPE_HALF, AHA_ROPE_ADJACENT } aha_rope_pairing;

typedef struct {
    aha_arch arch;
    int aha;            // 1 when q_proj carries H router rows (AHA checkpoint)
    int dim;            // hidden size
    int n_layers;
    int n_heads;        // query heads H
    int n_kv_heads;     // key/value heads, divides n_heads
    int head_dim;       // D
    int ffn_dim;        // SwiGLU intermediate size
    int vocab;
    int max_ctx;        // trained context length
    int tied;           // lm_head shares token embeddings
    float norm_eps;
    float rope_theta;
    aha_rope_pairing rope_pairing;
    // RoPE scaling: 0 none, 1 linear (factor), 2 llama3 (factor, low/high
    // frequency factors, original context).
    int rope_scaling;
    float rope_factor, rope_low_freq, rope_high_freq;
    int rope_orig_ctx;
} aha_config;

typedef struct {
    const float *attn_norm;      // [dim] pre-attention RMSNorm (NULL for olmo2)
    const float *wq;             // [H*D (+H router rows when aha), dim]
    const float *wk, *wv;        // [KV*D, dim]
    const float *bq, *bk, *bv;   // [H*D], [KV*D], [KV*D] qwen2 biases, else NULL
    const float *br;             // [H] router-row biases (a router file fitted with a bias), else NULL
    const float *q_norm;         // qwen3 [D] per head; olmo2 [H*D]; else NULL
    const float *k_norm;         // qwen3 [D] per head; olmo2 [KV*D]; else NULL
    const float *wo;             // [dim, H*D]
    const float *post_attn_norm; // [dim] olmo2 post-norm, else NULL
    const float *ffn_norm;       // [dim] pre-MLP RMSNorm (NULL for olmo2)
    const float *w_gate, *w_up;  // [ffn_dim, dim]
    const float *w_down;         // [dim, ffn_dim]
    const float *post_ffn_norm;  // [dim] olmo2 post-norm, else NULL
    int window;                  // native sliding window in keys (a query at p sees p-window+1..p), 0 = full causal
} aha_layer;

typedef struct aha_model_store aha_model_store; // the files behind the weights

typedef struct {
    aha_config cfg;
    const float *tok_emb;  // [vocab, dim]
    const float *out_norm; // [dim]
    const float *lm_head;  // [vocab, dim] (== tok_emb when tied)
    aha_layer *layers;     // [n_layers]
    float *inv_freq;       // [head_dim/2] RoPE frequencies, scaling applied
    aha_tokenizer *tok;    // NULL when the checkpoint has no usable tokenizer
    char *tok_error;       // why tok is NULL (no tokenizer, or its load error)
    char *path;            // as given on the command line
    char *format;          // "safetensors" or "gguf"
    char *dtype;           // stored dtype(s), e.g. "bf16" or "q4_1+q8_0+f32"
    int64_t n_params;      // stored parameters (router rows included)
    size_t converted_bytes;// float32 copies made at load
    aha_model_store *store;
} aha_model;

// path: a folder with config.json + model.safetensors[.index.json] (+
// tokenizer.json), or a .gguf file. 0 or -1 with a one-line error.
int aha_model_load(aha_model *m, const char *path);
void aha_model_free(aha_model *m);
const char *aha_arch_name(aha_arch a);
