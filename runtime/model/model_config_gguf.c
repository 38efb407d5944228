// A GGUF's metadata, read by its rows (model_config_rows.h): every key but
// the tokenizer's (runtime/tokenizer checks those) is read by a row of the
// model's architecture, or refused by name.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "model_config.h"
#include "model_config_rows.h"

#define MAX_VALUE (1 << 26) // sizes beyond this are hostile or a typo (aha_config_check bounds them tighter)

#define B(t) (1u << (t))
#define ALL AHA_KINDS_GGUF
#define GEMMA (B(K_GEMMA2) | B(K_GEMMA3))
#define MOE (B(K_LLAMA) | B(K_OLMOE) | B(K_QWEN2MOE) | B(K_QWEN3MOE)) // llama: Mixtral, as llama.cpp writes it
#define QWEN_MOE (B(K_QWEN2MOE) | B(K_QWEN3MOE))

// What the rows leave for the derivations after them.
typedef struct {
    aha_config *c;
    const aha_gguf *g;
    int arch;                 // the architecture's kind
    const char *scaling;      // rope.scaling.type: NULL when absent
    float factor;             // rope.scaling.factor (or the old rope.scale_linear), 0 when absent
    int value_length;         // attention.value_length, -1 when absent
    int rot_dims;             // rope.dimension_count, -1 when absent
    int moe_norm_set;         // expert_weights_norm was read
    const aha_gguf_kv *pattern; // attention.sliding_window_pattern, NULL when absent
} gguf_parse;

// A kv's value as one short line, for messages and ROW_ONLY (as JSON prints it).
static void kv_text(const aha_gguf_kv *kv, char *buf, size_t n) {
    switch (kv->type) {
    case GGUF_STRING: snprintf(buf, n, "%.*s", (int)(kv->v.s.len < 60 ? kv->v.s.len : 60), kv->v.s.s); break;
    case GGUF_BOOL: snprintf(buf, n, "%s", kv->v.u ? "true" : "false"); break;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64: snprintf(buf, n, "%" PRId64, kv->v.i); break;
    case GGUF_FLOAT32: case GGUF_FLOAT64: snprintf(buf, n, "%.9g", kv->v.f); break;
    case GGUF_ARRAY: snprintf(buf, n, "(an array of %" PRIu64 ")", kv->v.arr.n); break;
    default: snprintf(buf, n, "%" PRIu64, kv->v.u);
    }
}

static int kv_int(const gguf_parse *p, const aha_gguf_kv *kv, int *out) {
    uint64_t v;
    if (aha_gguf_get_u64(p->g, kv->key, &v) != 0) return -1;
    if (v > MAX_VALUE) {
        aha_err("%s: '%s' = %" PRIu64 " is out of range", p->g->path, kv->key, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int kv_float(const gguf_parse *p, const aha_gguf_kv *kv, float *out) {
    double v;
    if (aha_gguf_get_f64(p->g, kv->key, &v) != 0) return -1;
    *out = (float)v;
    return 0;
}

// 0 when kv holds a value of type t, else -1 with "'key' is not <what>".
static int kv_type(const gguf_parse *p, const aha_gguf_kv *kv, uint32_t t, const char *what) {
    if (kv->type == t) return 0;
    aha_err("%s: '%s' is not %s", p->g->path, kv->key, what);
    return -1;
}

// ---- the keys read by handlers ------------------------------------------------

static int row_scaling(void *pv, const void *v) {
    gguf_parse *p = pv;
    const aha_gguf_kv *kv = v;
    if (kv_type(p, kv, GGUF_STRING, "a string") < 0) return -1;
    static const char *const types[] = {"none", "linear", "yarn", "longrope"};
    char t[64];
    kv_text(kv, t, sizeof t);
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strcmp(t, types[i]) == 0) p->scaling = types[i];
    if (!p->scaling)
        aha_err("%s: '%s' is '%s': not implemented (none, linear, yarn, longrope)", p->g->path, kv->key, t);
    return p->scaling ? 0 : -1;
}

// rope.scaling.factor, or its old name rope.scale_linear (read when the new one is absent, as llama.cpp).
static int row_factor(void *pv, const void *v) {
    gguf_parse *p = pv;
    if (p->factor > 0) return 0;
    if (kv_float(p, v, &p->factor) < 0) return -1;
    if (!(p->factor > 0)) aha_err("%s: '%s' must be positive", p->g->path, ((const aha_gguf_kv *)v)->key);
    return p->factor > 0 ? 0 : -1;
}

static int row_value_length(void *pv, const void *v) {
    gguf_parse *p = pv;
    return kv_int(p, v, &p->value_length);
}

static int row_rot_dims(void *pv, const void *v) {
    gguf_parse *p = pv;
    return kv_int(p, v, &p->rot_dims);
}

static int row_pattern(void *pv, const void *v) {
    ((gguf_parse *)pv)->pattern = v;
    return 0;
}

static int row_swa_base(void *pv, const void *v) {
    gguf_parse *p = pv;
    p->c->defaults &= ~(unsigned)AHA_DEFAULT_SWA_BASE;
    return kv_float(p, v, &p->c->rope_local_theta);
}

static int row_scale(void *pv, const void *v) {
    gguf_parse *p = pv;
    p->c->defaults &= ~(unsigned)AHA_DEFAULT_SCALE;
    if (kv_float(p, v, &p->c->attn_scale) < 0) return -1;
    if (!(p->c->attn_scale > 0)) aha_err("%s: '%s' must be positive", p->g->path, ((const aha_gguf_kv *)v)->key);
    return p->c->attn_scale > 0 ? 0 : -1;
}

static int row_moe_norm(void *pv, const void *v) {
    gguf_parse *p = pv;
    const aha_gguf_kv *kv = v;
    if (kv_type(p, kv, GGUF_BOOL, "a bool") < 0) return -1;
    p->moe_norm_set = 1;
    p->c->moe_norm_topk = kv->v.u != 0;
    return 0;
}

static int row_split(void *pv, const void *v) {
    gguf_parse *p = pv;
    int n;
    if (kv_int(p, v, &n) < 0) return -1;
    if (n > 1)
        aha_err("%s: part of a GGUF split into %d files: join them first (llama-gguf-split --merge)", p->g->path, n);
    return n > 1 ? -1 : 0;
}

#define CFG(f) offsetof(aha_config, f)
#define INFO(name, t, why) {name, t, ROW_INFO, 0, NULL, NULL, 0, why}
#define ONLY(name, t, values, why) {name, t, ROW_ONLY, 0, values, NULL, 0, why}
#define FN(name, t, fn, why) {name, t, ROW_FN, 0, NULL, fn, 0, why}

const cfg_row aha_gguf_rows[] = {
    {"general.architecture", ALL, ROW_ARCH, 0, NULL, NULL, 1, "the architecture"},
    INFO("general.alignment", ALL, "read by the GGUF reader: the alignment of the tensor data"),
    ONLY("general.type", ALL, "model", "a model (not an adapter or a projector)"),
    ONLY("general.quantization_version", ALL, "2", "the block formats aha decodes are version 2's"),
    INFO("general.file_type", ALL, "the most common tensor type, a label: each tensor's own type is read"),
    INFO("general.*", ALL, "names, licence, sources, tags, sampling defaults: no number depends on them"),
    FN("split.count", ALL, row_split, "a split GGUF is refused: aha reads one whole file"),
    INFO("split.*", ALL, "which part of a split file: only a file of one part is read"),
    INFO("quantize.imatrix.*", ALL, "the importance matrix the quantizer used: the quantized values are read"),
    {"embedding_length", ALL, ROW_INT, CFG(dim), NULL, NULL, 1, "hidden size"},
    {"block_count", ALL, ROW_INT, CFG(n_layers), NULL, NULL, 1, "layers"},
    {"attention.head_count", ALL, ROW_INT, CFG(n_heads), NULL, NULL, 1, "query heads"},
    {"feed_forward_length", ALL, ROW_INT, CFG(ffn_dim), NULL, NULL, 1,
     "MLP width (olmoe, llama with experts: each expert's unless expert_feed_forward_length says)"},
    {"attention.head_count_kv", ALL, ROW_INT, CFG(n_kv_heads), NULL, NULL, 0,
     "key/value heads (default: the query heads)"},
    {"attention.key_length", ALL, ROW_INT, CFG(head_dim), NULL, NULL, 0,
     "head dimension (default: hidden size / heads)"},
    FN("attention.value_length", ALL, row_value_length, "must equal the head dimension"),
    FN("rope.dimension_count", ALL, row_rot_dims,
       "rotated dimensions: must be the whole head (partial RoPE is not implemented)"),
    {"context_length", ALL, ROW_INT, CFG(max_ctx), NULL, NULL, 0,
     "trained context: longer contexts are refused (default 2048)"},
    {"vocab_size", ALL, ROW_INT, CFG(vocab), NULL, NULL, 0, "vocabulary (default: token_embd.weight's rows)"},
    {"attention.layer_norm_rms_epsilon", ALL, ROW_FLOAT, CFG(norm_eps), NULL, NULL, 0,
     "RMSNorm epsilon (default 1e-6)"},
    {"rope.freq_base", ALL, ROW_FLOAT, CFG(rope_theta), NULL, NULL, 0, "RoPE base (default 10000; gemma3 1e6)"},
    FN("rope.scaling.type", ALL, row_scaling,
       "none, linear (factor), yarn (factor, original_context_length, the yarn_* keys) or longrope (phi3: the "
       "rope_factors_long / rope_factors_short tensors, which llama.cpp's converter writes without this key); "
       "llama3 scaling comes as the rope_freqs.weight tensor"),
    FN("rope.scaling.factor", ALL, row_factor,
       "linear and yarn scaling's factor: with type linear or yarn, or without a type (linear, as llama.cpp)"),
    FN("rope.scale_linear", ALL, row_factor, "rope.scaling.factor's old name, read when it is absent (as llama.cpp)"),
    INFO("rope.scaling.finetuned", ALL, "a note on how the model was trained"),
    {"rope.scaling.original_context_length", ALL, ROW_INT, CFG(rope_orig_ctx), NULL, NULL, 0,
     "yarn's and longrope's original context (default context_length); with other scalings a label"},
    {"rope.scaling.yarn_beta_fast", ALL, ROW_FLOAT, CFG(yarn_beta_fast), NULL, NULL, 0,
     "yarn: the ramp's fast end in rotations (default 32)"},
    {"rope.scaling.yarn_beta_slow", ALL, ROW_FLOAT, CFG(yarn_beta_slow), NULL, NULL, 0,
     "yarn: the ramp's slow end (default 1)"},
    {"rope.scaling.yarn_attn_factor", ALL, ROW_FLOAT, CFG(rope_attn_factor), NULL, NULL, 0,
     "yarn: HF's attention_factor, which the converter writes here (default 0.1 ln(factor) + 1)"},
    ONLY("rope.scaling.yarn_ext_factor", ALL, "1", "yarn: the ramp's weight of extrapolation, as HF's"),
    {"rope.scaling.attn_factor", B(K_PHI3), ROW_FLOAT, CFG(rope_attn_factor), NULL, NULL, 0,
     "longrope's attention factor (default as HF's: sqrt(1 + ln(context / original) / ln(original)))"},
    ONLY("attention.causal", ALL, "true", "attention is causal"),
    ONLY("expert_count", ALL & ~MOE, "0", "mixture-of-experts layers: none in this architecture"),
    ONLY("expert_used_count", ALL & ~MOE, "0", "mixture-of-experts layers: none in this architecture"),
    {"expert_count", MOE, ROW_INT, CFG(n_experts), NULL, NULL, 0,
     "experts per MoE layer (0: none); a layer is MoE iff it has blk.N.ffn_gate_inp.weight"},
    {"expert_used_count", MOE, ROW_INT, CFG(n_experts_used), NULL, NULL, 0,
     "experts each token goes to: the top ones by router probability, the lower index among equal ones"},
    {"expert_feed_forward_length", MOE, ROW_INT, CFG(moe_ffn_dim), NULL, NULL, 0,
     "each expert's MLP width (default feed_forward_length)"},
    {"expert_shared_feed_forward_length", B(K_QWEN2MOE), ROW_INT, CFG(shared_ffn_dim), NULL, NULL, 0,
     "the shared expert's MLP width (default: its tensors' shape)"},
    FN("expert_weights_norm", MOE, row_moe_norm,
       "the top-k routing weights divided by their sum (default llama.cpp's: llama, qwen3moe yes; olmoe, qwen2moe no)"),
    ONLY("expert_gating_func", MOE, "1", "the router's probabilities: softmax"),
    FN("attention.scale", ALL, row_scale,
       "the score scale (default: head_dim^-1/2; gemma2/3 by llama.cpp's rule: 27B (46 / 62 layers) "
       "(hidden / heads)^-1/2)"),
    {"attention.sliding_window", GEMMA | B(K_PHI3), ROW_INT, CFG(sliding_window), NULL, NULL, 0,
     "the sliding-window layers' window (default: gemma 4096; phi3 0, none: every layer has it when set)"},
    FN("attention.sliding_window_pattern", GEMMA, row_pattern,
       "which layers are sliding-window: n (layer l is iff l % n < n - 1, as llama.cpp) or one bool per layer "
       "(default: gemma2 2, gemma3 6)"),
    FN("rope.freq_base_swa", B(K_GEMMA3), row_swa_base, "RoPE base of the sliding-window layers (default 10000)"),
    {"attn_logit_softcapping", B(K_GEMMA2), ROW_FLOAT, CFG(attn_softcap), NULL, NULL, 0,
     "scores = cap * tanh(scores / cap) (default 50)"},
    {"final_logit_softcapping", GEMMA, ROW_FLOAT, CFG(final_softcap), NULL, NULL, 0,
     "logits = cap * tanh(logits / cap) (default: gemma2 30, gemma3 none)"},
};
const int aha_n_gguf_rows = sizeof aha_gguf_rows / sizeof *aha_gguf_rows;

// A row's key: the name, or "{arch}." + name.
static void row_key(const cfg_row *r, const char *arch, char *buf, size_t n) {
    int global = !strncmp(r->name, "general.", 8) || !strncmp(r->name, "split.", 6) || !strncmp(r->name, "quantize.", 9);
    if (global) snprintf(buf, n, "%s", r->name);
    else snprintf(buf, n, "%s.%s", arch, r->name);
}

static int read_rows(gguf_parse *p, const char *arch) {
    for (int i = 0; i < aha_n_gguf_rows; i++) {
        const cfg_row *r = &aha_gguf_rows[i];
        if (!(r->types & B(p->arch)) || r->kind == ROW_INFO || r->kind == ROW_ARCH) continue;
        char key[160], text[80];
        row_key(r, arch, key, sizeof key);
        const aha_gguf_kv *kv = aha_gguf_get(p->g, key);
        if (!kv) {
            if (r->required) aha_err("%s: missing metadata key '%s'", p->g->path, key);
            if (r->required) return -1;
            continue;
        }
        void *dst = (char *)p->c + r->off;
        int rc = 0;
        switch (r->kind) {
        case ROW_INT: rc = kv_int(p, kv, dst); break;
        case ROW_FLOAT:
        case ROW_CAP: rc = kv_float(p, kv, dst); break;
        case ROW_ONLY:
            kv_text(kv, text, sizeof text);
            if (!aha_cfg_only(r->only, text)) {
                aha_err("%s: key '%s' is %s: not implemented (only %s)", p->g->path, key, text, r->only);
                rc = -1;
            }
            break;
        case ROW_FN: rc = r->fn(p, kv); break;
        default: break;
        }
        if (rc) return -1;
    }
    return 0;
}

// Whether a key no row read is one this architecture accepts unread: the
// tokenizer's (runtime/tokenizer checks those), or an informational row's.
static int known_key(const char *key, const void *ctx) {
    const gguf_parse *p = ctx;
    const char *arch = aha_kinds[p->arch].gguf;
    size_t n = strlen(arch);
    const char *name = !strncmp(key, arch, n) && key[n] == '.' ? key + n + 1 : key;
    return !strncmp(key, "tokenizer.", 10) || aha_cfg_row(aha_gguf_rows, aha_n_gguf_rows, name, B(p->arch)) != NULL;
}

// Which layers are sliding-window: Gemma's pattern (llama.cpp's rule for a
// number, or one bool per layer), else the architecture's default; phi3:
// every layer, when it has a window.
static int derive_layers(gguf_parse *p) {
    aha_config *c = p->c;
    const aha_gguf_kv *kv = p->pattern;
    int n = c->arch == AHA_ARCH_GEMMA2 ? 2 : 6;
    if (c->n_layers > AHA_MAX_LAYERS) return 0; // aha_config_check says so
    if (c->sliding_window >= c->max_ctx) c->sliding_window = 0; // it never drops a key of a context aha runs
    if (!(GEMMA & B(p->arch))) {
        for (int l = 0; l < c->n_layers; l++) c->layer_local[l] = c->sliding_window > 0;
        return 0;
    }
    if (!kv) c->defaults |= AHA_DEFAULT_PATTERN;
    if (kv && kv->type == GGUF_ARRAY) {
        if (kv->v.arr.type != GGUF_BOOL || kv->v.arr.n != (uint64_t)c->n_layers) {
            aha_err("%s: '%s' is not %d bools, one per layer", p->g->path, kv->key, c->n_layers);
            return -1;
        }
        for (int l = 0; l < c->n_layers; l++) c->layer_local[l] = kv->v.arr.data[l] != 0;
        return 0;
    }
    if (kv && kv_int(p, kv, &n) < 0) return -1;
    for (int l = 0; l < c->n_layers; l++) c->layer_local[l] = n == 0 || l % n < n - 1;
    return 0;
}

// Gemma beyond the rows: llama.cpp's score scale where the file has none,
// the layer pattern, the local base's default.
static int derive_gemma(gguf_parse *p) {
    aha_config *c = p->c;
    if (c->defaults & AHA_DEFAULT_SCALE) { // llama.cpp: the 27B models scale by hidden / heads
        int big = c->n_layers == (c->arch == AHA_ARCH_GEMMA2 ? 46 : 62);
        c->attn_scale = 1.0f / sqrtf((float)(big && c->n_heads ? c->dim / c->n_heads : c->head_dim));
    }
    aha_config_gemma(c);
    return 0;
}

// One of longrope's factor tensors (rope_factors_long / _short.weight) into out[half].
static int longrope_factors(const gguf_parse *p, const char *name, float *out) {
    const int half = p->c->head_dim / 2;
    const aha_tensor *t = aha_gguf_find(p->g, name);
    if (!t || t->dtype != AHA_F32 || t->ndim != 1 || t->shape[0] != half || half > AHA_MAX_ROPE_PAIRS) {
        aha_err("%s: longrope needs tensor '%s': %d f32 factors (head_dim / 2)", p->g->path, name, half);
        return -1;
    }
    memcpy(out, t->data, (size_t)half * sizeof(float));
    for (int i = 0; i < half; i++) {
        if (!(isfinite(out[i]) && out[i] > 0)) {
            aha_err("%s: tensor '%s' [%d] is %g: a factor must be finite and positive", p->g->path, name, i, out[i]);
            return -1;
        }
    }
    return 0;
}

// RoPE scaling beyond the rows: a factor without a type is linear (as
// llama.cpp); yarn's and longrope's defaults as HF's; longrope's factors
// (phi3: its tensors, with or without a type key).
static int derive_rope(gguf_parse *p) {
    aha_config *c = p->c;
    const aha_gguf *g = p->g;
    const int has_lr = aha_gguf_find(g, "rope_factors_long.weight") || aha_gguf_find(g, "rope_factors_short.weight");
    const char *t = p->scaling ? p->scaling : has_lr ? "longrope" : p->factor > 0 ? "linear" : "none";
    if (!strcmp(t, "linear")) {
        c->rope_scaling = AHA_SCALING_LINEAR;
        c->rope_factor = p->factor > 0 ? p->factor : 1;
    }
    if (!strcmp(t, "yarn")) {
        if (!(p->factor > 0)) {
            aha_err("%s: yarn rope scaling without rope.scaling.factor", g->path);
            return -1;
        }
        c->rope_scaling = AHA_SCALING_YARN;
        c->rope_factor = p->factor;
        if (!(c->rope_attn_factor > 0)) c->rope_attn_factor = (float)aha_config_yarn_factor(p->factor, 1);
    }
    if (!strcmp(t, "longrope")) {
        if (p->arch != K_PHI3 || !has_lr) {
            aha_err("%s: longrope scaling needs phi3's rope_factors_long.weight and rope_factors_short.weight",
                    g->path);
            return -1;
        }
        c->rope_scaling = AHA_SCALING_LONGROPE;
        if (longrope_factors(p, "rope_factors_short.weight", c->rope_short) < 0 ||
            longrope_factors(p, "rope_factors_long.weight", c->rope_long) < 0)
            return -1;
    }
    if (has_lr && c->rope_scaling != AHA_SCALING_LONGROPE) {
        aha_err("%s: tensors rope_factors_long / rope_factors_short with rope scaling '%s'", g->path, t);
        return -1;
    }
    // a scheme's keys without the scheme: what they would change is not implemented
    static const struct {
        const char *key;
        aha_rope_scaling with;
    } own[] = {
        {"rope.scaling.yarn_beta_fast", AHA_SCALING_YARN},   {"rope.scaling.yarn_beta_slow", AHA_SCALING_YARN},
        {"rope.scaling.yarn_attn_factor", AHA_SCALING_YARN}, {"rope.scaling.yarn_ext_factor", AHA_SCALING_YARN},
        {"rope.scaling.attn_factor", AHA_SCALING_LONGROPE},
    };
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        char key[96];
        snprintf(key, sizeof key, "%s.%s", aha_kinds[p->arch].gguf, own[i].key);
        if (aha_gguf_get(g, key) && c->rope_scaling != own[i].with) {
            aha_err("%s: key '%s' with rope scaling '%s': not implemented", g->path, key, t);
            return -1;
        }
    }
    if (c->rope_scaling == AHA_SCALING_YARN || c->rope_scaling == AHA_SCALING_LONGROPE) {
        if (c->rope_orig_ctx <= 0) c->rope_orig_ctx = c->max_ctx; // llama.cpp: n_ctx_orig_yarn = n_ctx_train
        c->rope_factor =
            c->rope_scaling == AHA_SCALING_LONGROPE ? (float)((double)c->max_ctx / c->rope_orig_ctx) : c->rope_factor;
    }
    if (c->rope_scaling == AHA_SCALING_LONGROPE && !(c->rope_attn_factor > 0)) {
        const double f = c->rope_factor;
        c->rope_attn_factor = f <= 1 ? 1.0f : (float)sqrt(1 + log(f) / log((double)c->rope_orig_ctx));
    }
    return 0;
}

// Mixture of experts beyond the rows: a layer is MoE iff it has a router
// (blk.N.ffn_gate_inp.weight), as llama.cpp's loaders decide per file; the
// widths and the renormalisation's default.
static int derive_moe(gguf_parse *p) {
    aha_config *c = p->c;
    if (!c->n_experts) return 0;
    if (c->n_experts_used < 1 || c->n_experts_used > c->n_experts) {
        aha_err("%s: expert_used_count %d with %d experts", p->g->path, c->n_experts_used, c->n_experts);
        return -1;
    }
    if (!c->moe_ffn_dim) c->moe_ffn_dim = c->ffn_dim;
    if (!p->moe_norm_set) { // llama.cpp's build: Mixtral (llama) and Qwen3-MoE renormalise
        c->moe_norm_topk = p->arch == K_LLAMA || p->arch == K_QWEN3MOE;
        c->defaults |= AHA_DEFAULT_MOE_NORM;
    }
    for (int l = 0; l < c->n_layers && l < AHA_MAX_LAYERS; l++) { // (aha_config_check bounds n_layers)
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
        c->layer_moe[l] = aha_gguf_find(p->g, name) != NULL;
        snprintf(name, sizeof name, "blk.%d.ffn_up_shexp.weight", l);
        const aha_tensor *sh = aha_gguf_find(p->g, name);
        if (sh && !c->shared_ffn_dim && sh->ndim == 2) c->shared_ffn_dim = (int)sh->shape[0];
    }
    return 0;
}

// What an architecture computes, set once: the forward pass, CUDA, fit and
// aha info read these fields and never the architecture.
static void arch_flags(aha_config *c, int a) {
    c->norms = a == K_OLMO2 ? AHA_NORMS_POST : GEMMA & B(a) ? AHA_NORMS_BOTH : AHA_NORMS_PRE;
    c->qk_norm = a == K_OLMO2 || a == K_OLMOE                       ? AHA_QK_NORM_FULL
                 : a == K_QWEN3 || a == K_QWEN3MOE || a == K_GEMMA3 ? AHA_QK_NORM_HEAD
                                                                    : AHA_QK_NORM_NONE;
    c->qkv_bias = a == K_QWEN2 || a == K_QWEN2MOE;
    c->fused_qkv = c->fused_gate_up = a == K_PHI3;
    // llama.cpp's converter permutes llama-style Q/K rows for adjacent-pair
    // RoPE (its LlamaModel: llama, Mixtral, SmolLM3); the others keep HF's
    // rotate-half layout.
    c->rope_pairing = a == K_LLAMA || a == K_SMOLLM3 ? AHA_ROPE_ADJACENT : AHA_ROPE_HALF;
    c->rope_freqs_tensor = a == K_LLAMA; // llama.cpp applies rope_freqs.weight to llama only
    c->yarn_beta_fast = 32;
    c->yarn_beta_slow = 1;
    c->yarn_truncate = 1; // ggml's YaRN rounds the ramp's ends out, as HF's default
}

int aha_config_from_gguf(aha_config *c, const aha_gguf *g) {
    memset(c, 0, sizeof *c);
    aha_gguf_str s;
    if (aha_gguf_get_str(g, "general.architecture", &s) != 0) {
        aha_err("%s: missing metadata key 'general.architecture'", g->path);
        return -1;
    }
    char arch[64];
    snprintf(arch, sizeof arch, "%.*s", (int)(s.len < 63 ? s.len : 63), s.s);
    int a = 0;
    while (a < AHA_N_KINDS && !(aha_kinds[a].gguf && strcmp(aha_kinds[a].gguf, arch) == 0)) a++;
    if (a == AHA_N_KINDS) {
        char names[400];
        aha_kind_names(AHA_KINDS_GGUF, 1, names, sizeof names);
        aha_err("%s: unknown architecture '%s' (supported: %s)", g->path, arch, names);
        return -1;
    }
    gguf_parse p = {.c = c, .g = g, .arch = a, .value_length = -1, .rot_dims = -1};
    c->arch = aha_kinds[a].arch;
    arch_flags(c, a);
    c->norm_eps = 1e-6f;
    c->rope_theta = a == K_GEMMA3 ? 1e6f : 10000.f;
    c->max_ctx = 2048;
    c->n_kv_heads = c->head_dim = -1; // derived below when absent
    const aha_tensor *emb = aha_gguf_find(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) {
        aha_err("%s: missing tensor 'token_embd.weight'", g->path);
        return -1;
    }
    c->vocab = (int)emb->shape[0];
    c->tied = aha_gguf_find(g, "output.weight") == NULL;
    if (GEMMA & B(a)) {
        c->sliding_window = 4096;
        c->attn_softcap = a == K_GEMMA2 ? 50.f : 0;
        c->final_softcap = a == K_GEMMA2 ? 30.f : 0;
        c->rope_local_theta = a == K_GEMMA3 ? 10000.f : 0;
        c->defaults = AHA_DEFAULT_SCALE | (a == K_GEMMA3 ? AHA_DEFAULT_SWA_BASE : 0);
    }
    if (read_rows(&p, arch) < 0) return -1;
    const char *key = aha_gguf_unread(g, "", known_key, &p);
    if (key) {
        aha_err("%s: key '%s' is not implemented for %s: refused rather than ignored "
                "(docs/runtime.md lists the keys aha reads)", g->path, key, arch);
        return -1;
    }
    if (c->n_kv_heads < 0) c->n_kv_heads = c->n_heads;
    if (c->head_dim < 0) c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    if ((p.value_length >= 0 && p.value_length != c->head_dim) || (p.rot_dims >= 0 && p.rot_dims != c->head_dim)) {
        aha_err("%s: %s is %d, the head dimension %d: not implemented", g->path,
                p.rot_dims >= 0 && p.rot_dims != c->head_dim ? "rope.dimension_count" : "attention.value_length",
                p.rot_dims >= 0 && p.rot_dims != c->head_dim ? p.rot_dims : p.value_length, c->head_dim);
        return -1;
    }
    if (derive_moe(&p) < 0 || aha_config_check(c, g->path) < 0) return -1; // the shapes the derivations below rely on
    if (a == K_SMOLLM3) { // llama.cpp: every 4th layer has no RoPE (no key says otherwise)
        for (int l = 0; l < c->n_layers; l++) c->layer_nope[l] = (l + 1) % 4 == 0;
        c->defaults |= AHA_DEFAULT_NOPE;
    }
    if (derive_rope(&p) < 0) return -1;
    if ((GEMMA & B(a)) && derive_gemma(&p) < 0) return -1;
    if (derive_layers(&p) < 0) return -1;
    return aha_config_check(c, g->path);
}
