#include "model_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mapfile.h"

// Sizes beyond these are hostile or a typo; they keep every product of two
// dimensions far inside int64 and size_t.
#define MAX_DIM (1 << 20)
#define MAX_LAYERS AHA_MAX_LAYERS
#define HF_SLIDING_WINDOW 4096 // transformers' default sliding_window when config.json has none

static const struct {
    const char *name;
    aha_arch arch;
    int aha;
} hf_types[] = {
    {"llama", AHA_ARCH_LLAMA, 0},  {"mistral", AHA_ARCH_LLAMA, 0},
    {"qwen2", AHA_ARCH_QWEN2, 0},  {"qwen3", AHA_ARCH_QWEN3, 0},
    {"olmo2", AHA_ARCH_OLMO2, 0},  {"faolmo", AHA_ARCH_OLMO2, 1},
    {"gemma2", AHA_ARCH_GEMMA2, 0}, {"gemma3_text", AHA_ARCH_GEMMA3, 0},
    {"gemma3", AHA_ARCH_GEMMA3, 0}, // the multimodal config: its text_config is read
};

static int json_int(const cJSON *o, const char *key, int *out, int required, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) aha_err("%s: missing \"%s\"", path, key);
        return required ? -1 : 1;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        fabs(v->valuedouble) > 2e9) {
        aha_err("%s: \"%s\" is not an integer", path, key);
        return -1;
    }
    *out = (int)v->valuedouble;
    return 0;
}

static int json_float(const cJSON *o, const char *key, float *out, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) return 1;
    if (!cJSON_IsNumber(v)) {
        aha_err("%s: \"%s\" is not a number", path, key);
        return -1;
    }
    *out = (float)v->valuedouble;
    return 0;
}

// A number that may be absent (*out = dflt) or null (*out = 0, "none").
static int json_opt_float(const cJSON *o, const char *key, float *out, float dflt, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = !v ? dflt : 0;
    return v && !cJSON_IsNull(v) ? json_float(o, key, out, path) : 0;
}

// Gemma-3's local layers: rope_parameters.sliding_attention (transformers 5)
// or rope_local_base_freq (4.x), never scaled (HF scales the global layers only).
static int parse_rope_local(aha_config *c, const cJSON *root, const cJSON *local, const char *path) {
    c->rope_local_theta = 10000.f; // Gemma3TextConfig.default_theta["local"]
    if (json_float(root, "rope_local_base_freq", &c->rope_local_theta, path) < 0) return -1;
    if (!local) return 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(local, "rope_type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "default") != 0) {
        aha_err("%s: rope scaling '%s' on the sliding-window layers is not supported", path,
                type->valuestring);
        return -1;
    }
    return json_float(local, "rope_theta", &c->rope_local_theta, path) < 0 ? -1 : 0;
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5; per layer
// type for gemma3: full_attention is this config's RoPE, sliding_attention the
// local layers').
static int parse_rope(aha_config *c, const cJSON *root, const char *path) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *local = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    if (cJSON_IsObject(full) || cJSON_IsObject(local)) rp = full;
    if (c->arch == AHA_ARCH_GEMMA3 &&
        parse_rope_local(c, root, cJSON_IsObject(local) ? local : NULL, path) < 0)
        return -1;
    if (json_float(root, "rope_theta", &c->rope_theta, path) < 0) return -1;
    if (cJSON_IsObject(rp) && json_float(rp, "rope_theta", &c->rope_theta, path) < 0) return -1;
    const cJSON *s = cJSON_IsObject(rs) ? rs : cJSON_IsObject(rp) ? rp : NULL;
    if (!s) return 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(s, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "default";
    if (strcmp(t, "default") == 0) return 0;
    c->rope_factor = 1;
    if (json_float(s, "factor", &c->rope_factor, path) < 0) return -1;
    if (!(c->rope_factor > 0)) {
        aha_err("%s: rope factor must be positive", path);
        return -1;
    }
    if (strcmp(t, "linear") == 0) {
        c->rope_scaling = 1;
        return 0;
    }
    if (strcmp(t, "llama3") == 0) {
        c->rope_scaling = 2;
        if (json_float(s, "low_freq_factor", &c->rope_low_freq, path) != 0 ||
            json_float(s, "high_freq_factor", &c->rope_high_freq, path) != 0 ||
            json_int(s, "original_max_position_embeddings", &c->rope_orig_ctx, 1, path) != 0 ||
            !(c->rope_high_freq > c->rope_low_freq) || c->rope_orig_ctx <= 0) {
            aha_err("%s: llama3 rope scaling needs low_freq_factor < high_freq_factor "
                    "and original_max_position_embeddings", path);
            return -1;
        }
        return 0;
    }
    aha_err("%s: unsupported rope scaling type '%s' (supported: linear, llama3)", path, t);
    return -1;
}

static int is_gemma(aha_arch a) { return a == AHA_ARCH_GEMMA2 || a == AHA_ARCH_GEMMA3; }

// The HF config classes' layer rule when no layer_types is given: Gemma-3
// makes every pattern-th layer global, Gemma-2 the odd ones.
static int gemma_layer_local(aha_arch a, int l, int pattern) {
    return a == AHA_ARCH_GEMMA2 ? l % 2 == 0 : (l + 1) % pattern != 0;
}

// What every Gemma-2/3 does, whatever the file says.
static void aha_config_gemma(aha_config *c) {
    c->ffn_gelu = 1;
    c->norm_plus1 = 1;
    c->embed_scale = (float)sqrt((double)c->dim); // HF: torch.tensor(hidden_size**0.5), float32
}

// Gemma-2/3 beyond the llama fields, with the HF config classes' defaults.
static int parse_gemma(aha_config *c, const cJSON *o, const char *path) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "hidden_activation");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "gelu_pytorch_tanh") == 0)) {
        aha_err("%s: hidden_activation %s is not supported (gelu_pytorch_tanh)", path,
                cJSON_IsString(act) ? act->valuestring : "(not a string)");
        return -1;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "use_bidirectional_attention"))) {
        aha_err("%s: use_bidirectional_attention is not supported (causal models only)", path);
        return -1;
    }
    float qpas = 256;
    int gemma2 = c->arch == AHA_ARCH_GEMMA2;
    if (json_float(o, "query_pre_attn_scalar", &qpas, path) < 0 ||
        json_opt_float(o, "final_logit_softcapping", &c->final_softcap, gemma2 ? 30.f : 0, path) < 0 ||
        // Gemma-3's attention never applies attn_logit_softcapping (HF passes no softcap)
        (gemma2 && json_opt_float(o, "attn_logit_softcapping", &c->attn_softcap, 50.f, path) < 0))
        return -1;
    if (!(qpas > 0)) {
        aha_err("%s: query_pre_attn_scalar must be positive", path);
        return -1;
    }
    c->attn_scale = (float)pow((double)qpas, -0.5); // HF: scaling = query_pre_attn_scalar**-0.5
    return 0;
}

// Which layers are natively sliding-window: layer_types when the config has
// it, else each architecture's rule as its HF config class derives it.
static int parse_layers(aha_config *c, const cJSON *o, const char *path) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(o, "layer_types");
    if (cJSON_IsArray(lt)) {
        if (cJSON_GetArraySize(lt) != c->n_layers) {
            aha_err("%s: layer_types has %d entries for %d layers", path, cJSON_GetArraySize(lt),
                    c->n_layers);
            return -1;
        }
        int l = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, lt) {
            const char *t = cJSON_IsString(e) ? e->valuestring : "";
            if (strcmp(t, "sliding_attention") != 0 && strcmp(t, "full_attention") != 0) {
                aha_err("%s: layer_types[%d] '%s' is not supported (sliding_attention, full_attention)",
                        path, l, t);
                return -1;
            }
            c->layer_local[l++] = t[0] == 's';
        }
        return 0;
    }
    int pattern = 6, first_window_layer = 28; // Gemma3TextConfig, Qwen2Config defaults
    if (json_int(o, "sliding_window_pattern", &pattern, 0, path) < 0 ||
        json_int(o, "_sliding_window_pattern", &pattern, 0, path) < 0 ||
        json_int(o, "max_window_layers", &first_window_layer, 0, path) < 0)
        return -1;
    if (pattern < 1) {
        aha_err("%s: sliding_window_pattern must be >= 1", path);
        return -1;
    }
    for (int l = 0; l < c->n_layers; l++) {
        switch (c->arch) {
        case AHA_ARCH_GEMMA3:
        case AHA_ARCH_GEMMA2: c->layer_local[l] = gemma_layer_local(c->arch, l, pattern); break;
        case AHA_ARCH_QWEN2:
        case AHA_ARCH_QWEN3: c->layer_local[l] = c->sliding_window > 0 && l >= first_window_layer; break;
        default: c->layer_local[l] = c->sliding_window > 0; break; // mistral: every layer
        }
    }
    return 0;
}

// sliding_window: absent = HF's default 4096, null = none; Qwen2/3 only with
// use_sliding_window; llama and olmo2 have none.
static int parse_window(aha_config *c, const cJSON *o, const char *mt, const char *path) {
    int qwen = c->arch == AHA_ARCH_QWEN2 || c->arch == AHA_ARCH_QWEN3;
    if (!is_gemma(c->arch) && !qwen && strcmp(mt, "mistral") != 0) return 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "sliding_window");
    c->sliding_window = v ? 0 : HF_SLIDING_WINDOW;
    if (v && !cJSON_IsNull(v) && json_int(o, "sliding_window", &c->sliding_window, 1, path) < 0) return -1;
    if (qwen && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "use_sliding_window")))
        c->sliding_window = 0;
    if (c->sliding_window < 0) {
        aha_err("%s: sliding_window must be >= 0", path);
        return -1;
    }
    return parse_layers(c, o, path);
}

int aha_config_from_json(aha_config *c, const char *path) {
    memset(c, 0, sizeof *c);
    aha_map map;
    if (aha_map_open(&map, path) != 0) return -1;
    cJSON *doc = cJSON_ParseWithLength((const char *)map.data, map.size);
    aha_map_close(&map);
    const cJSON *root = doc;
    int rc = -1;
    if (!cJSON_IsObject(root)) {
        aha_err("%s: not a JSON object (malformed JSON?)", path);
        goto out;
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt)) {
        aha_err("%s: missing \"model_type\"", path);
        goto out;
    }
    size_t i, n = sizeof hf_types / sizeof hf_types[0];
    for (i = 0; i < n && strcmp(hf_types[i].name, mt->valuestring) != 0; i++) {}
    if (i == n) {
        aha_err("%s: unknown architecture '%s' (supported: llama, mistral, qwen2, "
                "qwen3, olmo2, faolmo, gemma2, gemma3_text, gemma3)", path, mt->valuestring);
        goto out;
    }
    if (strcmp(mt->valuestring, "gemma3") == 0) { // multimodal: the language model's config
        root = cJSON_GetObjectItemCaseSensitive(root, "text_config");
        if (!cJSON_IsObject(root)) {
            aha_err("%s: gemma3 config without a \"text_config\" object", path);
            goto out;
        }
    }
    c->arch = hf_types[i].arch;
    c->aha = hf_types[i].aha;
    c->rope_pairing = AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = c->arch == AHA_ARCH_GEMMA3 ? 1e6f : 10000.f; // Gemma3TextConfig: global 1e6
    c->max_ctx = 2048;
    c->tied = 0;
    if (json_int(root, "hidden_size", &c->dim, 1, path) ||
        json_int(root, "num_hidden_layers", &c->n_layers, 1, path) ||
        json_int(root, "num_attention_heads", &c->n_heads, 1, path) ||
        json_int(root, "intermediate_size", &c->ffn_dim, 1, path) ||
        json_int(root, "vocab_size", &c->vocab, 1, path))
        goto out;
    c->n_kv_heads = c->n_heads;
    if (json_int(root, "num_key_value_heads", &c->n_kv_heads, 0, path) < 0 ||
        json_int(root, "max_position_embeddings", &c->max_ctx, 0, path) < 0 ||
        json_float(root, "rms_norm_eps", &c->norm_eps, path) < 0 || parse_rope(c, root, path) < 0)
        goto out;
    c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    if (json_int(root, "head_dim", &c->head_dim, 0, path) < 0) goto out;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    // Gemma ties by default (HF's config classes); a multimodal gemma3 says so at the top.
    if (!tie && doc != root) tie = cJSON_GetObjectItemCaseSensitive(doc, "tie_word_embeddings");
    c->tied = tie ? cJSON_IsTrue(tie) : is_gemma(c->arch);
    if (c->n_layers > 0 && c->n_layers <= MAX_LAYERS &&
        parse_window(c, root, mt->valuestring, path) < 0)
        goto out;
    if (is_gemma(c->arch)) {
        if (parse_gemma(c, root, path) < 0) goto out;
        aha_config_gemma(c);
    }
    rc = aha_config_check(c, path);
out:
    cJSON_Delete(doc);
    return rc;
}

static int gguf_int(const aha_gguf *g, const char *arch, const char *key, int *out, int required) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    uint64_t v;
    int rc = aha_gguf_get_u64(g, full, &v);
    if (rc < 0) return -1;
    if (rc == 1) {
        if (required) aha_err("%s: missing metadata key '%s'", g->path, full);
        return required ? -1 : 1;
    }
    if (v > (uint64_t)MAX_DIM * 64) {
        aha_err("%s: '%s' = %llu is out of range", g->path, full, (unsigned long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int gguf_float(const aha_gguf *g, const char *arch, const char *key, float *out) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    double v;
    int rc = aha_gguf_get_f64(g, full, &v);
    if (rc == 0) *out = (float)v;
    return rc;
}

// A Gemma GGUF (llama.cpp's converter) has the sliding window and gemma2's
// softcaps but no layer pattern, local RoPE base or query_pre_attn_scalar:
// those take the HF config classes' defaults, as transformers' GGUF loader
// does (gemma3: every 6th layer global, local base 10000; gemma2: even layers
// local; both: query_pre_attn_scalar 256).
static int gguf_gemma(aha_config *c, const aha_gguf *g, const char *arch) {
    c->sliding_window = HF_SLIDING_WINDOW;
    int gemma2 = c->arch == AHA_ARCH_GEMMA2;
    c->attn_softcap = gemma2 ? 50.f : 0;
    c->final_softcap = gemma2 ? 30.f : 0;
    if (gguf_int(g, arch, "attention.sliding_window", &c->sliding_window, 0) < 0 ||
        (gemma2 && gguf_float(g, arch, "attn_logit_softcapping", &c->attn_softcap) < 0) ||
        (gemma2 && gguf_float(g, arch, "final_logit_softcapping", &c->final_softcap) < 0))
        return -1;
    c->attn_scale = (float)pow(256.0, -0.5);
    c->rope_local_theta = gemma2 ? 0 : 10000.f;
    c->layer_defaults = 1;
    if (c->n_layers > MAX_LAYERS) return 0; // aha_config_check says so
    for (int l = 0; l < c->n_layers; l++) c->layer_local[l] = gemma_layer_local(c->arch, l, 6);
    aha_config_gemma(c);
    return 0;
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
    static const struct { const char *name; aha_arch arch; } types[] = {
        {"llama", AHA_ARCH_LLAMA}, {"qwen2", AHA_ARCH_QWEN2},
        {"qwen3", AHA_ARCH_QWEN3}, {"olmo2", AHA_ARCH_OLMO2},
        {"gemma2", AHA_ARCH_GEMMA2}, {"gemma3", AHA_ARCH_GEMMA3},
    };
    size_t i, n = sizeof types / sizeof types[0];
    for (i = 0; i < n && strcmp(types[i].name, arch) != 0; i++) {}
    if (i == n) {
        aha_err("%s: unknown architecture '%s' (supported: llama, qwen2, qwen3, olmo2, gemma2, gemma3)",
                g->path, arch);
        return -1;
    }
    c->arch = types[i].arch;
    // llama.cpp's converter permutes llama Q/K rows for adjacent-pair RoPE;
    // the other architectures keep HF's rotate-half layout.
    c->rope_pairing = c->arch == AHA_ARCH_LLAMA ? AHA_ROPE_ADJACENT : AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = c->arch == AHA_ARCH_GEMMA3 ? 1e6f : 10000.f;
    c->max_ctx = 2048;
    if (gguf_int(g, arch, "embedding_length", &c->dim, 1) ||
        gguf_int(g, arch, "block_count", &c->n_layers, 1) ||
        gguf_int(g, arch, "attention.head_count", &c->n_heads, 1) ||
        gguf_int(g, arch, "feed_forward_length", &c->ffn_dim, 1))
        return -1;
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    const aha_tensor *emb = aha_gguf_find(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) {
        aha_err("%s: missing tensor 'token_embd.weight'", g->path);
        return -1;
    }
    c->vocab = (int)emb->shape[0];
    if (gguf_int(g, arch, "attention.head_count_kv", &c->n_kv_heads, 0) < 0 ||
        gguf_int(g, arch, "attention.key_length", &c->head_dim, 0) < 0 ||
        gguf_int(g, arch, "context_length", &c->max_ctx, 0) < 0 ||
        gguf_int(g, arch, "vocab_size", &c->vocab, 0) < 0 ||
        gguf_float(g, arch, "attention.layer_norm_rms_epsilon", &c->norm_eps) < 0 ||
        gguf_float(g, arch, "rope.freq_base", &c->rope_theta) < 0)
        return -1;
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (aha_gguf_get_str(g, key, &s) == 0 && !(s.len == 4 && memcmp(s.s, "none", 4) == 0)) {
        if (!(s.len == 6 && memcmp(s.s, "linear", 6) == 0)) {
            aha_err("%s: unsupported rope scaling type '%.*s'", g->path, (int)s.len, s.s);
            return -1;
        }
        c->rope_scaling = 1;
        c->rope_factor = 1;
        if (gguf_float(g, arch, "rope.scaling.factor", &c->rope_factor) < 0) return -1;
    }
    c->tied = aha_gguf_find(g, "output.weight") == NULL;
    if (is_gemma(c->arch) && gguf_gemma(c, g, arch) < 0) return -1;
    return aha_config_check(c, g->path);
}

int aha_config_check(const aha_config *c, const char *path) {
    if (c->dim <= 0 || c->dim > MAX_DIM || c->n_layers <= 0 || c->n_layers > MAX_LAYERS ||
        c->n_heads <= 0 || c->n_heads > 4096 || c->n_kv_heads <= 0 ||
        c->head_dim <= 0 || c->head_dim > 4096 || c->head_dim % 2 != 0 || c->ffn_dim <= 0 ||
        c->ffn_dim > 16 * MAX_DIM || c->vocab <= 0 || c->vocab > 16 * MAX_DIM ||
        c->max_ctx <= 0) {
        aha_err("%s: implausible shape (dim %d, layers %d, heads %d/%d, head_dim %d, ffn %d, "
                "vocab %d, context %d)", path, c->dim, c->n_layers, c->n_heads, c->n_kv_heads,
                c->head_dim, c->ffn_dim, c->vocab, c->max_ctx);
        return -1;
    }
    if (c->n_heads % c->n_kv_heads != 0) {
        aha_err("%s: %d key/value heads do not divide %d query heads", path, c->n_kv_heads,
                c->n_heads);
        return -1;
    }
    if (!(c->norm_eps >= 0) || !(c->rope_theta > 0) || !(c->rope_local_theta >= 0)) {
        aha_err("%s: rms_norm_eps must be >= 0 and rope_theta > 0", path);
        return -1;
    }
    if (!(c->attn_softcap >= 0) || !(c->final_softcap >= 0)) {
        aha_err("%s: logit softcapping must be >= 0 (0 or null: none)", path);
        return -1;
    }
    return 0;
}

void aha_config_inv_freq_local(const aha_config *c, float *inv_freq) {
    aha_config local = *c;
    local.rope_theta = c->rope_local_theta;
    local.rope_scaling = 0;
    aha_config_inv_freq(&local, inv_freq);
}

void aha_config_inv_freq(const aha_config *c, float *inv_freq) {
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        // float32 like transformers, so angles round the same way.
        float f = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)c->head_dim);
        if (c->rope_scaling == 1) f /= c->rope_factor;
        if (c->rope_scaling == 2) {
            float wavelen = 2.0f * (float)M_PI / f;
            float low_wavelen = c->rope_orig_ctx / c->rope_low_freq;
            float high_wavelen = c->rope_orig_ctx / c->rope_high_freq;
            if (wavelen > low_wavelen) {
                f /= c->rope_factor;
            } else if (wavelen >= high_wavelen) {
                float smooth = (c->rope_orig_ctx / wavelen - c->rope_low_freq) /
                               (c->rope_high_freq - c->rope_low_freq);
                f = (1 - smooth) * f / c->rope_factor + smooth * f;
            }
        }
        inv_freq[i] = f;
    }
}
