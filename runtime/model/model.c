// Loading a checkpoint: open its files, read the config, bind every weight by
// its Hugging Face name (GGUF names are translated) and check each shape. The
// matrices stay in the mapping in their stored type (or are converted to
// float32, AHA_WEIGHTS_F32); norms and biases are converted where not f32.
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "err.h"
#include "model_config.h"
#include "sha256.h"
#include "model_store.h"

static const char *const weights_names[] = {"stored", "f32"};
const aha_enum aha_weights_names = AHA_ENUM(weights_names);

const char *aha_weights_name(aha_weights w) { return aha_enum_name(&aha_weights_names, (int)w); }

// Find one weight of exactly the given shape (rows 0 for 1-D). An absent
// optional weight leaves *t NULL; an absent required one is an error.
static int find_shaped(aha_model *m, const aha_tensor **t, const char *name, int64_t rows,
                       int64_t cols, int required) {
    const char *file;
    aha_store_find(m->store, name, t, &file);
    if (!*t) {
        if (required) aha_err("%s: missing tensor '%s'", m->path, name);
        return required ? -1 : 0;
    }
    const aha_tensor *x = *t;
    int ndim = rows ? 2 : 1;
    int ok = x->ndim == ndim && x->shape[ndim - 1] == cols && (!rows || x->shape[0] == rows);
    if (!ok) {
        char got[96] = "";
        for (int d = 0; d < x->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                     (long long)x->shape[d]);
        if (rows)
            aha_err("%s: tensor '%s' has shape [%s], expected [%lld, %lld]", file, name, got,
                    (long long)rows, (long long)cols);
        else
            aha_err("%s: tensor '%s' has shape [%s], expected [%lld]", file, name, got,
                    (long long)cols);
        return -1;
    }
    return 0;
}

// A float32 view of t: in place when the file stores aligned f32, else a copy.
static const float *f32_of(aha_model *m, const aha_tensor *t) {
    const float *f = aha_store_f32(m->store, t, &m->converted_bytes);
    if (f == t->data) m->mapped_bytes += t->nbytes;
    return f;
}

// Bind a float32 vector (norms, biases).
static int bind(aha_model *m, const float **dst, const char *name, int64_t rows, int64_t cols,
                int required) {
    const aha_tensor *t;
    *dst = NULL;
    if (find_shaped(m, &t, name, rows, cols, required) != 0) return -1;
    if (!t) return 0;
    *dst = f32_of(m, t);
    return *dst ? 0 : -1;
}

// Bind a weight matrix: in place in its stored type, or (AHA_WEIGHTS_F32, or
// f32 stored unaligned) as float32.
static int bind_w(aha_model *m, aha_weight *dst, const char *name, int64_t rows, int64_t cols) {
    const aha_tensor *t;
    memset(dst, 0, sizeof *dst);
    if (find_shaped(m, &t, name, rows, cols, 1) != 0) return -1;
    if (m->weights == AHA_WEIGHTS_STORED && (t->dtype != AHA_F32 || (uintptr_t)t->data % 4 == 0)) {
        *dst = aha_weight_of(t->data, t->dtype, (int)rows, (int)cols);
        m->mapped_bytes += t->nbytes;
        return 0;
    }
    const float *f = f32_of(m, t);
    if (!f) return -1;
    *dst = aha_weight_f32(f, (int)rows, (int)cols);
    return 0;
}

#define BIND_W(dst, name, rows, cols)                                         \
    do {                                                                      \
        if (bind_w(m, &(dst), name, rows, cols) != 0) return -1;              \
    } while (0)

#define BIND(dst, name, rows, cols, req)                                      \
    do {                                                                      \
        if (bind(m, &(dst), name, rows, cols, req) != 0) return -1;           \
    } while (0)

// Gemma's RMSNorm scales by (1 + w), in float32 (HF Gemma3RMSNorm); folded into
// a copy here so the forward pass multiplies by one weight as for llama.
// llama.cpp's GGUF converter stores w + 1 and transformers' GGUF loader
// subtracts 1 again: 1 + (stored - 1) is what HF then multiplies by.
static int fold_norm(aha_model *m, const float **w, int64_t n) {
    if (!*w || !m->cfg.norm_plus1) return 0;
    float *f = aha_store_alloc(m->store, n, "norm weights");
    if (!f) return -1;
    int gguf = aha_store_gguf(m->store) != NULL;
    for (int64_t i = 0; i < n; i++) f[i] = gguf ? 1.0f + ((*w)[i] - 1.0f) : 1.0f + (*w)[i];
    m->converted_bytes += (size_t)n * sizeof(float);
    *w = f;
    return 0;
}

// Older HF checkpoints save RoPE's inverse frequencies as a buffer
// (rotary_emb.inv_freq): the config gives them, so a saved copy is checked
// against what aha computes from the config, and a disagreement refused.
static int check_inv_freq(aha_model *m, const char *name, const float *inv_freq) {
    const aha_tensor *t;
    const int half = m->cfg.head_dim / 2;
    if (find_shaped(m, &t, name, 0, half, 0) != 0) return -1;
    const float *f = t ? f32_of(m, t) : NULL;
    if (t && !f) return -1;
    for (int i = 0; f && i < half; i++) {
        if (!(fabsf(f[i] - inv_freq[i]) <= 1e-5f * inv_freq[i])) {
            aha_err("%s: tensor '%s' [%d] is %g, but the config's RoPE gives %g", m->path, name, i, f[i], inv_freq[i]);
            return -1;
        }
    }
    return 0;
}

// llama3 RoPE scaling as llama.cpp's converter stores it in a GGUF: no key,
// a tensor rope_freqs.weight of head_dim/2 factors, each pair's inverse
// frequency divided by its own.
static int apply_rope_freqs(aha_model *m) {
    const aha_tensor *t;
    const char *file;
    const int half = m->cfg.head_dim / 2;
    if (!m->cfg.rope_freqs_tensor || !aha_store_gguf(m->store)) return 0; // llama.cpp reads it for llama only
    aha_store_find(m->store, "rope_freqs.weight", &t, &file);
    if (!t) return 0;
    if (t->dtype != AHA_F32 || t->ndim != 1 || t->shape[0] != half) {
        aha_err("%s: tensor 'rope_freqs.weight' is not %d f32 factors (head_dim / 2)", file, half);
        return -1;
    }
    const float *f = f32_of(m, t);
    if (!f) return -1;
    for (int i = 0; i < half; i++) {
        if (!(isfinite(f[i]) && f[i] > 0)) {
            aha_err("%s: tensor 'rope_freqs.weight' [%d] is %g: a factor must be finite and positive", file, i, f[i]);
            return -1;
        }
        m->inv_freq[i] /= f[i];
    }
    m->rope_factors = f;
    return 0;
}

// A phi3 GGUF's longrope factors: the config read them (cfg.rope_short and
// rope_long); noted here as used by the model.
static int use_longrope_tensors(aha_model *m) {
    const aha_tensor *t;
    const char *file;
    if (m->cfg.rope_scaling != AHA_SCALING_LONGROPE || !aha_store_gguf(m->store)) return 0;
    aha_store_find(m->store, "rope_factors_long.weight", &t, &file);
    aha_store_find(m->store, "rope_factors_short.weight", &t, &file);
    return 0;
}

// Any tensor the model did not read and that is not one of these is refused
// by name. A rope_freqs tensor is never one of them.
const aha_ignored_tensor aha_ignored_tensors[] = {
    {"vision_tower.", "a multimodal Gemma-3's vision tower: aha runs the language model on text"},
    {"model.vision_tower.", "a multimodal Gemma-3's vision tower: aha runs the language model on text"},
    {"multi_modal_projector.", "a multimodal Gemma-3's image projector: aha runs the language model on text"},
    {"model.multi_modal_projector.", "a multimodal Gemma-3's image projector: aha runs the language model on text"},
};

const int aha_n_ignored_tensors = sizeof aha_ignored_tensors / sizeof *aha_ignored_tensors;

static int ignored_tensor(const char *name) {
    for (int i = 0; i < aha_n_ignored_tensors; i++)
        if (strncmp(name, aha_ignored_tensors[i].prefix, strlen(aha_ignored_tensors[i].prefix)) == 0) return 1;
    return 0;
}

// Every tensor of the files read (or checked) by the model, or refused.
static int check_all_used(const aha_model *m) {
    const aha_tensor *t;
    const char *file;
    if (!aha_store_unused(m->store, ignored_tensor, &t, &file)) return 0;
    aha_err("%s: tensor '%s' is not used by aha's %s: refused rather than ignored (an architecture or "
            "feature aha does not implement?)", file, t->name, aha_arch_name(m->cfg.arch));
    return -1;
}

// A tied model whose file holds an lm_head too: HF ties it to the
// embeddings whatever it holds, so it must hold the same bytes.
static int check_tied_head(aha_model *m) {
    const aha_tensor *h, *e;
    const char *file, *efile;
    aha_store_find(m->store, "lm_head.weight", &h, &file);
    if (!h || !m->cfg.tied) return 0;
    aha_store_find(m->store, "model.embed_tokens.weight", &e, &efile);
    if (e && h->dtype == e->dtype && h->ndim == e->ndim && h->nbytes == e->nbytes &&
        memcmp(h->shape, e->shape, sizeof h->shape) == 0 && memcmp(h->data, e->data, h->nbytes) == 0)
        return 0;
    aha_err("%s: tensor 'lm_head.weight' differs from the embeddings, but tie_word_embeddings is true", file);
    return -1;
}

// Rows r0..r0+n-1 of w, in place (a fused projection's part).
static aha_weight rows_of(const aha_weight *w, int r0, int n) {
    return aha_weight_of((const char *)w->data + (size_t)r0 * w->row_bytes, w->type, n, w->cols);
}

// One matrix per expert of layer l's `which` (gate_proj, up_proj,
// down_proj), each [rows, cols]: a GGUF's stacked [E, rows, cols] tensor,
// one slice each, or one tensor per expert.
static int bind_experts(aha_model *m, int l, const char *which, aha_weight *w, int64_t rows, int64_t cols) {
    const int E = m->cfg.n_experts;
    char n[160];
    const aha_tensor *t;
    const char *file;
    snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%s.weight", l, which);
    aha_store_find(m->store, n, &t, &file);
    if (!t) {
        for (int e = 0; e < E; e++) {
            snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.%s.weight", l, e, which);
            if (bind_w(m, &w[e], n, rows, cols) != 0) return -1;
        }
        return 0;
    }
    if (t->ndim != 3 || t->shape[0] != E || t->shape[1] != rows || t->shape[2] != cols) {
        aha_err("%s: tensor '%s' is not [%d, %lld, %lld] (experts, rows, columns)", file, n, E, (long long)rows,
                (long long)cols);
        return -1;
    }
    aha_weight all;
    if (m->weights == AHA_WEIGHTS_STORED && (t->dtype != AHA_F32 || (uintptr_t)t->data % 4 == 0)) {
        all = aha_weight_of(t->data, t->dtype, (int)(E * rows), (int)cols);
        m->mapped_bytes += t->nbytes;
    } else {
        const float *f = f32_of(m, t);
        if (!f) return -1;
        all = aha_weight_f32(f, (int)(E * rows), (int)cols);
    }
    for (int e = 0; e < E; e++) w[e] = rows_of(&all, (int)(e * rows), (int)rows);
    return 0;
}

// The shared expert's gate vector: HF's [1, dim] linear, or [dim].
static int bind_gate_vector(aha_model *m, const float **dst, const char *name) {
    const aha_tensor *t;
    const char *file;
    const int64_t dim = m->cfg.dim;
    aha_store_find(m->store, name, &t, &file);
    if (!t || !(t->ndim == 1 ? t->shape[0] == dim : t->ndim == 2 && t->shape[0] == 1 && t->shape[1] == dim)) {
        aha_err(t ? "%s: tensor '%s' is not [1, %lld]" : "%s: missing tensor '%s'", t ? file : m->path, name,
                (long long)dim);
        return -1;
    }
    return (*dst = f32_of(m, t)) ? 0 : -1;
}

// Layer l's mixture of experts (m->moe[l], its matrices in m->experts).
static int bind_moe(aha_model *m, int l) {
    const aha_config *c = &m->cfg;
    const int64_t E = c->n_experts, F = c->moe_ffn_dim, S = c->shared_ffn_dim, dim = c->dim;
    aha_moe *x = &m->moe[l];
    aha_weight *w = m->experts + (size_t)l * 3 * E;
    x->gate = w, x->up = w + E, x->down = w + 2 * E;
    char n[160];
#define LN(suffix) (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), n)
    BIND_W(x->router, LN("mlp.gate.weight"), E, dim);
    if (bind_experts(m, l, "gate_proj", x->gate, F, dim) || bind_experts(m, l, "up_proj", x->up, F, dim) ||
        bind_experts(m, l, "down_proj", x->down, dim, F))
        return -1;
    if (S > 0) {
        BIND_W(x->sh_gate, LN("mlp.shared_expert.gate_proj.weight"), S, dim);
        BIND_W(x->sh_up, LN("mlp.shared_expert.up_proj.weight"), S, dim);
        BIND_W(x->sh_down, LN("mlp.shared_expert.down_proj.weight"), dim, S);
        if (bind_gate_vector(m, &x->sh_router, LN("mlp.shared_expert_gate.weight")) != 0) return -1;
    }
#undef LN
    m->layers[l].moe = x;
    return 0;
}

// Layer l's RoPE tables and score scale: the local layers' own base where
// the model has one; none on a NoPE layer; the long factors' table beside
// the short one (longrope); the scaled RoPE's attention factor in the scale.
static void layer_rope(aha_model *m, int l) {
    const aha_config *c = &m->cfg;
    aha_layer *L = &m->layers[l];
    const int local_table = c->layer_local[l] && m->inv_freq_local, rope = !c->layer_nope[l];
    const int factor = (c->rope_scaling == AHA_SCALING_YARN || c->rope_scaling == AHA_SCALING_LONGROPE) &&
                       c->rope_attn_factor > 0 && c->rope_attn_factor != 1;
    L->inv_freq = !rope ? NULL : local_table ? m->inv_freq_local : m->inv_freq;
    L->inv_freq_long = rope && !local_table ? m->inv_freq_long : NULL;
    L->scale = c->attn_scale;
    if (rope && !local_table && factor) // HF: cos and sin times the factor, so q.k times its square
        L->scale = (c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)c->head_dim)) * c->rope_attn_factor *
                   c->rope_attn_factor;
}

static int bind_layer(aha_model *m, int l) {
    const aha_config *c = &m->cfg;
    aha_layer *L = &m->layers[l];
    int64_t H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, dim = c->dim;
    char n[160];
#define LN(suffix) (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), n)
    if (c->fused_qkv) { // one matrix, q, k and v its row blocks
        aha_weight qkv;
        BIND_W(qkv, LN("self_attn.qkv_proj.weight"), (H + 2 * KV) * D, dim);
        L->wq = rows_of(&qkv, 0, (int)(H * D));
        L->wk = rows_of(&qkv, (int)(H * D), (int)(KV * D));
        L->wv = rows_of(&qkv, (int)((H + KV) * D), (int)(KV * D));
    } else {
        // q_proj decides whether this is an AHA checkpoint: H extra router rows.
        const aha_tensor *q;
        const char *file;
        aha_store_find(m->store, LN("self_attn.q_proj.weight"), &q, &file);
        if (q && q->ndim == 2 && q->shape[0] == H * D + H) {
            if (l > 0 && !c->aha) {
                aha_err("%s: layer %d has AHA router rows but layer 0 has none", file, l);
                return -1;
            }
            m->cfg.aha = 1;
        }
        BIND_W(L->wq, LN("self_attn.q_proj.weight"), H * D + (c->aha ? H : 0), dim);
        BIND_W(L->wk, LN("self_attn.k_proj.weight"), KV * D, dim);
        BIND_W(L->wv, LN("self_attn.v_proj.weight"), KV * D, dim);
    }
    BIND_W(L->wo, LN("self_attn.o_proj.weight"), dim, H * D);
    // q/k/v biases: where the model has them (qwen2); llama.cpp reads them
    // where a GGUF has them; in an HF folder of another type they would be the
    // attention_bias that the config refuses, so a stray one is left unread
    // (and refused).
    if (!c->fused_qkv && (c->qkv_bias || aha_store_gguf(m->store))) {
        BIND(L->bq, LN("self_attn.q_proj.bias"), 0, H * D, c->qkv_bias);
        BIND(L->bk, LN("self_attn.k_proj.bias"), 0, KV * D, c->qkv_bias);
        BIND(L->bv, LN("self_attn.v_proj.bias"), 0, KV * D, c->qkv_bias);
    }
    if (c->qk_norm != AHA_QK_NORM_NONE) {
        const int full = c->qk_norm == AHA_QK_NORM_FULL;
        BIND(L->q_norm, LN("self_attn.q_norm.weight"), 0, full ? H * D : D, 1);
        BIND(L->k_norm, LN("self_attn.k_norm.weight"), 0, full ? KV * D : D, 1);
    }
    if (c->norms == AHA_NORMS_BOTH) { // gemma: the four norms of a block, pre and post
        BIND(L->attn_norm, LN("input_layernorm.weight"), 0, dim, 1);
        BIND(L->post_attn_norm, LN("post_attention_layernorm.weight"), 0, dim, 1);
        BIND(L->ffn_norm, LN("pre_feedforward_layernorm.weight"), 0, dim, 1);
        BIND(L->post_ffn_norm, LN("post_feedforward_layernorm.weight"), 0, dim, 1);
    } else if (c->norms == AHA_NORMS_POST) {
        BIND(L->post_attn_norm, LN("post_attention_layernorm.weight"), 0, dim, 1);
        BIND(L->post_ffn_norm, LN("post_feedforward_layernorm.weight"), 0, dim, 1);
    } else {
        BIND(L->attn_norm, LN("input_layernorm.weight"), 0, dim, 1);
        BIND(L->ffn_norm, LN("post_attention_layernorm.weight"), 0, dim, 1);
    }
    if (fold_norm(m, &L->attn_norm, dim) || fold_norm(m, &L->post_attn_norm, dim) || fold_norm(m, &L->ffn_norm, dim) ||
        fold_norm(m, &L->post_ffn_norm, dim) || fold_norm(m, &L->q_norm, D) || fold_norm(m, &L->k_norm, D))
        return -1;
    if (c->layer_moe[l]) {
        if (bind_moe(m, l) != 0) return -1;
    } else if (c->fused_gate_up) { // one matrix, gate the first half
        aha_weight gu;
        BIND_W(gu, LN("mlp.gate_up_proj.weight"), 2 * (int64_t)c->ffn_dim, dim);
        L->w_gate = rows_of(&gu, 0, c->ffn_dim);
        L->w_up = rows_of(&gu, c->ffn_dim, c->ffn_dim);
    } else {
        BIND_W(L->w_gate, LN("mlp.gate_proj.weight"), c->ffn_dim, dim);
        BIND_W(L->w_up, LN("mlp.up_proj.weight"), c->ffn_dim, dim);
    }
    if (!c->layer_moe[l]) BIND_W(L->w_down, LN("mlp.down_proj.weight"), dim, c->ffn_dim);
    L->window = c->layer_local[l] ? c->sliding_window : 0;
    layer_rope(m, l);
    return L->inv_freq ? check_inv_freq(m, LN("self_attn.rotary_emb.inv_freq"), L->inv_freq) : 0;
#undef LN
}

// Note that the load read path (for aha_model_sha256). 0 or -1.
static int read_file(aha_model *m, const char *path) {
    if (aha_grow(&m->files, &m->cap_files, (size_t)m->n_files + 1, sizeof *m->files, "model files") != 0)
        return -1;
    if (!(m->files[m->n_files] = strdup(path))) {
        aha_err("out of memory");
        return -1;
    }
    m->n_files++;
    return 0;
}

typedef struct {
    const char *name, *path; // relative to the model's path, and as opened
} model_file;

static int by_name(const void *a, const void *b) {
    return strcmp(((const model_file *)a)->name, ((const model_file *)b)->name);
}

int aha_model_sha256(const aha_model *m, char **out) {
    size_t n = (size_t)m->n_files, len = 1, skip = strlen(m->path), k = 0;
    model_file *f = aha_calloc(n + 1, sizeof *f, "model files");
    *out = NULL;
    if (!f) return -1;
    for (size_t i = 0; i < n; i++) { // relative to the model's folder; a GGUF: its name
        const char *p = m->files[i], *base = strrchr(p, '/');
        f[i] = (model_file){!strncmp(p, m->path, skip) && p[skip] == '/' ? p + skip + 1 : base ? base + 1 : p, p};
        len += strlen(f[i].name) + AHA_SHA256_HEX + 2;
    }
    qsort(f, n, sizeof *f, by_name);
    char *s = aha_malloc(len, 1, "model fingerprint"), hex[AHA_SHA256_HEX];
    int rc = s ? 0 : -1;
    if (s) s[0] = '\0';
    for (size_t i = 0; rc == 0 && i < n; i++)
        if ((rc = aha_sha256_file(f[i].path, hex)) == 0) k += (size_t)sprintf(s + k, "%s  %s\n", hex, f[i].name);
    free(f);
    if (rc) free(s);
    else *out = s;
    return rc;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int aha_model_load(aha_model *m, const char *path) {
    return aha_model_load_as(m, path, AHA_WEIGHTS_STORED);
}

int aha_model_load_as(aha_model *m, const char *path, aha_weights how) {
    memset(m, 0, sizeof *m);
    m->weights = how;
    m->path = strdup(path);
    int dir = is_dir(path);
    if (aha_store_open(&m->store, path, dir) != 0) goto fail;
    for (int i = 0; i < aha_store_n_files(m->store); i++)
        if (read_file(m, aha_store_file(m->store, i)) != 0) goto fail;
    if (dir) {
        char cfg_path[4096];
        snprintf(cfg_path, sizeof cfg_path, "%s/config.json", path);
        if (read_file(m, cfg_path) != 0 || aha_config_from_json(&m->cfg, cfg_path) != 0) goto fail;
    } else if (aha_config_from_gguf(&m->cfg, aha_store_gguf(m->store)) != 0) {
        goto fail;
    }
    const aha_config *c = &m->cfg;
    m->format = strdup(dir ? "safetensors" : "gguf");
    m->layers = aha_calloc((size_t)c->n_layers, sizeof *m->layers, "layers");
    m->inv_freq = aha_calloc((size_t)c->head_dim / 2, sizeof(float), "rope frequencies");
    if (!m->layers || !m->inv_freq) goto fail;
    aha_config_inv_freq(c, m->inv_freq);
    if (apply_rope_freqs(m) != 0 || use_longrope_tensors(m) != 0) goto fail;
    if (c->rope_scaling == AHA_SCALING_LONGROPE) {
        if (!(m->inv_freq_long = aha_calloc((size_t)c->head_dim / 2, sizeof(float), "rope frequencies"))) goto fail;
        aha_config_inv_freq_long(c, m->inv_freq_long);
    }
    if (c->n_experts > 0 &&
        (!(m->moe = aha_calloc((size_t)c->n_layers, sizeof *m->moe, "experts")) ||
         !(m->experts = aha_calloc((size_t)c->n_layers * 3 * c->n_experts, sizeof *m->experts, "experts"))))
        goto fail;
    if (c->rope_local_theta > 0) {
        m->inv_freq_local = aha_calloc((size_t)c->head_dim / 2, sizeof(float), "rope frequencies");
        if (!m->inv_freq_local) goto fail;
        aha_config_inv_freq_local(c, m->inv_freq_local);
    }
    if (bind_w(m, &m->tok_emb, "model.embed_tokens.weight", c->vocab, c->dim) != 0 ||
        bind(m, &m->out_norm, "model.norm.weight", 0, c->dim, 1) != 0 ||
        fold_norm(m, &m->out_norm, c->dim) != 0)
        goto fail;
    for (int l = 0; l < c->n_layers; l++)
        if (bind_layer(m, l) != 0) goto fail;
    if (c->tied)
        m->lm_head = m->tok_emb;
    else if (bind_w(m, &m->lm_head, "lm_head.weight", c->vocab, c->dim) != 0)
        goto fail;
    if (check_tied_head(m) != 0 || check_all_used(m) != 0) goto fail;
    aha_store_summary(m->store, &m->n_params, &m->dtype);
    // The tokenizer is optional for the weights: a missing or broken one is
    // reported by the commands that need text, not by every load.
    int tok_rc = 1;
    if (dir) {
        char tok_path[4096];
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", path);
        struct stat st;
        if (stat(tok_path, &st) == 0 && (tok_rc = read_file(m, tok_path)) == 0) tok_rc = aha_tok_load_json(&m->tok, tok_path);
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer_config.json", path);
        if (tok_rc == 0 && stat(tok_path, &st) == 0 &&
            (read_file(m, tok_path) != 0 || aha_tok_load_config(m->tok, tok_path) != 0)) {
            aha_tok_free(m->tok);
            m->tok = NULL;
            tok_rc = -1;
        }
    } else if (aha_gguf_get(aha_store_gguf(m->store), "tokenizer.ggml.model")) {
        tok_rc = aha_tok_load_gguf(&m->tok, aha_store_gguf(m->store));
    }
    if (tok_rc == 0 && aha_tok_vocab_size(m->tok) > c->vocab) {
        aha_err("%s: tokenizer has %d tokens but the model only %d", path,
                aha_tok_vocab_size(m->tok), c->vocab);
        aha_tok_free(m->tok);
        m->tok = NULL;
        tok_rc = -1;
    }
    if (tok_rc != 0) {
        char msg[1200];
        if (tok_rc > 0) snprintf(msg, sizeof msg, "%s: the model has no tokenizer", path);
        else snprintf(msg, sizeof msg, "%s", aha_errmsg());
        m->tok = NULL;
        m->tok_error = strdup(msg);
    }
    return 0;
fail:
    aha_model_free(m);
    return -1;
}

void aha_model_free(aha_model *m) {
    if (m->tok) aha_tok_free(m->tok);
    aha_store_close(m->store);
    free(m->layers);
    free(m->inv_freq);
    free(m->inv_freq_local);
    free(m->inv_freq_long);
    free(m->moe);
    free(m->experts);
    free(m->path);
    free(m->format);
    free(m->dtype);
    free(m->tok_error);
    for (int i = 0; i < m->n_files; i++) free(m->files[i]);
    free(m->files);
    memset(m, 0, sizeof *m);
}
