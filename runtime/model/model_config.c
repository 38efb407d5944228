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
#define MAX_LAYERS 1024

static const struct {
    const char *name;
    aha_arch arch;
    int aha;
} hf_types[] = {
    {"llama", AHA_ARCH_LLAMA, 0},  {"mistral", AHA_ARCH_LLAMA, 0},
    {"qwen2", AHA_ARCH_QWEN2, 0},  {"qwen3", AHA_ARCH_QWEN3, 0},
    {"olmo2", AHA_ARCH_OLMO2, 0},  {"faolmo", AHA_ARCH_OLMO2, 1},
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

// rope_scaling (transformers 4) or rope_parameters (transformers 5).
static int parse_rope(aha_config *c, const cJSON *root, const char *path) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
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

int aha_config_from_json(aha_config *c, const char *path) {
    memset(c, 0, sizeof *c);
    aha_map map;
    if (aha_map_open(&map, path) != 0) return -1;
    cJSON *root = cJSON_ParseWithLength((const char *)map.data, map.size);
    aha_map_close(&map);
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
                "qwen3, olmo2, faolmo)", path, mt->valuestring);
        goto out;
    }
    c->arch = hf_types[i].arch;
    c->aha = hf_types[i].aha;
    c->rope_pairing = AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = 10000.f;
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
    c->tied = cJSON_IsTrue(tie);
    rc = aha_config_check(c, path);
out:
    cJSON_Delete(root);
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
    };
    size_t i, n = sizeof types / sizeof types[0];
    for (i = 0; i < n && strcmp(types[i].name, arch) != 0; i++) {}
    if (i == n) {
        aha_err("%s: unknown architecture '%s' (supported: llama, qwen2, qwen3, olmo2)",
                g->path, arch);
        return -1;
    }
    c->arch = types[i].arch;
    // llama.cpp's converter permutes llama Q/K rows for adjacent-pair RoPE;
    // the other architectures keep HF's rotate-half layout.
    c->rope_pairing = c->arch == AHA_ARCH_LLAMA ? AHA_ROPE_ADJACENT : AHA_ROPE_HALF;
    c->norm_eps = 1e-6f;
    c->rope_theta = 10000.f;
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
    if (!(c->norm_eps >= 0) || !(c->rope_theta > 0)) {
        aha_err("%s: rms_norm_eps must be >= 0 and rope_theta > 0", path);
        return -1;
    }
    return 0;
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
