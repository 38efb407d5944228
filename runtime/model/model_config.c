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

const aha_kind aha_kinds[AHA_N_KINDS] = {
    [K_LLAMA] = {"llama", "llama", AHA_ARCH_LLAMA, 0, NULL},
    [K_MISTRAL] = {"mistral", NULL, AHA_ARCH_LLAMA, 0, NULL},
    [K_QWEN2] = {"qwen2", "qwen2", AHA_ARCH_QWEN2, 0, NULL},
    [K_QWEN3] = {"qwen3", "qwen3", AHA_ARCH_QWEN3, 0, NULL},
    [K_OLMO2] = {"olmo2", "olmo2", AHA_ARCH_OLMO2, 0, NULL},
    [K_FAOLMO] = {"faolmo", NULL, AHA_ARCH_OLMO2, 1, "OLMo-2 with AHA router rows"},
    [K_GEMMA2] = {"gemma2", "gemma2", AHA_ARCH_GEMMA2, 0, NULL},
    [K_GEMMA3] = {"gemma3_text", "gemma3", AHA_ARCH_GEMMA3, 0, NULL},
    [K_PHI3] = {"phi3", "phi3", AHA_ARCH_PHI3, 0, NULL},
    [K_SMOLLM3] = {"smollm3", "smollm3", AHA_ARCH_SMOLLM3, 0, NULL},
    [K_OLMOE] = {"olmoe", "olmoe", AHA_ARCH_OLMOE, 0, NULL},
    [K_QWEN2MOE] = {"qwen2_moe", "qwen2moe", AHA_ARCH_QWEN2MOE, 0, NULL},
    [K_QWEN3MOE] = {"qwen3_moe", "qwen3moe", AHA_ARCH_QWEN3MOE, 0, NULL},
    [K_MIXTRAL] = {"mixtral", NULL, AHA_ARCH_MIXTRAL, 0, "llama.cpp writes it as a llama with experts"},
    [K_GEMMA3_MM] = {"gemma3", NULL, AHA_ARCH_GEMMA3, 0, "multimodal: its text_config is read"},
};

void aha_kind_names(unsigned mask, int gguf, char *buf, size_t n) {
    size_t u = 0;
    buf[0] = '\0';
    for (int k = 0; k < AHA_N_KINDS; k++) {
        const char *name = gguf ? aha_kinds[k].gguf : aha_kinds[k].model_type;
        if (!(mask >> k & 1) || !name || u >= n) continue;
        u += (size_t)snprintf(buf + u, n - u, "%s%s", u ? ", " : "", name);
    }
}

const char *aha_arch_name(aha_arch a) {
    for (int k = 0; k < AHA_N_KINDS; k++)
        if (aha_kinds[k].arch == a) return aha_kinds[k].gguf ? aha_kinds[k].gguf : aha_kinds[k].model_type;
    return "?";
}

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
    if (c->rope_scaling == AHA_SCALING_LONGROPE && c->head_dim / 2 > AHA_MAX_ROPE_PAIRS) {
        aha_err("%s: longrope with head_dim %d: not implemented (at most %d)", path, c->head_dim,
                2 * AHA_MAX_ROPE_PAIRS);
        return -1;
    }
    if (c->n_experts &&
        (c->n_experts > 4096 || c->n_experts_used < 1 || c->n_experts_used > c->n_experts || c->moe_ffn_dim <= 0 ||
         c->moe_ffn_dim > 16 * MAX_DIM || c->shared_ffn_dim < 0 || c->shared_ffn_dim > 16 * MAX_DIM)) {
        aha_err("%s: implausible mixture of experts (%d experts, %d used, expert ffn %d, shared ffn %d)", path,
                c->n_experts, c->n_experts_used, c->moe_ffn_dim, c->shared_ffn_dim);
        return -1;
    }
    return 0;
}

void aha_config_inv_freq_local(const aha_config *c, float *inv_freq) {
    aha_config local = *c;
    local.rope_theta = c->rope_local_theta;
    local.rope_scaling = AHA_SCALING_NONE;
    aha_config_inv_freq(&local, inv_freq);
}

// YaRN's dimension (a float) whose frequency turns `rot` times over the
// original context (HF's find_correction_dim, in double as Python's math).
static double yarn_dim(double rot, int dim, double base, int orig) {
    return dim * log(orig / (rot * 2 * M_PI)) / (2 * log(base));
}

// The ramp's weight of extrapolation for pair i: 1 below the fast end, 0
// past the slow one, linear between (HF's 1 - linear_ramp_factor, float32).
static float yarn_extrapolation(const aha_config *c, int i) {
    const int dim = c->head_dim;
    double lo = yarn_dim(c->yarn_beta_fast, dim, c->rope_theta, c->rope_orig_ctx);
    double hi = yarn_dim(c->yarn_beta_slow, dim, c->rope_theta, c->rope_orig_ctx);
    if (c->yarn_truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    lo = lo > 0 ? lo : 0;
    hi = hi < dim - 1 ? hi : dim - 1;
    if (lo == hi) hi += 0.001; // as HF: no division by zero
    float ramp = ((float)i - (float)lo) / (float)(hi - lo);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    return 1 - ramp;
}

// Pair i's frequency under the config's scaling; long: LongRoPE's long factors.
static float inv_freq_of(const aha_config *c, int i, int long_factors) {
    // float32 like transformers, so angles round the same way.
    const float base = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)c->head_dim);
    float f = base;
    switch (c->rope_scaling) {
    case AHA_SCALING_NONE: break;
    case AHA_SCALING_LINEAR: f /= c->rope_factor; break;
    case AHA_SCALING_LLAMA3: {
        float wavelen = 2.0f * (float)M_PI / f;
        float low_wavelen = c->rope_orig_ctx / c->rope_low_freq;
        float high_wavelen = c->rope_orig_ctx / c->rope_high_freq;
        if (wavelen > low_wavelen) {
            f /= c->rope_factor;
        } else if (wavelen >= high_wavelen) {
            float smooth = (c->rope_orig_ctx / wavelen - c->rope_low_freq) / (c->rope_high_freq - c->rope_low_freq);
            f = (1 - smooth) * f / c->rope_factor + smooth * f;
        }
        break;
    }
    case AHA_SCALING_YARN: { // HF: interpolation * (1 - e) + extrapolation * e
        const float pos = powf(c->rope_theta, (float)(2 * i) / (float)c->head_dim);
        const float e = yarn_extrapolation(c, i), interp = 1.0f / (c->rope_factor * pos), extrap = 1.0f / pos;
        f = interp * (1 - e) + extrap * e;
        break;
    }
    case AHA_SCALING_LONGROPE: {
        const float pos = powf(c->rope_theta, (float)(2 * i) / (float)c->head_dim);
        f = 1.0f / ((long_factors ? c->rope_long[i] : c->rope_short[i]) * pos);
        break;
    }
    }
    return f;
}

void aha_config_inv_freq(const aha_config *c, float *inv_freq) {
    for (int i = 0; i < c->head_dim / 2; i++) inv_freq[i] = inv_freq_of(c, i, 0);
}

void aha_config_inv_freq_long(const aha_config *c, float *inv_freq) {
    for (int i = 0; i < c->head_dim / 2; i++) inv_freq[i] = inv_freq_of(c, i, 1);
}

double aha_config_yarn_factor(double factor, double mscale) {
    return factor <= 1 ? 1.0 : 0.1 * mscale * log(factor) + 1.0;
}
