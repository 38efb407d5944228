#include "router_file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "err.h"
#include "mapfile.h"
#include "safetensors.h"
#include "weight.h"

// FNV-1a over layer 0's query rows (router rows excluded): tells two models
// of equal shape apart, and is the same for the model and its AHA export.
// Over the float32 values, decoded a row at a time from any stored type, so a
// model has one checksum whether its weights are stored or converted.
static uint64_t q_checksum(const aha_model *m) {
    const aha_config *c = &m->cfg;
    const aha_weight *wq = &m->layers[0].wq;
    uint32_t *u = aha_malloc((size_t)c->dim, sizeof(float), "q_proj row");
    uint64_t h = 1469598103934665603ull;
    for (int r = 0; u && r < c->n_heads * c->head_dim; r++) {
        aha_weight_rows(wq, r, 1, (float *)u);
        for (int i = 0; i < c->dim; i++) h = (h ^ u[i]) * 1099511628211ull;
    }
    free(u);
    return u ? h : 0; // 0: no row buffer, and a checksum that matches no model
}

int aha_router_identity(const aha_model *m, const char *key[8], char val[8][64]) {
    const aha_config *c = &m->cfg;
    int n = 0;
    key[n] = "arch", snprintf(val[n++], 64, "%s", aha_arch_name(c->arch));
    key[n] = "n_layers", snprintf(val[n++], 64, "%d", c->n_layers);
    key[n] = "n_heads", snprintf(val[n++], 64, "%d", c->n_heads);
    key[n] = "dim", snprintf(val[n++], 64, "%d", c->dim);
    // router rows are not the model's own: an AHA checkpoint counts H * dim
    // per layer more than its base
    key[n] = "n_params",
    snprintf(val[n++], 64, "%lld",
             (long long)(m->n_params - (c->aha ? (int64_t)c->n_layers * c->n_heads * c->dim : 0)));
    key[n] = "q_checksum", snprintf(val[n++], 64, "%016llx", (unsigned long long)q_checksum(m));
    return n;
}

const char *aha_router_file_meta(const aha_router_file *rf, const char *key) {
    for (int i = 0; i < rf->n_meta; i++)
        if (strcmp(rf->meta_key[i], key) == 0) return rf->meta_val[i];
    return NULL;
}

static int read_meta(aha_router_file *rf, const char *path, const aha_map *map) {
    uint64_t hlen = 0;
    memcpy(&hlen, map->data, 8); // aha_st_open validated the header
    cJSON *root = cJSON_ParseWithLength((const char *)map->data + 8, hlen);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    for (const cJSON *e = md ? md->child : NULL; e; e = e->next) {
        if (!cJSON_IsString(e)) continue;
        if (rf->n_meta == AHA_ROUTER_META_MAX) { // none dropped unseen
            aha_err("%s: more than %d __metadata__ entries; not a router file aha fit wrote", path,
                    AHA_ROUTER_META_MAX);
            cJSON_Delete(root);
            return -1;
        }
        rf->meta_key[rf->n_meta] = strdup(e->string);
        rf->meta_val[rf->n_meta++] = strdup(e->valuestring);
    }
    cJSON_Delete(root);
    const char *fmt = aha_router_file_meta(rf, "format");
    if (!fmt || strcmp(fmt, "aha-router") != 0) {
        aha_err("%s: not a router file (no __metadata__ format \"aha-router\"; aha fit writes them)", path);
        return -1;
    }
    return 0;
}

// A NaN or Inf weight would make every gate of its layer false (all local)
// without a word: refused, naming the tensor.
static int check_finite(const char *path, const char *name, const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            aha_err("%s: tensor %s holds %s at element %zu (a router is finite)", path, name,
                    isnan(v[i]) ? "NaN" : "Inf", i);
            return -1;
        }
    return 0;
}

int aha_router_file_load(aha_router_file *rf, const char *path, const aha_model *m) {
    const aha_config *c = &m->cfg;
    memset(rf, 0, sizeof *rf);
    aha_safetensors st;
    if (aha_st_open(&st, path) != 0) return -1;
    int rc = -1;
    if (read_meta(rf, path, &st.map) != 0) goto out;
    const char *key[8];
    char val[8][64];
    int n_id = aha_router_identity(m, key, val);
    for (int i = 0; i < n_id; i++) {
        const char *have = aha_router_file_meta(rf, key[i]);
        if (!have || strcmp(have, val[i]) != 0) {
            aha_err("%s: fitted for another model: %s %s, the model (%s) has %s", path, key[i],
                    have ? have : "(missing)", m->path, val[i]);
            goto out;
        }
    }
    const char *thr = aha_router_file_meta(rf, "threshold");
    char *end = NULL;
    rf->threshold = thr ? strtod(thr, &end) : NAN;
    if (!thr || end == thr || *end || !isfinite(rf->threshold)) {
        aha_err("%s: __metadata__ threshold is missing or not a number", path);
        goto out;
    }
    rf->L = c->n_layers, rf->H = c->n_heads, rf->dim = c->dim;
    rf->w = aha_malloc((size_t)rf->L * rf->H, (size_t)rf->dim * sizeof(float), "router weights");
    if (!rf->w) goto out;
    for (int l = 0; l < rf->L; l++) {
        char name[64];
        snprintf(name, sizeof name, "router.%d.weight", l);
        const aha_tensor *t = aha_st_find(&st, name);
        if (!t || t->dtype != AHA_F32 || t->ndim != 2 || t->shape[0] != rf->H || t->shape[1] != rf->dim) {
            aha_err("%s: tensor %s %s, the model needs float32 [%d, %d]", path, name,
                    t ? "has another shape or dtype" : "is missing", rf->H, rf->dim);
            goto out;
        }
        memcpy(rf->w + (size_t)l * rf->H * rf->dim, t->data, t->nbytes);
        if (check_finite(path, name, rf->w + (size_t)l * rf->H * rf->dim, (size_t)rf->H * rf->dim) != 0) goto out;
    }
    for (int l = 0; l < rf->L && aha_st_find(&st, "router.0.bias"); l++) { // all layers or none
        char name[64];
        snprintf(name, sizeof name, "router.%d.bias", l);
        const aha_tensor *t = aha_st_find(&st, name);
        if (!t || t->dtype != AHA_F32 || t->ndim != 1 || t->shape[0] != rf->H) {
            aha_err("%s: tensor %s %s, the model needs float32 [%d] (router.0.bias is there)", path, name,
                    t ? "has another shape or dtype" : "is missing", rf->H);
            goto out;
        }
        if (!rf->bias && !(rf->bias = aha_malloc((size_t)rf->L, rf->H * sizeof(float), "router biases"))) goto out;
        memcpy(rf->bias + (size_t)l * rf->H, t->data, t->nbytes);
        if (check_finite(path, name, rf->bias + (size_t)l * rf->H, (size_t)rf->H) != 0) goto out;
    }
    rc = 0;
out:
    aha_st_close(&st);
    if (rc) aha_router_file_free(rf);
    return rc;
}

void aha_router_file_free(aha_router_file *rf) {
    free(rf->w), free(rf->bias);
    for (int i = 0; i < rf->n_meta; i++) free(rf->meta_key[i]), free(rf->meta_val[i]);
    memset(rf, 0, sizeof *rf);
}

int aha_router_file_save(const char *path, const float *w, const float *bias, int L, int H, int dim,
                         const char **key, const char **val, int n) {
    const int nt = bias ? 2 * L : L;
    aha_st_out *t = aha_calloc((size_t)nt, sizeof *t, "router tensors");
    char(*names)[32] = aha_calloc((size_t)nt, 32, "router tensors");
    int rc = -1;
    if (t && names) {
        for (int l = 0; l < L; l++) {
            snprintf(names[l], 32, "router.%d.weight", l);
            t[l] = (aha_st_out){names[l], 2, {H, dim}, w + (size_t)l * H * dim};
            if (!bias) continue;
            snprintf(names[L + l], 32, "router.%d.bias", l);
            t[L + l] = (aha_st_out){names[L + l], 1, {H}, bias + (size_t)l * H};
        }
        rc = aha_st_write(path, t, nt, key, val, n);
    }
    free(t), free(names);
    return rc;
}

int aha_router_fuse(const aha_router_file *rf, aha_model *m, float ***owned) {
    aha_config *c = &m->cfg;
    const size_t hd = (size_t)c->n_heads * c->head_dim, dim = (size_t)c->dim, H = (size_t)c->n_heads;
    float **q = aha_calloc((size_t)c->n_layers, sizeof *q, "fused q_proj");
    if (!q) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        q[l] = aha_malloc((hd + H) * dim + H, sizeof(float), "fused q_proj"); // + the bias
        if (!q[l]) {
            aha_router_unfuse(q, c->n_layers);
            return -1;
        }
        aha_weight_rows(&m->layers[l].wq, 0, (int)hd, q[l]); // f32 from any stored type
        memcpy(q[l] + hd * dim, rf->w + (size_t)l * H * dim, H * dim * sizeof(float));
        if (rf->bias) memcpy(q[l] + (hd + H) * dim, rf->bias + (size_t)l * H, H * sizeof(float));
    }
    for (int l = 0; l < c->n_layers; l++)
        m->layers[l].wq = aha_weight_f32(q[l], (int)(hd + H), (int)dim), m->layers[l].br = rf->bias ? q[l] + (hd + H) * dim : NULL;
    c->aha = 1;
    *owned = q;
    return 0;
}

void aha_router_unfuse(float **owned, int L) {
    for (int l = 0; owned && l < L; l++) free(owned[l]);
    free(owned);
}

const char *const aha_router_export_files[AHA_EXPORT_N_FILES] = {
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "model.safetensors"};

static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[1 << 16];
    size_t k;
    int ok = b != NULL;
    while (ok && (k = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, k, b) == k;
    ok = ok && !ferror(a);
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = 0;
    if (!ok) aha_err("%s: cannot copy to %s", from, to);
    return ok ? 0 : -1;
}

// A float32 view of w to write: in place when f32, else decoded into *keep
// (the caller frees it). NULL when out of memory.
static const float *f32_rows(const aha_weight *w, float **keep) {
    *keep = NULL;
    if (w->type == AHA_F32) return w->data;
    *keep = aha_malloc((size_t)w->rows * w->cols, sizeof(float), "export weights");
    if (*keep) aha_weight_rows(w, 0, w->rows, *keep);
    return *keep;
}

int aha_router_export(const aha_model *m, const char *dir, const char **key, const char **val, int n_meta) {
    const aha_config *c = &m->cfg;
    if (strcmp(m->format, "safetensors") != 0) {
        aha_err("--export: %s is not a Hugging Face folder (a GGUF's tensors are laid out for llama.cpp); "
                "the router file works with it as it is", m->path);
        return -1;
    }
    // aha holds gemma's norms as 1 + w and writes llama's tensor set: one
    // projection per q, k, v, gate and up, a dense MLP per layer
    if (c->norm_plus1 || c->fused_qkv || c->fused_gate_up || c->n_experts) {
        aha_err("--export: %s is a %s checkpoint, which --export does not write (%s); the router file works with "
                "it as it is",
                m->path, aha_arch_name(c->arch),
                c->norm_plus1  ? "norms that scale by 1 + w"
                : c->n_experts ? "mixture-of-experts MLPs"
                               : "fused projections");
        return -1;
    }
    if (m->layers[0].br) {
        aha_err("--export: the router has a bias (--bias, --per-head, --layer-cuts) and AHA's q_proj rows have none to carry it; "
                "the router file works as it is");
        return -1;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        aha_err("%s: cannot create the folder (%s)", dir, strerror(errno));
        return -1;
    }
    char from[4096], to[4096];
    for (int i = 0; i < AHA_EXPORT_N_COPIED; i++) {
        snprintf(from, sizeof from, "%s/%s", m->path, aha_router_export_files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, aha_router_export_files[i]);
        if ((i == 0 || access(from, F_OK) == 0) && copy_file(from, to) != 0) return -1;
    }
    const int64_t H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, dim = c->dim;
    const int per_layer = 16, n_max = 3 + per_layer * c->n_layers;
    aha_st_out *t = aha_calloc((size_t)n_max, sizeof *t, "export tensors");
    char(*names)[96] = aha_calloc((size_t)n_max, 96, "export tensors");
    float **keep = aha_calloc((size_t)n_max, sizeof *keep, "export tensors"); // decoded matrices
    int n = 0, rc = -1;
    if (!t || !names || !keep) goto done;
#define OUT(ptr, rows, cols, ...)                                                                         \
    do {                                                                                                 \
        const int64_t r_ = (rows), c_ = (cols); /* rows 0: a vector */                               \
        if (ptr) {                                                                                       \
            snprintf(names[n], 96, __VA_ARGS__);                                                         \
            t[n] = (aha_st_out){names[n], r_ ? 2 : 1, {r_ ? r_ : c_, c_}, ptr};                          \
            n++;                                                                                         \
        }                                                                                                \
    } while (0)
#define OUT_W(w, ...)                                                                                     \
    do {                                                                                                 \
        const float *p_ = f32_rows(&(w), &keep[n]);                                                      \
        if (!p_) goto done;                                                                              \
        OUT(p_, (w).rows, (w).cols, __VA_ARGS__);                                                        \
    } while (0)
    OUT_W(m->tok_emb, "model.embed_tokens.weight");
    OUT(m->out_norm, 0, dim, "model.norm.weight");
    if (!c->tied) OUT_W(m->lm_head, "lm_head.weight");
    const int post = c->norms == AHA_NORMS_POST, head = c->qk_norm == AHA_QK_NORM_HEAD;
    for (int l = 0; l < c->n_layers; l++) {
        const aha_layer *y = &m->layers[l];
        OUT_W(y->wq, "model.layers.%d.self_attn.q_proj.weight", l);
        OUT_W(y->wk, "model.layers.%d.self_attn.k_proj.weight", l);
        OUT_W(y->wv, "model.layers.%d.self_attn.v_proj.weight", l);
        OUT_W(y->wo, "model.layers.%d.self_attn.o_proj.weight", l);
        OUT(y->bq, 0, H * D, "model.layers.%d.self_attn.q_proj.bias", l);
        OUT(y->bk, 0, KV * D, "model.layers.%d.self_attn.k_proj.bias", l);
        OUT(y->bv, 0, KV * D, "model.layers.%d.self_attn.v_proj.bias", l);
        OUT(y->q_norm, 0, head ? D : H * D, "model.layers.%d.self_attn.q_norm.weight", l);
        OUT(y->k_norm, 0, head ? D : KV * D, "model.layers.%d.self_attn.k_norm.weight", l);
        OUT(y->attn_norm, 0, dim, "model.layers.%d.input_layernorm.weight", l);
        OUT(post ? y->post_attn_norm : y->ffn_norm, 0, dim, "model.layers.%d.post_attention_layernorm.weight", l);
        OUT(y->post_ffn_norm, 0, dim, "model.layers.%d.post_feedforward_layernorm.weight", l);
        OUT_W(y->w_gate, "model.layers.%d.mlp.gate_proj.weight", l);
        OUT_W(y->w_up, "model.layers.%d.mlp.up_proj.weight", l);
        OUT_W(y->w_down, "model.layers.%d.mlp.down_proj.weight", l);
    }
#undef OUT_W
#undef OUT
    snprintf(to, sizeof to, "%s/%s", dir, aha_router_export_files[AHA_EXPORT_N_COPIED]);
    rc = aha_st_write(to, t, n, key, val, n_meta);
done:
    for (int i = 0; keep && i < n_max; i++) free(keep[i]);
    free(t), free(names), free(keep);
    return rc;
}
