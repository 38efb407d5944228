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

#define B(t) (1u << (t))
#define MM K_GEMMA3_MM
#define ALL (AHA_KINDS_JSON & ~B(MM)) // every model_type but the multimodal wrapper
#define GEMMA (B(K_GEMMA2) | B(K_GEMMA3))
#define QWEN (B(K_QWEN2) | B(K_QWEN3))
#define QWEN_MOE (B(K_QWEN2MOE) | B(K_QWEN3MOE))
#define MOE (B(K_OLMOE) | QWEN_MOE | B(K_MIXTRAL))
#define OLMO (B(K_OLMO2) | B(K_FAOLMO))
#define EVERY_LAYER (B(K_MISTRAL) | B(K_PHI3) | B(K_MIXTRAL)) // sliding_window on every layer, or none
#define WINDOWED (GEMMA | QWEN | EVERY_LAYER)                 // the types with natively sliding-window layers
#define NO_WINDOWS (QWEN_MOE | B(K_SMOLLM3))                  // sliding windows declared, but only off is implemented

// What the rows leave for the derivations after them.
typedef struct {
    aha_config *c;
    const char *path;       // config.json, for errors
    int type;               // the model_type's kind
    float qpas;             // query_pre_attn_scalar (gemma)
    int pattern;            // sliding_window_pattern (gemma3)
    int first_window_layer; // max_window_layers (qwen)
    int use_window;         // use_sliding_window (qwen)
    int tied_set;           // tie_word_embeddings was read (the text config's wins over the outer one's)
    const cJSON *layer_types;
    // the global layers' rope scaling, as read (derive_rope completes it)
    int orig_set;                            // rope_orig_ctx was given (phi3: its top-level field always is)
    int factor_set;                          // rope_factor was given (longrope and yarn derive it when not)
    float mscale, mscale_all_dim;            // yarn (0: not given)
    const cJSON *short_factor, *long_factor; // longrope's lists
    // mixture of experts and NoPE layers
    int sparse_step;       // decoder_sparse_step (qwen moe)
    const cJSON *mlp_only; // mlp_only_layers (qwen moe)
    const cJSON *no_rope;  // no_rope_layers (smollm3)
    int no_rope_interval;  // no_rope_layer_interval (smollm3)
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

// The rope scaling types and the fields each reads (rope_theta only in
// transformers 5's rope_parameters; partial_rotary_factor only 1).
static const struct {
    const char *type, *fields;
    aha_rope_scaling scaling;
} rope_kinds[] = {
    {"default", "rope_type type rope_theta partial_rotary_factor", AHA_SCALING_NONE},
    {"linear", "rope_type type rope_theta partial_rotary_factor factor", AHA_SCALING_LINEAR},
    {"llama3",
     "rope_type type rope_theta partial_rotary_factor factor low_freq_factor high_freq_factor "
     "original_max_position_embeddings",
     AHA_SCALING_LLAMA3},
    {"yarn",
     "rope_type type rope_theta partial_rotary_factor factor original_max_position_embeddings "
     "attention_factor beta_fast beta_slow mscale mscale_all_dim truncate",
     AHA_SCALING_YARN},
    {"longrope",
     "rope_type type rope_theta partial_rotary_factor factor original_max_position_embeddings "
     "attention_factor short_factor long_factor",
     AHA_SCALING_LONGROPE},
};
#define N_ROPE_KINDS (int)(sizeof rope_kinds / sizeof rope_kinds[0])

// A number of a rope object, or NULL; null counts as absent (HF's `or`).
static const cJSON *rope_num(const json_parse *p, const char *what, const cJSON *o, const char *key, int *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsNumber(v)) {
        aha_err("%s: %s: \"%s\" is not a number", p->path, what, key);
        *bad = 1;
    }
    return cJSON_IsNumber(v) ? v : NULL;
}

// The scaling-specific fields of a rope object (the global layers').
static int rope_fields(json_parse *p, const char *what, const cJSON *o) {
    aha_config *c = p->c;
    int bad = 0;
    const cJSON *factor = rope_num(p, what, o, "factor", &bad),
                *orig = rope_num(p, what, o, "original_max_position_embeddings", &bad),
                *af = rope_num(p, what, o, "attention_factor", &bad);
    c->rope_factor = factor ? (float)factor->valuedouble : 1;
    p->factor_set = factor != NULL;
    if (orig && !p->orig_set) { // phi3's top-level field wins (HF copies it in)
        if (json_int(p, "original_max_position_embeddings", orig, &c->rope_orig_ctx) < 0) return -1;
        p->orig_set = 1;
    }
    if (af) c->rope_attn_factor = (float)af->valuedouble;
    if (c->rope_scaling == AHA_SCALING_YARN) {
        const cJSON *fast = rope_num(p, what, o, "beta_fast", &bad), *slow = rope_num(p, what, o, "beta_slow", &bad),
                    *ms = rope_num(p, what, o, "mscale", &bad), *msa = rope_num(p, what, o, "mscale_all_dim", &bad),
                    *tr = cJSON_GetObjectItemCaseSensitive(o, "truncate");
        c->yarn_beta_fast = fast && fast->valuedouble ? (float)fast->valuedouble : 32; // HF: `or 32`
        c->yarn_beta_slow = slow && slow->valuedouble ? (float)slow->valuedouble : 1;
        p->mscale = ms ? (float)ms->valuedouble : 0;
        p->mscale_all_dim = msa ? (float)msa->valuedouble : 0;
        if (tr && !cJSON_IsBool(tr) && !cJSON_IsNull(tr)) {
            aha_err("%s: %s: \"truncate\" is not true or false", p->path, what);
            return -1;
        }
        c->yarn_truncate = !tr || cJSON_IsNull(tr) || cJSON_IsTrue(tr);
    }
    if (c->rope_scaling == AHA_SCALING_LONGROPE) {
        p->short_factor = cJSON_GetObjectItemCaseSensitive(o, "short_factor");
        p->long_factor = cJSON_GetObjectItemCaseSensitive(o, "long_factor");
    }
    if (c->rope_scaling == AHA_SCALING_LLAMA3) {
        const cJSON *lo = rope_num(p, what, o, "low_freq_factor", &bad),
                    *hi = rope_num(p, what, o, "high_freq_factor", &bad);
        if (bad || !lo || !hi || !orig ||
            !((c->rope_high_freq = (float)hi->valuedouble) > (c->rope_low_freq = (float)lo->valuedouble)) ||
            c->rope_orig_ctx <= 0) {
            aha_err("%s: llama3 rope scaling needs low_freq_factor < high_freq_factor "
                    "and original_max_position_embeddings",
                    p->path);
            return -1;
        }
    }
    if (!bad && !(c->rope_factor > 0)) {
        aha_err("%s: %s: rope factor must be positive", p->path, what);
        return -1;
    }
    return bad ? -1 : 0;
}

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
    // HF's Phi-3 reads the old names "su" and "yarn" as longrope
    const char *as = p->type == K_PHI3 && (!strcmp(t, "su") || !strcmp(t, "yarn")) ? "longrope" : t;
    int k = -1;
    for (int i = 0; i < N_ROPE_KINDS; i++)
        if (strcmp(as, rope_kinds[i].type) == 0) k = i;
    if (k < 0 || (local && k > 0)) {
        aha_err("%s: %s: rope scaling '%s' is not implemented (%s)", p->path, what, t,
                local ? "none on the sliding-window layers" : "default, linear, llama3, yarn, longrope");
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        char word[80], fields[200];
        snprintf(word, sizeof word, " %s ", e->string);
        snprintf(fields, sizeof fields, " %s ", rope_kinds[k].fields);
        if (!strstr(fields, word)) {
            aha_err("%s: %s: field \"%s\" is not implemented for rope scaling '%s'", p->path, what, e->string, t);
            return -1;
        }
    }
    const cJSON *prf = cJSON_GetObjectItemCaseSensitive(o, "partial_rotary_factor");
    if (prf && !(cJSON_IsNumber(prf) && prf->valuedouble == 1)) {
        aha_err("%s: %s: partial_rotary_factor other than 1 (partial RoPE) is not implemented", p->path, what);
        return -1;
    }
    const cJSON *theta = cJSON_GetObjectItemCaseSensitive(o, "rope_theta");
    if (theta && json_float(p, "rope_theta", theta, local ? &c->rope_local_theta : &c->rope_theta) < 0) return -1;
    if (local) return 0;
    c->rope_scaling = rope_kinds[k].scaling;
    return c->rope_scaling == AHA_SCALING_NONE ? 0 : rope_fields(p, what, o);
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
        if ((!is_local && strcmp(e->string, "full_attention") != 0) || (is_local && p->type != K_GEMMA3)) {
            aha_err("%s: rope_parameters: layer type \"%s\" is not implemented for %s", p->path, e->string,
                    aha_kinds[p->type].model_type);
            return -1;
        }
        char what[64];
        snprintf(what, sizeof what, "rope_parameters.%s", e->string);
        if (rope_object(p, what, e, is_local) < 0) return -1;
    }
    return 0;
}

// phi3's top-level original_max_position_embeddings: LongRoPE's switch (HF
// copies it into the rope parameters, over theirs).
static int row_orig_ctx(void *pv, const void *v) {
    json_parse *p = pv;
    p->orig_set = 1;
    return json_int(p, "original_max_position_embeddings", v, &p->c->rope_orig_ctx);
}

// head_dim: null is "hidden size / heads" (Mixtral's config class writes it so).
static int row_head_dim(void *pv, const void *v) {
    json_parse *p = pv;
    return cJSON_IsNull(v) ? 0 : json_int(p, "head_dim", v, &p->c->head_dim);
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

// An array of the model's layers' (checked against the layer count later).
static int json_array(const json_parse *p, const char *key, const cJSON *v) {
    if (!cJSON_IsArray(v)) aha_err("%s: \"%s\" is not an array", p->path, key);
    return cJSON_IsArray(v) ? 0 : -1;
}

static int row_layer_types(void *pv, const void *v) {
    json_parse *p = pv;
    p->layer_types = v;
    return json_array(p, "layer_types", v);
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

// num_experts / num_local_experts: the one count, under either name (HF's attribute_map).
static int row_experts(void *pv, const void *v) {
    json_parse *p = pv;
    int n, had = p->c->n_experts;
    if (json_int(p, "num_experts", v, &n) < 0) return -1;
    if (had >= 0 && had != n) {
        aha_err("%s: num_experts and num_local_experts differ (%d, %d)", p->path, had, n);
        return -1;
    }
    p->c->n_experts = n;
    return 0;
}

static int row_sparse_step(void *pv, const void *v) {
    json_parse *p = pv;
    if (json_int(p, "decoder_sparse_step", v, &p->sparse_step) < 0) return -1;
    if (p->sparse_step < 1) aha_err("%s: decoder_sparse_step must be >= 1", p->path);
    return p->sparse_step < 1 ? -1 : 0;
}

static int row_mlp_only(void *pv, const void *v) {
    json_parse *p = pv;
    p->mlp_only = cJSON_IsNull(v) ? NULL : v;
    return cJSON_IsNull(v) ? 0 : json_array(p, "mlp_only_layers", v);
}

static int row_no_rope(void *pv, const void *v) {
    json_parse *p = pv;
    p->no_rope = cJSON_IsNull(v) ? NULL : v;
    return cJSON_IsNull(v) ? 0 : json_array(p, "no_rope_layers", v);
}

static int row_no_rope_interval(void *pv, const void *v) {
    json_parse *p = pv;
    if (json_int(p, "no_rope_layer_interval", v, &p->no_rope_interval) < 0) return -1;
    if (p->no_rope_interval < 1) aha_err("%s: no_rope_layer_interval must be >= 1", p->path);
    return p->no_rope_interval < 1 ? -1 : 0;
}

#define CFG(f) offsetof(aha_config, f)
#define INFO(name, t, why) {name, t, ROW_INFO, 0, NULL, NULL, 0, why}
#define ONLY(name, t, values, why) {name, t, ROW_ONLY, 0, values, NULL, 0, why}
#define FN(name, t, fn, why) {name, t, ROW_FN, 0, NULL, fn, 0, why}

// In the order they are read: rope_parameters after rope_theta and
// rope_local_base_freq (its bases win), rope_scaling after rope_parameters
// (its scaling wins), phi3's original_max_position_embeddings before both.
const cfg_row aha_json_rows[] = {
    {"model_type", ALL | B(MM), ROW_ARCH, 0, NULL, NULL, 1, "the architecture"},
    {"hidden_size", ALL, ROW_INT, CFG(dim), NULL, NULL, 1, "hidden size"},
    {"num_hidden_layers", ALL, ROW_INT, CFG(n_layers), NULL, NULL, 1, "layers"},
    {"num_attention_heads", ALL, ROW_INT, CFG(n_heads), NULL, NULL, 1, "query heads"},
    {"intermediate_size", ALL, ROW_INT, CFG(ffn_dim), NULL, NULL, 1,
     "MLP width (olmoe, mixtral: each expert's; qwen2_moe, qwen3_moe: the dense layers')"},
    {"vocab_size", ALL, ROW_INT, CFG(vocab), NULL, NULL, 1, "vocabulary"},
    {"num_key_value_heads", ALL, ROW_INT, CFG(n_kv_heads), NULL, NULL, 0, "key/value heads (default: the query heads)"},
    FN("head_dim", ALL, row_head_dim, "head dimension (default or null: hidden size / heads)"),
    {"max_position_embeddings", ALL, ROW_INT, CFG(max_ctx), NULL, NULL, 0,
     "trained context: longer contexts are refused (default 2048)"},
    {"rms_norm_eps", ALL, ROW_FLOAT, CFG(norm_eps), NULL, NULL, 0,
     "RMSNorm epsilon (default 1e-6; phi3, olmoe, mixtral 1e-5)"},
    {"rope_theta", ALL, ROW_FLOAT, CFG(rope_theta), NULL, NULL, 0,
     "RoPE base (default 10000; gemma3, mixtral 1e6; smollm3 2e6)"},
    {"rope_local_base_freq", B(K_GEMMA3), ROW_FLOAT, CFG(rope_local_theta), NULL, NULL, 0,
     "RoPE base of the sliding-window layers (transformers 4; default 10000)"},
    FN("original_max_position_embeddings", B(K_PHI3), row_orig_ctx,
       "LongRoPE's original context (default 4096): HF puts it in the rope parameters over theirs"),
    FN("rope_parameters", ALL, row_rope_parameters,
       "RoPE base and scaling (transformers 5): default, linear (factor), llama3 (factor, low_freq_factor, "
       "high_freq_factor, original_max_position_embeddings), yarn (factor, original_max_position_embeddings "
       "(default max_position_embeddings), beta_fast 32, beta_slow 1, truncate true, attention_factor or "
       "mscale / mscale_all_dim) or longrope (short_factor, long_factor, factor (default max_position_embeddings / "
       "original), attention_factor); partial_rotary_factor only 1; phi3 reads types su and yarn as longrope; "
       "gemma3: per layer type, the sliding layers unscaled"),
    FN("rope_scaling", ALL, row_rope_scaling, "RoPE scaling (transformers 4), as rope_parameters; null: none"),
    ONLY("partial_rotary_factor", B(K_PHI3), "1", "the rotated fraction of a head: all of it"),
    FN("tie_word_embeddings", ALL | B(MM), row_tied,
       "lm_head is the embedding matrix (default: false; gemma, smollm3 true; the text config's wins)"),
    ONLY("hidden_act", ALL & ~GEMMA, "silu", "the MLP's activation: SwiGLU"),
    INFO("hidden_act", GEMMA, "not read by HF's Gemma MLP (hidden_activation is)"),
    ONLY("hidden_activation", GEMMA, "gelu_pytorch_tanh", "the MLP's activation: GeGLU with tanh GELU"),
    ONLY("attention_bias", ALL & ~(B(K_QWEN2) | B(K_QWEN2MOE) | B(K_PHI3) | B(K_MIXTRAL)), "false",
         "biases on the attention projections: none"),
    INFO("attention_bias", B(K_QWEN2), "Qwen2 always has q/k/v biases (HF's Qwen2 does not read the field)"),
    {"qkv_bias", B(K_QWEN2MOE), ROW_BOOL, CFG(qkv_bias), NULL, NULL, 0, "q/k/v projection biases (default true)"},
    ONLY("mlp_bias", B(K_LLAMA) | B(K_SMOLLM3), "false", "biases on the MLP projections: none"),
    ONLY("use_mrope", B(K_QWEN2), "false", "multimodal RoPE sections: none"),
    ONLY("clip_qkv", B(K_OLMOE), "null", "clamping q, k and v: none"),
    FN("sliding_window", WINDOWED, row_window,
       "the sliding-window layers' window (default 4096, HF's; null: none; qwen2/3: only with use_sliding_window; "
       "one as long as the trained context drops no key, so it is none)"),
    INFO("sliding_window", NO_WINDOWS, "used only with use_sliding_window, which is false"),
    FN("use_sliding_window", QWEN, row_use_window, "whether the layers from max_window_layers on use sliding_window"),
    ONLY("use_sliding_window", NO_WINDOWS, "false", "sliding-window layers: none"),
    FN("max_window_layers", QWEN, row_max_window_layers, "the first sliding-window layer (default 28)"),
    INFO("max_window_layers", B(K_QWEN3MOE) | B(K_SMOLLM3), "not read by HF's model of this type"),
    INFO("max_window_layers", B(K_QWEN2MOE), "used only with use_sliding_window, which is false"),
    FN("layer_types", WINDOWED | B(K_QWEN2MOE) | B(K_SMOLLM3), row_layer_types,
       "each layer: sliding_attention or full_attention (absent: each type's rule, as HF derives it; "
       "qwen2_moe, smollm3: full_attention only)"),
    FN("sliding_window_pattern", B(K_GEMMA3), row_pattern, "every n-th layer is global (default 6)"),
    FN("_sliding_window_pattern", B(K_GEMMA3), row_pattern, "as sliding_window_pattern (transformers 5's name)"),
    FN("query_pre_attn_scalar", GEMMA, row_qpas, "scores scaled by its -1/2 power (default 256)"),
    {"final_logit_softcapping", GEMMA, ROW_CAP, CFG(final_softcap), NULL, NULL, 0,
     "logits = cap * tanh(logits / cap) (default: gemma2 30, gemma3 none; null: none)"},
    {"attn_logit_softcapping", B(K_GEMMA2), ROW_CAP, CFG(attn_softcap), NULL, NULL, 0,
     "scores = cap * tanh(scores / cap) (default 50; null: none)"},
    INFO("attn_logit_softcapping", B(K_GEMMA3), "HF's Gemma-3 attention applies no softcap, whatever the field says"),
    ONLY("use_bidirectional_attention", GEMMA, "false|null", "attention is causal"),
    FN("no_rope_layers", B(K_SMOLLM3), row_no_rope, "per layer (at least as many as layers): 1 RoPE, 0 none (NoPE)"),
    FN("no_rope_layer_interval", B(K_SMOLLM3), row_no_rope_interval,
       "without no_rope_layers: every n-th layer has no RoPE (default 4)"),
    FN("num_experts", MOE, row_experts,
       "experts per MoE layer (default: olmoe 64, qwen2_moe 60, qwen3_moe 128, mixtral 8)"),
    FN("num_local_experts", B(K_OLMOE) | B(K_QWEN3MOE) | B(K_MIXTRAL), row_experts,
       "num_experts' other name (HF's attribute_map)"),
    {"num_experts_per_tok", MOE, ROW_INT, CFG(n_experts_used), NULL, NULL, 0,
     "experts each token goes to, the top ones by router probability (default: olmoe 8, qwen2_moe 4, "
     "qwen3_moe 8, mixtral 2); among equal probabilities the lower expert index"},
    {"moe_intermediate_size", QWEN_MOE, ROW_INT, CFG(moe_ffn_dim), NULL, NULL, 0,
     "each expert's MLP width (default: qwen2_moe 1408, qwen3_moe 768)"},
    {"shared_expert_intermediate_size", B(K_QWEN2MOE), ROW_INT, CFG(shared_ffn_dim), NULL, NULL, 0,
     "the shared expert's MLP width, its output times sigmoid(shared_expert_gate) (default 5632)"},
    {"norm_topk_prob", B(K_OLMOE) | QWEN_MOE, ROW_BOOL, CFG(moe_norm_topk), NULL, NULL, 0,
     "the top-k routing weights divided by their sum (default false; mixtral always)"},
    FN("decoder_sparse_step", QWEN_MOE, row_sparse_step, "layer l is MoE iff (l + 1) % step == 0 (default 1)"),
    FN("mlp_only_layers", QWEN_MOE, row_mlp_only,
       "layers with the dense MLP (intermediate_size) instead (default none)"),
    INFO("output_router_logits", MOE, "the training loss's router logits: no number of a forward pass"),
    INFO("router_aux_loss_coef", MOE, "the training loss's weight: no number of a forward pass"),
    INFO("router_jitter_noise", B(K_MIXTRAL), "noise on the router's input in training only"),
    INFO("resid_pdrop", B(K_PHI3), "dropout: off at inference"),
    INFO("embd_pdrop", B(K_PHI3), "dropout: off at inference"),
    INFO("cache_implementation", GEMMA, "HF's cache layout: the same numbers"),
    INFO("attention_dropout", ALL, "dropout: off at inference"),
    INFO("pretraining_tp", B(K_LLAMA) | B(K_SMOLLM3),
         "old transformers' split of the same products for tensor parallelism"),
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
                "(docs/runtime.md lists the fields aha reads)",
                p->path, e->string, text, aha_kinds[type].model_type);
        return -1;
    }
    return 0;
}

// Which layers are natively sliding-window: layer_types, else each type's
// rule as its HF config class derives it.
static int derive_layers(json_parse *p) {
    aha_config *c = p->c;
    if (QWEN & B(p->type) && !p->use_window) c->sliding_window = 0;
    if (c->sliding_window >= c->max_ctx) c->sliding_window = 0; // it never drops a key of a context aha runs
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
            const int windows = (WINDOWED & B(p->type)) != 0;
            if ((strcmp(t, "sliding_attention") != 0 || !windows) && strcmp(t, "full_attention") != 0) {
                aha_err("%s: layer_types[%d] '%s' is not implemented (%s)", p->path, l, t,
                        windows ? "sliding_attention, full_attention" : "full_attention");
                return -1;
            }
            c->layer_local[l++] = t[0] == 's';
        }
        return 0;
    }
    for (int l = 0; l < c->n_layers; l++) {
        if (GEMMA & B(p->type)) c->layer_local[l] = aha_gemma_layer_local(c->arch, l, p->pattern);
        else if (QWEN & B(p->type)) c->layer_local[l] = c->sliding_window > 0 && l >= p->first_window_layer;
        else c->layer_local[l] = c->sliding_window > 0; // mistral, phi3, mixtral: every layer
    }
    return 0;
}

// A list of per-layer integers (each 0 or 1 when bits) into out, n values at
// least (more are ignored, as HF indexes it by layer).
static int layer_list(const json_parse *p, const char *key, const cJSON *a, int n, uint8_t *out) {
    if (cJSON_GetArraySize(a) < n) {
        aha_err("%s: %s has %d entries for %d layers", p->path, key, cJSON_GetArraySize(a), n);
        return -1;
    }
    for (int l = 0; l < n; l++) {
        const cJSON *e = cJSON_GetArrayItem(a, l);
        if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1)) {
            aha_err("%s: %s[%d] is not 0 or 1", p->path, key, l);
            return -1;
        }
        out[l] = (uint8_t)e->valuedouble;
    }
    return 0;
}

// SmolLM3's NoPE layers: no_rope_layers (1 = RoPE), else every n-th layer.
static int derive_nope(json_parse *p) {
    aha_config *c = p->c;
    if (p->type != K_SMOLLM3 || c->n_layers > AHA_MAX_LAYERS) return 0;
    if (p->no_rope) {
        if (layer_list(p, "no_rope_layers", p->no_rope, c->n_layers, c->layer_nope) < 0) return -1;
        for (int l = 0; l < c->n_layers; l++) c->layer_nope[l] = !c->layer_nope[l];
        return 0;
    }
    for (int l = 0; l < c->n_layers; l++) c->layer_nope[l] = (l + 1) % p->no_rope_interval == 0;
    return 0;
}

// Which layers route to experts, and the expert width where the type's
// intermediate_size is it.
static int derive_moe(json_parse *p) {
    aha_config *c = p->c;
    if (!(MOE & B(p->type))) return 0;
    if (c->n_experts_used > c->n_experts) {
        aha_err("%s: num_experts_per_tok %d exceeds num_experts %d", p->path, c->n_experts_used, c->n_experts);
        return -1;
    }
    if (!(QWEN_MOE & B(p->type))) c->moe_ffn_dim = c->ffn_dim; // olmoe, mixtral: intermediate_size is the expert's
    if (c->n_layers > AHA_MAX_LAYERS) return 0;
    for (int l = 0; l < c->n_layers; l++) c->layer_moe[l] = c->n_experts > 0 && (l + 1) % p->sparse_step == 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, p->mlp_only) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble)) {
            aha_err("%s: mlp_only_layers holds a non-integer", p->path);
            return -1;
        }
        if (e->valuedouble >= 0 && e->valuedouble < c->n_layers) c->layer_moe[(int)e->valuedouble] = 0;
    }
    return 0;
}

// The global layers' RoPE scaling beyond its fields: HF's defaults for
// yarn's and longrope's factor, original context and attention factor, and
// longrope's lists.
static int derive_rope(json_parse *p) {
    aha_config *c = p->c;
    const int yarn = c->rope_scaling == AHA_SCALING_YARN, lr = c->rope_scaling == AHA_SCALING_LONGROPE;
    if (!yarn && !lr) return 0;
    if (!p->orig_set) c->rope_orig_ctx = c->max_ctx; // HF: setdefault(max_position_embeddings)
    if (c->rope_orig_ctx <= 0) {
        aha_err("%s: rope scaling needs original_max_position_embeddings > 0", p->path);
        return -1;
    }
    if (!p->factor_set) c->rope_factor = (float)((double)c->max_ctx / c->rope_orig_ctx);
    if (yarn && !(c->rope_attn_factor > 0)) {
        const double f = c->rope_factor;
        c->rope_attn_factor =
            p->mscale && p->mscale_all_dim
                ? (float)(aha_config_yarn_factor(f, p->mscale) / aha_config_yarn_factor(f, p->mscale_all_dim))
                : (float)aha_config_yarn_factor(f, 1);
    }
    if (lr && !(c->rope_attn_factor > 0)) {
        const double f = c->rope_factor;
        c->rope_attn_factor = f <= 1 ? 1.0f : (float)sqrt(1 + log(f) / log((double)c->rope_orig_ctx));
    }
    if (!lr) return 0;
    const int half = c->head_dim / 2;
    const cJSON *lists[2] = {p->short_factor, p->long_factor};
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "long_factor" : "short_factor";
        if (!cJSON_IsArray(lists[k]) || cJSON_GetArraySize(lists[k]) != half || half > AHA_MAX_ROPE_PAIRS) {
            aha_err("%s: longrope needs %s: %d numbers (head_dim / 2)", p->path, key, half);
            return -1;
        }
        for (int i = 0; i < half; i++) {
            const cJSON *e = cJSON_GetArrayItem(lists[k], i);
            float v = cJSON_IsNumber(e) ? (float)e->valuedouble : 0;
            if (!(isfinite(v) && v > 0)) {
                aha_err("%s: %s[%d] is not a positive number", p->path, key, i);
                return -1;
            }
            (k ? c->rope_long : c->rope_short)[i] = v;
        }
    }
    return 0;
}

// The object's model_type as a kind, or -1 with an error.
static int model_type(const cJSON *o, const char *path) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "model_type");
    if (!cJSON_IsString(mt)) {
        aha_err("%s: missing \"model_type\"", path);
        return -1;
    }
    for (int t = 0; t < AHA_N_KINDS; t++)
        if (aha_kinds[t].model_type && strcmp(aha_kinds[t].model_type, mt->valuestring) == 0) return t;
    char names[400];
    aha_kind_names(AHA_KINDS_JSON, 0, names, sizeof names);
    aha_err("%s: unknown architecture '%s' (supported: %s)", path, mt->valuestring, names);
    return -1;
}

// What a type computes, set once: the forward pass, CUDA, fit and aha info
// read these fields and never the type.
static void type_flags(aha_config *c, int type) {
    c->norms = OLMO & B(type) ? AHA_NORMS_POST : GEMMA & B(type) ? AHA_NORMS_BOTH : AHA_NORMS_PRE;
    c->qk_norm = (OLMO | B(K_OLMOE)) & B(type)                          ? AHA_QK_NORM_FULL
                 : (B(K_QWEN3) | B(K_QWEN3MOE) | B(K_GEMMA3)) & B(type) ? AHA_QK_NORM_HEAD
                                                                        : AHA_QK_NORM_NONE;
    c->qkv_bias = type == K_QWEN2 || type == K_QWEN2MOE; // qwen2_moe: its qkv_bias field may say otherwise
    c->fused_qkv = c->fused_gate_up = type == K_PHI3;
    c->moe_norm_topk = type == K_MIXTRAL;  // the others: norm_topk_prob (default false)
    c->n_experts = MOE & B(type) ? -1 : 0; // -1: not given yet (row_experts)
    c->n_experts_used = type == K_QWEN2MOE ? 4 : type == K_MIXTRAL ? 2 : 8;
    c->moe_ffn_dim = type == K_QWEN2MOE ? 1408 : 768;
    c->shared_ffn_dim = type == K_QWEN2MOE ? 5632 : 0;
}

static int parse(aha_config *c, const cJSON *root, const char *path) {
    json_parse p = {.c = c,
                    .path = path,
                    .qpas = 256,
                    .pattern = 6,
                    .first_window_layer = 28,
                    .sparse_step = 1,
                    .no_rope_interval = 4};
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
        if (type != K_GEMMA3) {
            aha_err("%s: gemma3's text_config is a %s config (gemma3_text expected)", path, aha_kinds[type].model_type);
            return -1;
        }
    }
    p.type = type;
    c->arch = aha_kinds[type].arch;
    c->aha = aha_kinds[type].aha;
    type_flags(c, type);
    c->rope_pairing = AHA_ROPE_HALF;
    c->norm_eps = (B(K_PHI3) | B(K_OLMOE) | B(K_MIXTRAL)) & B(type) ? 1e-5f : 1e-6f;
    c->rope_theta = (B(K_GEMMA3) | B(K_MIXTRAL)) & B(type) ? 1e6f : type == K_SMOLLM3 ? 2e6f : 10000.f;
    c->rope_local_theta = type == K_GEMMA3 ? 10000.f : 0; // Gemma3TextConfig.default_theta["local"]
    c->rope_orig_ctx = type == K_PHI3 ? 4096 : 0;         // Phi3Config's default
    p.orig_set = type == K_PHI3;
    c->max_ctx = 2048;
    c->n_kv_heads = c->head_dim = -1; // derived below when absent
    c->tied = ((GEMMA | B(K_SMOLLM3)) & B(type)) != 0; // HF's config classes' defaults
    c->final_softcap = type == K_GEMMA2 ? 30.f : 0;
    c->attn_softcap = type == K_GEMMA2 ? 50.f : 0;
    if (WINDOWED & B(type)) c->sliding_window = type == K_PHI3 || type == K_MIXTRAL ? 0 : HF_SLIDING_WINDOW;
    if (read_rows(&p, text, type) < 0 || (text != root && read_rows(&p, root, MM) < 0)) return -1;
    if (c->n_experts < 0) c->n_experts = type == K_OLMOE ? 64 : type == K_QWEN2MOE ? 60 : type == K_MIXTRAL ? 8 : 128;
    if (c->n_kv_heads < 0) c->n_kv_heads = c->n_heads;
    if (c->head_dim < 0) c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    if (GEMMA & B(type)) {
        c->attn_scale = (float)pow((double)p.qpas, -0.5); // HF: scaling = query_pre_attn_scalar**-0.5
        aha_config_gemma(c);
    }
    if ((WINDOWED & B(type) || p.layer_types) && derive_layers(&p) < 0) return -1;
    if (derive_nope(&p) < 0 || derive_moe(&p) < 0 || derive_rope(&p) < 0) return -1;
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
