// A transformer checkpoint in memory: its configuration and weights.
// Loaded from a Hugging Face folder (config.json + safetensors, sharded or not)
// or from a GGUF file. The weight matrices stay in their stored type, in the
// file's mapping (aha_weight; AHA_WEIGHTS_F32 converts them at load, as
// before); norms and biases are float32.
#pragma once
#include <stdint.h>

#include "dtype.h"
#include "flags.h"
#include "tokenizer.h"

// The architectures aha runs. An architecture is a name (aha_arch_name:
// traces, router files, aha info); what a model computes is in aha_config's
// fields, which the config readers set once (model_config_json.c,
// model_config_gguf.c): nothing after them looks an architecture up.
typedef enum {
    AHA_ARCH_LLAMA,
    AHA_ARCH_QWEN2,
    AHA_ARCH_QWEN3,
    AHA_ARCH_OLMO2,
    AHA_ARCH_GEMMA2,
    AHA_ARCH_GEMMA3,
    AHA_ARCH_PHI3,
    AHA_ARCH_SMOLLM3,
    AHA_ARCH_OLMOE,
    AHA_ARCH_QWEN2MOE,
    AHA_ARCH_QWEN3MOE,
    AHA_ARCH_MIXTRAL
} aha_arch;

#define AHA_MAX_LAYERS 1024 // more is hostile or a typo
#define AHA_MAX_ROPE_PAIRS 256 // LongRoPE's factor lists hold at most this many (head_dim 512)

// How RoPE pairs the dimensions of a head: HF checkpoints rotate halves
// (d, d + D/2); llama.cpp's llama GGUFs store Q/K permuted for adjacent pairs
// (2i, 2i+1).
typedef enum { AHA_ROPE_HALF, AHA_ROPE_ADJACENT } aha_rope_pairing;

// RoPE scaling of the (global) layers, as HF's rope_type names it.
typedef enum {
    AHA_SCALING_NONE,     // plain RoPE
    AHA_SCALING_LINEAR,   // every frequency / factor
    AHA_SCALING_LLAMA3,   // llama3: by wavelength against the original context (factor, low/high)
    AHA_SCALING_YARN,     // YaRN: a ramp between beta_fast and beta_slow rotations, attention factor
    AHA_SCALING_LONGROPE, // LongRoPE: per-pair short or long factors by the context's length, attention factor
} aha_rope_scaling;

// Where a block's RMSNorms sit.
typedef enum {
    AHA_NORMS_PRE,  // llama: before attention and before the MLP
    AHA_NORMS_POST, // olmo2: after each, none before
    AHA_NORMS_BOTH, // gemma: before and after each (four per block)
} aha_norms;

// q/k RMSNorm before RoPE.
typedef enum {
    AHA_QK_NORM_NONE,
    AHA_QK_NORM_HEAD, // qwen3, gemma3: per head, weights [head_dim]
    AHA_QK_NORM_FULL, // olmo2, olmoe: over all heads at once, weights [H*D] and [KV*D]
} aha_qk_norm;

// What a GGUF left to the architecture's defaults (aha_config.defaults).
enum {
    AHA_DEFAULT_PATTERN = 1,   // which layers are sliding-window (no attention.sliding_window_pattern)
    AHA_DEFAULT_SWA_BASE = 2,  // the local layers' RoPE base (no rope.freq_base_swa)
    AHA_DEFAULT_SCALE = 4,     // the attention score scale, by llama.cpp's rule (no attention.scale)
    AHA_DEFAULT_NOPE = 8,      // which layers have no RoPE: llama.cpp's rule for the architecture
    AHA_DEFAULT_MOE_NORM = 16, // whether the routing weights are renormalised: llama.cpp's rule
};

typedef struct {
    aha_arch arch;      // a name only (above)
    int aha;            // 1 when q_proj carries H router rows (AHA checkpoint)
    int dim;            // hidden size
    int n_layers;
    int n_heads;        // query heads H
    int n_kv_heads;     // key/value heads, divides n_heads
    int head_dim;       // D
    int ffn_dim;        // SwiGLU / GeGLU intermediate size (dense MLP layers)
    int vocab;
    int max_ctx;        // trained context length
    int tied;           // lm_head shares token embeddings
    float norm_eps;
    // The block's structure.
    aha_norms norms;     // where the RMSNorms sit
    aha_qk_norm qk_norm; // q/k norms before RoPE
    int qkv_bias;        // 1: q/k/v projections have biases (qwen2; a GGUF's are read where present)
    int fused_qkv;       // 1: one qkv_proj [(H + 2 KV) D, dim] (phi3), q, k, v its row blocks
    int fused_gate_up;   // 1: one gate_up_proj [2 ffn, dim] (phi3), gate the first half
    // RoPE.
    float rope_theta;
    aha_rope_pairing rope_pairing;
    aha_rope_scaling rope_scaling;        // of the global layers
    float rope_factor;                    // linear, llama3, yarn; longrope: the one attention_factor derives from
    float rope_low_freq, rope_high_freq;  // llama3
    int rope_orig_ctx;                    // llama3, yarn, longrope: the context before scaling (longrope: the switch
                                          // between the short and the long factors)
    float yarn_beta_fast, yarn_beta_slow; // yarn: the ramp's ends, in rotations over the original context
    int yarn_truncate;                    // yarn: the ramp's ends rounded out to whole dimensions (HF's default)
    float rope_attn_factor;               // yarn, longrope: cos and sin times this (HF's attention_factor), so
                                          // scores times its square; 0 elsewhere (none)
    float rope_short[AHA_MAX_ROPE_PAIRS]; // [head_dim/2] longrope: divisors for contexts up to rope_orig_ctx
    float rope_long[AHA_MAX_ROPE_PAIRS];  // [head_dim/2] longrope: divisors for longer contexts
    int rope_freqs_tensor;                // 1: a GGUF's rope_freqs.weight holds llama3 scaling (llama.cpp's llama)
    uint8_t layer_nope[AHA_MAX_LAYERS];   // [n_layers] 1 = the layer has no RoPE (SmolLM3's NoPE layers)
    // Gemma-2/3 (0 elsewhere: llama-style behaviour).
    int ffn_gelu;          // 1: GeGLU, tanh-approximate GELU (gelu_pytorch_tanh); 0: SwiGLU
    int norm_plus1;        // 1: every RMSNorm scales by (1 + w) (folded into the weights at load)
    float embed_scale;     // token embeddings times this (float32 sqrt(dim), as HF), 0 = none
    float attn_scale;      // score scale: query_pre_attn_scalar^-0.5; 0 = head_dim^-0.5
    float attn_softcap;    // gemma2: scores = cap * tanh(scores / cap); 0 = none
    float final_softcap;   // gemma2/3: logits = cap * tanh(logits / cap); 0 = none
    // Natively local (sliding-window) layers: Gemma-2/3, Mistral, Qwen2, Phi-3.
    int sliding_window;    // their window in keys (HF: a query at p sees p-window+1..p), 0 = none
    float rope_local_theta;// RoPE base of the local layers (gemma3 rope_local_base_freq), 0 = rope_theta
    uint8_t layer_local[AHA_MAX_LAYERS]; // [n_layers] 1 = natively sliding-window layer
    // Mixture of experts: the MLP of a layer with layer_moe set routes each
    // token to n_experts_used of n_experts SwiGLU experts (softmax over the
    // router's logits, the top n_experts_used, their weights renormalised to
    // sum 1 when moe_norm_topk), plus a shared expert where shared_ffn_dim > 0.
    int n_experts;                     // 0 = no mixture-of-experts layer
    int n_experts_used;                // top-k
    int moe_ffn_dim;                   // each expert's intermediate size
    int shared_ffn_dim;                // the shared expert's (qwen2moe, gated by sigmoid(x . w)), 0 = none
    int moe_norm_topk;                 // 1: the top-k weights divided by their sum
    uint8_t layer_moe[AHA_MAX_LAYERS]; // [n_layers] 1 = the layer's MLP is the mixture of experts
    unsigned defaults;                 // AHA_DEFAULT_* bits: settings a GGUF has no key for, taken from the
                                       // architecture's defaults (aha info says which)
} aha_config;

// A mixture-of-experts MLP block's weights (aha_layer.moe).
typedef struct {
    aha_weight router;         // [n_experts, dim] the router (HF mlp.gate), logits by a dot per row
    aha_weight *gate, *up;     // [n_experts] each [moe_ffn_dim, dim], in the mapping (a GGUF's
                               // stacked expert tensors: one slice each)
    aha_weight *down;          // [n_experts] each [dim, moe_ffn_dim]
    aha_weight sh_gate, sh_up; // [shared_ffn_dim, dim] the shared expert (qwen2moe), rows 0: none
    aha_weight sh_down;        // [dim, shared_ffn_dim]
    const float *sh_router;    // [dim] its gate sigmoid(x . sh_router), with it
} aha_moe;

typedef struct {
    const float *attn_norm;      // [dim] pre-attention RMSNorm (NULL for olmo2)
    aha_weight wq;               // [H*D (+H router rows when aha), dim]
    aha_weight wk, wv;           // [KV*D, dim]
    const float *bq, *bk, *bv;   // [H*D], [KV*D], [KV*D] qwen2 biases, else NULL
    const float *br;             // [H] router-row biases (a router file fitted with a bias), else NULL
    const float *q_norm;         // [D] per head or [H*D] full width (cfg.qk_norm), else NULL
    const float *k_norm;         // [D] per head or [KV*D] full width, else NULL
    aha_weight wo;               // [dim, H*D]
    const float *post_attn_norm; // [dim] olmo2 / gemma post-norm, else NULL
    const float *ffn_norm;       // [dim] pre-MLP RMSNorm (NULL for olmo2)
    aha_weight w_gate, w_up;     // [ffn_dim, dim] (a dense MLP)
    aha_weight w_down;           // [dim, ffn_dim]
    const aha_moe *moe;          // the mixture of experts in place of the dense MLP, else NULL
    const float *post_ffn_norm;  // [dim] olmo2 / gemma post-norm, else NULL
    int window;                  // native sliding window in keys (a query at p sees p-window+1..p), 0 = full causal
    const float *inv_freq;       // [head_dim/2] this layer's RoPE frequencies (gemma3: local or global;
                                 // longrope: the short factors'), NULL: no RoPE (a NoPE layer)
    const float *inv_freq_long;  // [head_dim/2] longrope: the long factors', for contexts longer than
                                 // rope_orig_ctx; else NULL
    float scale;                 // score scale (0 = head_dim^-0.5): the config's, times the square of
                                 // the layer's RoPE attention factor (yarn, longrope)
} aha_layer;

typedef struct aha_model_store aha_model_store; // the files behind the weights

// How the weight matrices are held: in their stored type, read in place
// (resident memory about the file's size), or converted to float32 at load
// (the reference path, 4 bytes a weight).
typedef enum { AHA_WEIGHTS_STORED, AHA_WEIGHTS_F32 } aha_weights;
// Their names, "stored" and "f32": --weights's values and the trace's weights.
extern const aha_enum aha_weights_names;
const char *aha_weights_name(aha_weights w);
// The --weights flag of every command that loads a model (an aha_weights variable).
#define AHA_WEIGHTS_FLAG(weights)                                                                      \
    AHA_FLAG_ENUM("--weights", weights, aha_weights_names,                                             \
                  "how weight matrices are held: stored (their file type, mmap'd, converted inside "   \
                  "each product), f32 (converted at load)")

typedef struct {
    aha_config cfg;
    aha_weight tok_emb;    // [vocab, dim] (the lookup decodes one row)
    const float *out_norm; // [dim]
    aha_weight lm_head;    // [vocab, dim] (== tok_emb when tied)
    aha_layer *layers;     // [n_layers]
    float *inv_freq;       // [head_dim/2] RoPE frequencies, scaling applied (global layers)
    const float *rope_factors; // [head_dim/2] a GGUF's rope_freqs.weight (llama.cpp's form of
                           // llama3 scaling): each inverse frequency is divided by its factor
                           // (already, in inv_freq); NULL when the file has none
    float *inv_freq_local; // [head_dim/2] natively local layers' (rope_local_theta), else NULL
    float *inv_freq_long;  // [head_dim/2] longrope: the long factors' frequencies, else NULL
    aha_moe *moe;          // [n_layers] the mixture-of-experts blocks (layers[l].moe), else NULL
    aha_weight *experts;   // [n_layers * 3 * n_experts] their expert matrices
    aha_tokenizer *tok;    // NULL when the checkpoint has no usable tokenizer
    char *tok_error;       // why tok is NULL (no tokenizer, or its load error)
    char *path;            // as given on the command line
    char *format;          // "safetensors" or "gguf"
    char *dtype;           // stored dtype(s), e.g. "bf16" or "q4_1+q8_0+f32"
    int64_t n_params;      // stored parameters (router rows included)
    aha_weights weights;   // how the matrices are held
    size_t mapped_bytes;   // weight bytes used in place from the files' mappings
    size_t converted_bytes;// float32 copies made at load
    aha_model_store *store;
    char **files;          // [n_files] every file the load read (config.json, the weights, the
                           // tokenizer files): the model's identity (aha_model_sha256)
    int n_files;
    size_t cap_files;      // files allocated
} aha_model;

// path: a folder with config.json + model.safetensors[.index.json] (+
// tokenizer.json), or a .gguf file. 0 or -1 with a one-line error.
int aha_model_load(aha_model *m, const char *path); // AHA_WEIGHTS_STORED
int aha_model_load_as(aha_model *m, const char *path, aha_weights how);
void aha_model_free(aha_model *m);
// The model's fingerprint: every file the load read, as sha256sum prints them,
// one "<hex>  <name>\n" line per file, names relative to the model path (a
// GGUF: its file name), sorted by name (malloc'd into *out). 0, or -1 with an
// error naming the file.
int aha_model_sha256(const aha_model *m, char **out);
const char *aha_arch_name(aha_arch a);
// Tensors a checkpoint may hold that no number depends on (a name prefix),
// each with its reason: the only tensors a load leaves unused; docs/runtime.md's table.
typedef struct {
    const char *prefix, *why;
} aha_ignored_tensor;
extern const aha_ignored_tensor aha_ignored_tensors[];
extern const int aha_n_ignored_tensors;
