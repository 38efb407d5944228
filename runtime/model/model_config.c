// What both readers of a model's configuration share (model_config_json.c,
// model_config_gguf.c): the rows' lookup, the Gemma rules, the bounds every
// configuration must meet, and the RoPE frequencies.
#include "model_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "model_config_rows.h"

// Sizes beyond these are hostile or a typo; they keep every product of two
// dimensions far inside int64 and size_t.
#define MAX_DIM (1 << 20)
#define MAX_LAYERS AHA_MAX_LAYERS

const cfg_row *aha_cfg_row(const cfg_row *rows, int n, const char *name, unsigned type) {
    for (int i = 0; i < n; i++) {
        const char *r = rows[i].name;
        size_t k = strlen(r);
        int prefix = k >= 2 && r[k - 1] == '*' && r[k - 2] == '.';
        if ((rows[i].types & type) && (prefix ? strncmp(r, name, k - 1) == 0 : strcmp(r, name) == 0)) return &rows[i];
    }
    return NULL;
}

int aha_cfg_only(const char *only, const char *text) {
    size_t n = strlen(text);
    for (const char *s = only; *s;) {
        const char *e = strchr(s, '|');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (k == n && strncmp(s, text, n) == 0) return 1;
        s += k + (e != NULL);
    }
    return 0;
}

int aha_gemma_layer_local(aha_arch a, int l, int pattern) {
    return a == AHA_ARCH_GEMMA2 ? l % 2 == 0 : (l + 1) % pattern != 0;
}

void aha_config_gemma(aha_config *c) {
    c->ffn_gelu = 1;
    c->norm_plus1 = 1;
    c->embed_scale = (float)sqrt((double)c->dim); // HF: torch.tensor(hidden_size**0.5), float32
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
