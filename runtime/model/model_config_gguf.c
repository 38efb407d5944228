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

enum { LLAMA, QWEN2, QWEN3, OLMO2, GEMMA2, GEMMA3 };
#define B(t) (1u << (t))
#define ALL (B(LLAMA) | B(QWEN2) | B(QWEN3) | B(OLMO2) | B(GEMMA2) | B(GEMMA3))
#define GEMMA (B(GEMMA2) | B(GEMMA3))
const char *const aha_gguf_archs[] = {"llama", "qwen2", "qwen3", "olmo2", "gemma2", "gemma3"};
static const aha_arch archs[] = {AHA_ARCH_LLAMA, AHA_ARCH_QWEN2, AHA_ARCH_QWEN3,
                                 AHA_ARCH_OLMO2, AHA_ARCH_GEMMA2, AHA_ARCH_GEMMA3};

// What the rows leave for the derivations after them.
typedef struct {
    aha_config *c;
    const aha_gguf *g;
    int arch;                 // the architecture's bit
    const char *scaling;      // rope.scaling.type: NULL when absent
    float factor;             // rope.scaling.factor (or the old rope.scale_linear), 0 when absent
    int value_length;         // attention.value_length, -1 when absent
    int rot_dims;             // rope.dimension_count, -1 when absent
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

// ---- the keys read by handlers ------------------------------------------------

static int row_scaling(void *pv, const void *v) {
    gguf_parse *p = pv;
    const aha_gguf_kv *kv = v;
    if (kv->type != GGUF_STRING) {
        aha_err("%s: '%s' is not a string", p->g->path, kv->key);
        return -1;
    }
    char t[64];
    kv_text(kv, t, sizeof t);
    if (strcmp(t, "none") != 0 && strcmp(t, "linear") != 0) {
        aha_err("%s: '%s' is '%s': not implemented (none, linear)", p->g->path, kv->key, t);
        return -1;
    }
    p->scaling = kv->v.s.s[0] == 'n' ? "none" : "linear";
    return 0;
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
    {"general.architecture", ALL, ROW_ARCH, 0, NULL, NULL, 1, "the architecture: llama, qwen2, qwen3, olmo2, gemma2, gemma3"},
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
    {"feed_forward_length", ALL, ROW_INT, CFG(ffn_dim), NULL, NULL, 1, "MLP width"},
    {"attention.head_count_kv", ALL, ROW_INT, CFG(n_kv_heads), NULL, NULL, 0, "key/value heads (default: the query heads)"},
    {"attention.key_length", ALL, ROW_INT, CFG(head_dim), NULL, NULL, 0, "head dimension (default: hidden size / heads)"},
    FN("attention.value_length", ALL, row_value_length, "must equal the head dimension"),
    FN("rope.dimension_count", ALL, row_rot_dims, "rotated dimensions: must be the whole head (partial RoPE is not implemented)"),
    {"context_length", ALL, ROW_INT, CFG(max_ctx), NULL, NULL, 0,
     "trained context: longer contexts are refused (default 2048)"},
    {"vocab_size", ALL, ROW_INT, CFG(vocab), NULL, NULL, 0, "vocabulary (default: token_embd.weight's rows)"},
    {"attention.layer_norm_rms_epsilon", ALL, ROW_FLOAT, CFG(norm_eps), NULL, NULL, 0, "RMSNorm epsilon (default 1e-6)"},
    {"rope.freq_base", ALL, ROW_FLOAT, CFG(rope_theta), NULL, NULL, 0, "RoPE base (default 10000; gemma3 1e6)"},
    FN("rope.scaling.type", ALL, row_scaling, "none or linear (factor); llama3 scaling comes as the rope_freqs.weight tensor"),
    FN("rope.scaling.factor", ALL, row_factor, "linear scaling's factor: with type linear, or without a type (as llama.cpp)"),
    FN("rope.scale_linear", ALL, row_factor, "rope.scaling.factor's old name, read when it is absent (as llama.cpp)"),
    INFO("rope.scaling.finetuned", ALL, "a note on how the model was trained"),
    INFO("rope.scaling.original_context_length", ALL, "the context before linear scaling, a label (used by YaRN only)"),
    ONLY("attention.causal", ALL, "true", "attention is causal"),
    ONLY("expert_count", ALL, "0", "mixture-of-experts layers are not implemented"),
    ONLY("expert_used_count", ALL, "0", "mixture-of-experts layers are not implemented"),
    FN("attention.scale", ALL, row_scale,
       "the score scale (default: head_dim^-1/2; gemma2/3 by llama.cpp's rule: 27B (46 / 62 layers) "
       "(hidden / heads)^-1/2)"),
    {"attention.sliding_window", GEMMA, ROW_INT, CFG(sliding_window), NULL, NULL, 0,
     "the sliding-window layers' window (default 4096)"},
    FN("attention.sliding_window_pattern", GEMMA, row_pattern,
       "which layers are sliding-window: n (layer l is iff l % n < n - 1, as llama.cpp) or one bool per layer "
       "(default: gemma2 2, gemma3 6)"),
    FN("rope.freq_base_swa", B(GEMMA3), row_swa_base, "RoPE base of the sliding-window layers (default 10000)"),
    {"attn_logit_softcapping", B(GEMMA2), ROW_FLOAT, CFG(attn_softcap), NULL, NULL, 0,
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
    const char *arch = aha_gguf_archs[p->arch];
    size_t n = strlen(arch);
    const char *name = !strncmp(key, arch, n) && key[n] == '.' ? key + n + 1 : key;
    return !strncmp(key, "tokenizer.", 10) || aha_cfg_row(aha_gguf_rows, aha_n_gguf_rows, name, B(p->arch)) != NULL;
}

// Which layers are sliding-window: the file's pattern (llama.cpp's rule for
// a number, or one bool per layer), else the architecture's default.
static int derive_layers(gguf_parse *p) {
    aha_config *c = p->c;
    const aha_gguf_kv *kv = p->pattern;
    int n = c->arch == AHA_ARCH_GEMMA2 ? 2 : 6;
    if (c->n_layers > AHA_MAX_LAYERS) return 0; // aha_config_check says so
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
    return derive_layers(p);
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
    int a = 0, n = (int)(sizeof archs / sizeof *archs);
    while (a < n && strcmp(aha_gguf_archs[a], arch) != 0) a++;
    if (a == n) {
        aha_err("%s: unknown architecture '%s' (supported: llama, qwen2, qwen3, olmo2, gemma2, gemma3)", g->path, arch);
        return -1;
    }
    gguf_parse p = {.c = c, .g = g, .arch = a, .value_length = -1, .rot_dims = -1};
    c->arch = archs[a];
    // llama.cpp's converter permutes llama Q/K rows for adjacent-pair RoPE;
    // the other architectures keep HF's rotate-half layout.
    c->rope_pairing = c->arch == AHA_ARCH_LLAMA ? AHA_ROPE_ADJACENT : AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = c->arch == AHA_ARCH_GEMMA3 ? 1e6f : 10000.f;
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
        c->attn_softcap = a == GEMMA2 ? 50.f : 0;
        c->final_softcap = a == GEMMA2 ? 30.f : 0;
        c->rope_local_theta = a == GEMMA3 ? 10000.f : 0;
        c->defaults = AHA_DEFAULT_SCALE | (a == GEMMA3 ? AHA_DEFAULT_SWA_BASE : 0);
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
    if (p.factor > 0 && !(p.scaling && !strcmp(p.scaling, "none"))) { // llama.cpp: a factor without a type is linear
        c->rope_scaling = 1;
        c->rope_factor = p.factor;
    } else if (p.scaling && !strcmp(p.scaling, "linear")) {
        c->rope_scaling = 1;
        c->rope_factor = 1;
    }
    if ((GEMMA & B(a)) && derive_gemma(&p) < 0) return -1;
    return aha_config_check(c, g->path);
}
