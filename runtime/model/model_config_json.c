// A Hugging Face config.json, read by its rows (model_config_rows.h): every
// field present is read by a row of the model's type, or refused by name.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mapfile.h"
#include "model_config.h"
#include "model_config_rows.h"

#define HF_SLIDING_WINDOW 4096 // transformers' default sliding_window when config.json has none

// One bit per model_type aha reads; MM is the outer object of a multimodal
// Gemma-3 (Gemma3ForConditionalGeneration), whose text_config is a gemma3_text.
enum { LLAMA, MISTRAL, QWEN2, QWEN3, OLMO2, FAOLMO, GEMMA2, GEMMA3, MM };
#define B(t) (1u << (t))
#define ALL (B(LLAMA) | B(MISTRAL) | B(QWEN2) | B(QWEN3) | B(OLMO2) | B(FAOLMO) | B(GEMMA2) | B(GEMMA3))
#define GEMMA (B(GEMMA2) | B(GEMMA3))
#define QWEN (B(QWEN2) | B(QWEN3))
#define WINDOWED (GEMMA | QWEN | B(MISTRAL)) // the types with natively sliding-window layers
const char *const aha_json_types[] = {"llama",  "mistral", "qwen2",       "qwen3", "olmo2",
                                      "faolmo", "gemma2",  "gemma3_text", "gemma3"};

static const struct {
    aha_arch arch;
    int aha; // the q_proj carries router rows
} types[] = {
    [LLAMA] = {AHA_ARCH_LLAMA, 0}, [MISTRAL] = {AHA_ARCH_LLAMA, 0}, [QWEN2] = {AHA_ARCH_QWEN2, 0},
    [QWEN3] = {AHA_ARCH_QWEN3, 0}, [OLMO2] = {AHA_ARCH_OLMO2, 0},   [FAOLMO] = {AHA_ARCH_OLMO2, 1},
    [GEMMA2] = {AHA_ARCH_GEMMA2, 0}, [GEMMA3] = {AHA_ARCH_GEMMA3, 0}, [MM] = {AHA_ARCH_GEMMA3, 0},
};

// What the rows leave for the derivations after them.
typedef struct {
    aha_config *c;
    const char *path;       // config.json, for errors
    int type;               // the model_type's bit
    float qpas;             // query_pre_attn_scalar (gemma)
    int pattern;            // sliding_window_pattern (gemma3)
    int first_window_layer; // max_window_layers (qwen)
    int use_window;         // use_sliding_window (qwen)
    int tied_set;           // tie_word_embeddings was read (the text config's wins over the outer one's)
    const cJSON *layer_types;
} json_parse;

// A JSON value as one short line, for messages and ROW_ONLY.
static void json_text(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsString(v)) snprintf(buf, n, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v)) snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v)) snprintf(buf, n, "null");
    else snprintf(buf, n, "%s", cJSON_IsArray(v) ? "(an array)" : "(an object)");
}

static int json_int(const json_parse *p, const char *key, const cJSON *v, int *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 2e9) {
        aha_err("%s: \"%s\" is not a non-negative integer", p->path, key);
        return -1;
    }
    *out = (int)v->valuedouble;
    return 0;
}

static int json_float(const json_parse *p, const char *key, const cJSON *v, float *out) {
    if (!cJSON_IsNumber(v)) {
        aha_err("%s: \"%s\" is not a number", p->path, key);
        return -1;
    }
    *out = (float)v->valuedouble;
    return 0;
}

// ---- the fields read by handlers --------------------------------------------

// One rope_scaling / rope_parameters object: the scaling of the layers it is
// for (the global ones), every field of it read or refused. local: Gemma-3's
// sliding_attention entry, whose only scaling is none.
static int rope_object(json_parse *p, const char *what, const cJSON *o, int local) {
    aha_config *c = p->c;
    if (!cJSON_IsObject(o)) {
        aha_err("%s: \"%s\" is not an object", p->path, what);
        return -1;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(o, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "default";
    // the fields of each scaling type (rope_theta only in transformers 5's rope_parameters)
    static const struct {
        const char *type, *fields;
        int scaling;
    } kinds[] = {
        {"default", "rope_type type rope_theta", 0},
        {"linear", "rope_type type rope_theta factor", 1},
        {"llama3", "rope_type type rope_theta factor low_freq_factor high_freq_factor original_max_position_embeddings", 2},
    };
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(t, kinds[i].type) == 0) k = i;
    if (k < 0 || (local && k > 0)) {
        aha_err("%s: %s: rope scaling '%s' is not implemented (%s)", p->path, what, t,
                local ? "none on the sliding-window layers" : "default, linear, llama3");
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        char word[80];
        snprintf(word, sizeof word, " %s ", e->string);
        char fields[160];
        snprintf(fields, sizeof fields, " %s ", kinds[k].fields);
        if (!strstr(fields, word)) {
            aha_err("%s: %s: field \"%s\" is not implemented for rope scaling '%s'", p->path, what, e->string, t);
            return -1;
        }
    }
    const cJSON *theta = cJSON_GetObjectItemCaseSensitive(o, "rope_theta");
    if (theta && json_float(p, "rope_theta", theta, local ? &c->rope_local_theta : &c->rope_theta) < 0) return -1;
    if (local) return 0;
    c->rope_scaling = kinds[k].scaling;
    if (!c->rope_scaling) return 0;
    const cJSON *factor = cJSON_GetObjectItemCaseSensitive(o, "factor");
    c->rope_factor = 1;
    if (factor && json_float(p, "factor", factor, &c->rope_factor) < 0) return -1;
    if (!(c->rope_factor > 0)) {
        aha_err("%s: %s: rope factor must be positive", p->path, what);
        return -1;
    }
    if (c->rope_scaling == 1) return 0;
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, "low_freq_factor"),
                *hi = cJSON_GetObjectItemCaseSensitive(o, "high_freq_factor"),
                *ctx = cJSON_GetObjectItemCaseSensitive(o, "original_max_position_embeddings");
    if (!lo || !hi || !ctx || json_float(p, "low_freq_factor", lo, &c->rope_low_freq) < 0 ||
        json_float(p, "high_freq_factor", hi, &c->rope_high_freq) < 0 ||
        json_int(p, "original_max_position_embeddings", ctx, &c->rope_orig_ctx) < 0 ||
        !(c->rope_high_freq > c->rope_low_freq) || c->rope_orig_ctx <= 0) {
        aha_err("%s: llama3 rope scaling needs low_freq_factor < high_freq_factor "
                "and original_max_position_embeddings", p->path);
        return -1;
    }
    return 0;
}

// transformers 4's rope_scaling: null, or the global layers' scaling.
static int row_rope_scaling(void *pv, const void *v) {
    return cJSON_IsNull(v) ? 0 : rope_object(pv, "rope_scaling", v, 0);
}

// transformers 5's rope_parameters: one object, or per layer type (Gemma-3:
// full_attention is the global layers', sliding_attention the local ones').
static int row_rope_parameters(void *pv, const void *v) {
    json_parse *p = pv;
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(v, "full_attention"),
                *local = cJSON_GetObjectItemCaseSensitive(v, "sliding_attention");
    if (cJSON_IsNull(v)) return 0;
    if (!full && !local) return rope_object(p, "rope_parameters", v, 0);
    const cJSON *e;
    cJSON_ArrayForEach(e, (const cJSON *)v) {
        int is_local = strcmp(e->string, "sliding_attention") == 0;
        if ((!is_local && strcmp(e->string, "full_attention") != 0) || (is_local && p->type != GEMMA3)) {
            aha_err("%s: rope_parameters: layer type \"%s\" is not implemented for %s", p->path, e->string,
                    aha_json_types[p->type]);
            return -1;
        }
        char what[64];
        snprintf(what, sizeof what, "rope_parameters.%s", e->string);
        if (rope_object(p, what, e, is_local) < 0) return -1;
    }
    return 0;
}

static int row_qpas(void *pv, const void *v) {
    json_parse *p = pv;
    if (json_float(p, "query_pre_attn_scalar", v, &p->qpas) < 0) return -1;
    if (!(p->qpas > 0)) {
        aha_err("%s: query_pre_attn_scalar must be positive", p->path);
        return -1;
    }
    return 0;
}

// sliding_window: null is none (absent: HF's default, preset).
static int row_window(void *pv, const void *v) {
    json_parse *p = pv;
    p->c->sliding_window = 0;
    return cJSON_IsNull(v) ? 0 : json_int(p, "sliding_window", v, &p->c->sliding_window);
}

static int row_use_window(void *pv, const void *v) {
    json_parse *p = pv;
    p->use_window = cJSON_IsTrue(v);
    if (!cJSON_IsBool(v)) aha_err("%s: \"use_sliding_window\" is not true or false", p->path);
    return cJSON_IsBool(v) ? 0 : -1;
}

static int row_max_window_layers(void *pv, const void *v) {
    json_parse *p = pv;
    return json_int(p, "max_window_layers", v, &p->first_window_layer);
}

static int row_pattern(void *pv, const void *v) {
    json_parse *p = pv;
    if (json_int(p, "sliding_window_pattern", v, &p->pattern) < 0) return -1;
    if (p->pattern < 1) aha_err("%s: sliding_window_pattern must be >= 1", p->path);
    return p->pattern < 1 ? -1 : 0;
}

static int row_layer_types(void *pv, const void *v) {
    json_parse *p = pv;
    p->layer_types = v;
    if (!cJSON_IsArray(v)) aha_err("%s: \"layer_types\" is not an array", p->path);
    return cJSON_IsArray(v) ? 0 : -1;
}

static int row_tied(void *pv, const void *v) {
    json_parse *p = pv;
    if (!cJSON_IsBool(v)) {
        aha_err("%s: \"tie_word_embeddings\" is not true or false", p->path);
        return -1;
    }
    if (!p->tied_set) p->c->tied = cJSON_IsTrue(v);
    p->tied_set = 1;
    return 0;
}

#define CFG(f) offsetof(aha_config, f)
#define INFO(name, t, why) {name, t, ROW_INFO, 0, NULL, NULL, 0, why}
#define ONLY(name, t, values, why) {name, t, ROW_ONLY, 0, values, NULL, 0, why}
#define FN(name, t, fn, why) {name, t, ROW_FN, 0, NULL, fn, 0, why}

// In the order they are read: rope_parameters after rope_theta and
// rope_local_base_freq (its bases win), rope_scaling after rope_parameters
// (its scaling wins).
const cfg_row aha_json_rows[] = {
    {"model_type", ALL | B(MM), ROW_ARCH, 0, NULL, NULL, 1, "the architecture: llama, mistral, qwen2, qwen3, olmo2, "
     "faolmo (OLMo-2 with AHA router rows), gemma2, gemma3_text, gemma3 (multimodal: its text_config is read)"},
    {"hidden_size", ALL, ROW_INT, CFG(dim), NULL, NULL, 1, "hidden size"},
    {"num_hidden_layers", ALL, ROW_INT, CFG(n_layers), NULL, NULL, 1, "layers"},
    {"num_attention_heads", ALL, ROW_INT, CFG(n_heads), NULL, NULL, 1, "query heads"},
    {"intermediate_size", ALL, ROW_INT, CFG(ffn_dim), NULL, NULL, 1, "MLP width"},
    {"vocab_size", ALL, ROW_INT, CFG(vocab), NULL, NULL, 1, "vocabulary"},
    {"num_key_value_heads", ALL, ROW_INT, CFG(n_kv_heads), NULL, NULL, 0, "key/value heads (default: the query heads)"},
    {"head_dim", ALL, ROW_INT, CFG(head_dim), NULL, NULL, 0, "head dimension (default: hidden size / heads)"},
    {"max_position_embeddings", ALL, ROW_INT, CFG(max_ctx), NULL, NULL, 0,
     "trained context: longer contexts are refused (default 2048)"},
    {"rms_norm_eps", ALL, ROW_FLOAT, CFG(norm_eps), NULL, NULL, 0, "RMSNorm epsilon (default 1e-6)"},
    {"rope_theta", ALL, ROW_FLOAT, CFG(rope_theta), NULL, NULL, 0, "RoPE base (default 10000; gemma3 1e6)"},
    {"rope_local_base_freq", B(GEMMA3), ROW_FLOAT, CFG(rope_local_theta), NULL, NULL, 0,
     "RoPE base of the sliding-window layers (transformers 4; default 10000)"},
    FN("rope_parameters", ALL, row_rope_parameters,
       "RoPE base and scaling (transformers 5): default, linear (factor) or llama3 (factor, low_freq_factor, "
       "high_freq_factor, original_max_position_embeddings); gemma3: per layer type, the sliding layers unscaled"),
    FN("rope_scaling", ALL, row_rope_scaling, "RoPE scaling (transformers 4), as rope_parameters; null: none"),
    FN("tie_word_embeddings", ALL | B(MM), row_tied,
       "lm_head is the embedding matrix (default: false; gemma true; the text config's wins)"),
    ONLY("hidden_act", ALL & ~GEMMA, "silu", "the MLP's activation: SwiGLU"),
    INFO("hidden_act", GEMMA, "not read by HF's Gemma MLP (hidden_activation is)"),
    ONLY("hidden_activation", GEMMA, "gelu_pytorch_tanh", "the MLP's activation: GeGLU with tanh GELU"),
    ONLY("attention_bias", ALL & ~B(QWEN2), "false", "biases on the attention projections: none"),
    INFO("attention_bias", B(QWEN2), "Qwen2 always has q/k/v biases (HF's Qwen2 does not read the field)"),
    ONLY("mlp_bias", B(LLAMA), "false", "biases on the MLP projections: none"),
    ONLY("use_mrope", B(QWEN2), "false", "multimodal RoPE sections: none"),
    FN("sliding_window", WINDOWED, row_window,
       "the sliding-window layers' window (default 4096, HF's; null: none; qwen2/3: only with use_sliding_window)"),
    FN("use_sliding_window", QWEN, row_use_window, "whether the layers from max_window_layers on use sliding_window"),
    FN("max_window_layers", QWEN, row_max_window_layers, "the first sliding-window layer (default 28)"),
    FN("layer_types", WINDOWED, row_layer_types,
       "each layer: sliding_attention or full_attention (absent: each type's rule, as HF derives it)"),
    FN("sliding_window_pattern", B(GEMMA3), row_pattern, "every n-th layer is global (default 6)"),
    FN("_sliding_window_pattern", B(GEMMA3), row_pattern, "as sliding_window_pattern (transformers 5's name)"),
    FN("query_pre_attn_scalar", GEMMA, row_qpas, "scores scaled by its -1/2 power (default 256)"),
    {"final_logit_softcapping", GEMMA, ROW_CAP, CFG(final_softcap), NULL, NULL, 0,
     "logits = cap * tanh(logits / cap) (default: gemma2 30, gemma3 none; null: none)"},
    {"attn_logit_softcapping", B(GEMMA2), ROW_CAP, CFG(attn_softcap), NULL, NULL, 0,
     "scores = cap * tanh(scores / cap) (default 50; null: none)"},
    INFO("attn_logit_softcapping", B(GEMMA3), "HF's Gemma-3 attention applies no softcap, whatever the field says"),
    ONLY("use_bidirectional_attention", GEMMA, "false|null", "attention is causal"),
    INFO("cache_implementation", GEMMA, "HF's cache layout: the same numbers"),
    INFO("attention_dropout", ALL, "dropout: off at inference"),
    INFO("pretraining_tp", B(LLAMA), "old transformers' split of the same products for tensor parallelism"),
    INFO("use_cache", ALL, "HF's KV-cache switch: the same numbers"),
    INFO("initializer_range", ALL | B(MM), "the initialisation of training"),
    INFO("bos_token_id", ALL | B(MM), "generation settings: the tokenizer's own files give its special tokens"),
    INFO("eos_token_id", ALL | B(MM), "generation settings: the tokenizer's own files give its special tokens"),
    INFO("pad_token_id", ALL | B(MM), "aha never pads"),
    INFO("torch_dtype", ALL | B(MM), "the type the weights were saved in: each tensor's own is read"),
    INFO("dtype", ALL | B(MM), "the type the weights were saved in: each tensor's own is read"),
    INFO("transformers_version", ALL | B(MM), "the version that wrote the file"),
    INFO("architectures", ALL | B(MM), "HF's class names: model_type names the architecture"),
    INFO("_name_or_path", ALL | B(MM), "where the checkpoint came from"),
    INFO("auto_map", ALL | B(MM), "the Python files that define HF's classes (custom code): not run"),
    INFO("text_config", B(MM), "the language model's config, read as a gemma3_text config"),
    INFO("vision_config", B(MM), "the vision tower: aha runs the language model on text"),
    INFO("mm_tokens_per_image", B(MM), "image tokens: aha runs on text"),
    INFO("boi_token_index", B(MM), "image tokens: aha runs on text"),
    INFO("eoi_token_index", B(MM), "image tokens: aha runs on text"),
    INFO("image_token_index", B(MM), "image tokens: aha runs on text"),
};
const int aha_n_json_rows = sizeof aha_json_rows / sizeof *aha_json_rows;

// Every field of o read by its row for the model's type, or refused.
static int read_rows(json_parse *p, const cJSON *o, int type) {
    for (int i = 0; i < aha_n_json_rows; i++) {
        const cfg_row *r = &aha_json_rows[i];
        if (!(r->types & B(type))) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, r->name);
        if (!v) {
            if (r->required) aha_err("%s: missing \"%s\"", p->path, r->name);
            if (r->required) return -1;
            continue;
        }
        char text[64];
        void *dst = (char *)p->c + r->off;
        int rc = 0;
        switch (r->kind) {
        case ROW_INT: rc = json_int(p, r->name, v, dst); break;
        case ROW_CAP:
            if (cJSON_IsNull(v)) *(float *)dst = 0;
            else rc = json_float(p, r->name, v, dst);
            break;
        case ROW_FLOAT: rc = json_float(p, r->name, v, dst); break;
        case ROW_BOOL:
            if (!cJSON_IsBool(v)) aha_err("%s: \"%s\" is not true or false", p->path, r->name), rc = -1;
            else *(int *)dst = cJSON_IsTrue(v);
            break;
        case ROW_ONLY:
            json_text(v, text, sizeof text);
            if (!aha_cfg_only(r->only, text)) {
                aha_err("%s: \"%s\" is %s: not implemented (only %s)", p->path, r->name, text, r->only);
                rc = -1;
            }
            break;
        case ROW_FN: rc = r->fn(p, v); break;
        case ROW_ARCH:
        case ROW_INFO: break;
        }
        if (rc) return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        if (aha_cfg_row(aha_json_rows, aha_n_json_rows, e->string, B(type))) continue;
        char text[64];
        json_text(e, text, sizeof text);
        aha_err("%s: field \"%s\" (%s) is not implemented for %s: refused rather than ignored "
                "(docs/runtime.md lists the fields aha reads)", p->path, e->string, text, aha_json_types[type]);
        return -1;
    }
    return 0;
}

// Which layers are natively sliding-window: layer_types, else each type's
// rule as its HF config class derives it.
static int derive_layers(json_parse *p) {
    aha_config *c = p->c;
    if (QWEN & B(p->type) && !p->use_window) c->sliding_window = 0;
    if (c->n_layers > AHA_MAX_LAYERS) return 0; // aha_config_check says so
    if (p->layer_types) {
        if (cJSON_GetArraySize(p->layer_types) != c->n_layers) {
            aha_err("%s: layer_types has %d entries for %d layers", p->path, cJSON_GetArraySize(p->layer_types),
                    c->n_layers);
            return -1;
        }
        int l = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, p->layer_types) {
            const char *t = cJSON_IsString(e) ? e->valuestring : "";
            if (strcmp(t, "sliding_attention") != 0 && strcmp(t, "full_attention") != 0) {
                aha_err("%s: layer_types[%d] '%s' is not implemented (sliding_attention, full_attention)", p->path, l, t);
                return -1;
            }
            c->layer_local[l++] = t[0] == 's';
        }
        return 0;
    }
    for (int l = 0; l < c->n_layers; l++) {
        if (GEMMA & B(p->type)) c->layer_local[l] = aha_gemma_layer_local(c->arch, l, p->pattern);
        else if (QWEN & B(p->type)) c->layer_local[l] = c->sliding_window > 0 && l >= p->first_window_layer;
        else c->layer_local[l] = c->sliding_window > 0; // mistral: every layer
    }
    return 0;
}

// The object's model_type as a type bit, or -1 with an error.
static int model_type(const cJSON *o, const char *path) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "model_type");
    if (!cJSON_IsString(mt)) {
        aha_err("%s: missing \"model_type\"", path);
        return -1;
    }
    for (int t = 0; t <= MM; t++)
        if (strcmp(aha_json_types[t], mt->valuestring) == 0) return t;
    aha_err("%s: unknown architecture '%s' (supported: llama, mistral, qwen2, "
            "qwen3, olmo2, faolmo, gemma2, gemma3_text, gemma3)", path, mt->valuestring);
    return -1;
}

static int parse(aha_config *c, const cJSON *root, const char *path) {
    json_parse p = {.c = c, .path = path, .qpas = 256, .pattern = 6, .first_window_layer = 28};
    int type = model_type(root, path);
    if (type < 0) return -1;
    const cJSON *text = root;
    if (type == MM) { // multimodal: the language model's config, then the outer fields
        text = cJSON_GetObjectItemCaseSensitive(root, "text_config");
        if (!cJSON_IsObject(text)) {
            aha_err("%s: gemma3 config without a \"text_config\" object", path);
            return -1;
        }
        if ((type = model_type(text, path)) < 0) return -1;
        if (type != GEMMA3) {
            aha_err("%s: gemma3's text_config is a %s config (gemma3_text expected)", path, aha_json_types[type]);
            return -1;
        }
    }
    p.type = type;
    c->arch = types[type].arch;
    c->aha = types[type].aha;
    c->rope_pairing = AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = type == GEMMA3 ? 1e6f : 10000.f; // Gemma3TextConfig: global 1e6
    c->rope_local_theta = type == GEMMA3 ? 10000.f : 0; // Gemma3TextConfig.default_theta["local"]
    c->max_ctx = 2048;
    c->n_kv_heads = c->head_dim = -1; // derived below when absent
    c->tied = (GEMMA & B(type)) != 0; // HF's config classes: Gemma ties by default
    c->final_softcap = type == GEMMA2 ? 30.f : 0;
    c->attn_softcap = type == GEMMA2 ? 50.f : 0;
    if (WINDOWED & B(type)) c->sliding_window = HF_SLIDING_WINDOW;
    if (read_rows(&p, text, type) < 0 || (text != root && read_rows(&p, root, MM) < 0)) return -1;
    if (c->n_kv_heads < 0) c->n_kv_heads = c->n_heads;
    if (c->head_dim < 0) c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    if (GEMMA & B(type)) {
        c->attn_scale = (float)pow((double)p.qpas, -0.5); // HF: scaling = query_pre_attn_scalar**-0.5
        aha_config_gemma(c);
    }
    if ((WINDOWED & B(type)) && derive_layers(&p) < 0) return -1;
    return aha_config_check(c, path);
}

int aha_config_from_json(aha_config *c, const char *path) {
    memset(c, 0, sizeof *c);
    aha_map map;
    if (aha_map_open(&map, path) != 0) return -1;
    cJSON *doc = cJSON_ParseWithLength((const char *)map.data, map.size);
    aha_map_close(&map);
    int rc = -1;
    if (!cJSON_IsObject(doc)) aha_err("%s: not a JSON object (malformed JSON?)", path);
    else rc = parse(c, doc, path);
    cJSON_Delete(doc);
    return rc;
}
