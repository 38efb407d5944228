#include "model_store.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "mapfile.h"
#include "safetensors.h"

struct aha_model_store {
    aha_gguf *gguf;            // the GGUF file, or NULL
    aha_safetensors *shards;   // [n_shards] safetensors files
    int n_shards;
    char *index;               // model.safetensors.index.json when it names the shards, else NULL
    float **owned;             // [n_owned] float32 copies made at load
    int n_owned;
    size_t cap_owned;          // owned allocated
    uint8_t **used;            // [n_files][its tensors] 1 once the model looked the tensor up
};

// HF name -> GGUF name, per llama.cpp's tensor naming.
static const char *const gguf_layer_names[][2] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"}, // gemma
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"}, // phi3's fused projections
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},               // mixture of experts: the router,
    {"mlp.experts.gate_proj.weight", "ffn_gate_exps.weight"}, // the experts stacked [E, rows, cols]
    {"mlp.experts.up_proj.weight", "ffn_up_exps.weight"},
    {"mlp.experts.down_proj.weight", "ffn_down_exps.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"}, // qwen2moe's shared expert
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
};

// Mixtral's HF names for the mixture of experts, under the names aha looks
// up (Qwen's and OLMoE's): block_sparse_moe for mlp, w1 / w3 / w2 for the
// gate / up / down projections.
static int mixtral_name(const char *hf, char *out, size_t n) {
    int layer, expert, off = 0;
    static const char *const w[][2] = {{"gate_proj", "w1"}, {"up_proj", "w3"}, {"down_proj", "w2"}};
    if (sscanf(hf, "model.layers.%d.mlp.gate.weight%n", &layer, &off) == 1 && off && !hf[off]) {
        snprintf(out, n, "model.layers.%d.block_sparse_moe.gate.weight", layer);
        return 1;
    }
    off = 0;
    if (sscanf(hf, "model.layers.%d.mlp.experts.%d.%n", &layer, &expert, &off) != 2 || !off) return 0;
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(w[i][0]);
        if (!strncmp(hf + off, w[i][0], k) && !strcmp(hf + off + k, ".weight")) {
            snprintf(out, n, "model.layers.%d.block_sparse_moe.experts.%d.%s.weight", layer, expert, w[i][1]);
            return 1;
        }
    }
    return 0;
}

static const aha_tensor *gguf_find_hf(const aha_gguf *g, const char *hf) {
    if (strcmp(hf, "model.embed_tokens.weight") == 0) return aha_gguf_find(g, "token_embd.weight");
    if (strcmp(hf, "model.norm.weight") == 0) return aha_gguf_find(g, "output_norm.weight");
    if (strcmp(hf, "lm_head.weight") == 0) return aha_gguf_find(g, "output.weight");
    if (strcmp(hf, "rope_freqs.weight") == 0 || strcmp(hf, "rope_factors_long.weight") == 0 ||
        strcmp(hf, "rope_factors_short.weight") == 0)
        return aha_gguf_find(g, hf); // llama.cpp's own
    int layer, off = 0;
    if (sscanf(hf, "model.layers.%d.%n", &layer, &off) != 1 || off == 0) return NULL;
    const char *suffix = hf + off;
    char name[160];
    // HF's post_attention_layernorm is the pre-MLP norm in llama-style blocks
    // (GGUF ffn_norm) but a true post-attention norm in OLMo-2.
    if (strcmp(suffix, "post_attention_layernorm.weight") == 0) {
        snprintf(name, sizeof name, "blk.%d.post_attention_norm.weight", layer);
        const aha_tensor *t = aha_gguf_find(g, name);
        if (t) return t;
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", layer);
        return aha_gguf_find(g, name);
    }
    for (size_t i = 0; i < sizeof gguf_layer_names / sizeof gguf_layer_names[0]; i++) {
        if (strcmp(suffix, gguf_layer_names[i][0]) == 0) {
            snprintf(name, sizeof name, "blk.%d.%s", layer, gguf_layer_names[i][1]);
            return aha_gguf_find(g, name);
        }
    }
    return NULL;
}

// The shard files named by model.safetensors.index.json, deduplicated.
static int index_files(const char *dir, char ***files, int *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    aha_map map;
    if (aha_map_open(&map, path) != 0) return -1;
    cJSON *root = cJSON_ParseWithLength((const char *)map.data, map.size);
    aha_map_close(&map);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int rc = -1;
    *files = NULL;
    *n = 0;
    if (!cJSON_IsObject(wm)) {
        aha_err("%s: no \"weight_map\" object (malformed JSON?)", path);
        goto out;
    }
    int cap = cJSON_GetArraySize(wm);
    *files = aha_calloc((size_t)cap + 1, sizeof **files, path);
    if (!*files) goto out;
    const cJSON *e;
    cJSON_ArrayForEach(e, wm) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || e->valuestring[0] == '.') {
            aha_err("%s: tensor '%s' maps to an invalid file name", path, e->string);
            goto out;
        }
        int seen = 0;
        for (int i = 0; i < *n && !seen; i++) seen = strcmp((*files)[i], e->valuestring) == 0;
        if (!seen) (*files)[(*n)++] = strdup(e->valuestring);
    }
    if (*n == 0) {
        aha_err("%s: empty weight_map", path);
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int open_shards(aha_model_store *s, const char *dir) {
    char path[4096];
    char **files = NULL;
    int n = 1, rc = -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!file_exists(path)) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        if (!file_exists(path)) {
            aha_err("%s: no model.safetensors or model.safetensors.index.json", dir);
            return -1;
        }
        if (index_files(dir, &files, &n) != 0 || !(s->index = strdup(path))) goto out;
    }
    s->shards = aha_calloc((size_t)n, sizeof *s->shards, "shards");
    if (!s->shards) goto out;
    for (int i = 0; i < n; i++) {
        if (files) snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (aha_st_open(&s->shards[i], path) != 0) goto out;
        s->n_shards++;
        for (int j = 0; j < s->shards[i].n; j++) {
            const char *name = s->shards[i].tensors[j].name;
            for (int k = 0; k < i; k++) {
                if (aha_st_find(&s->shards[k], name)) {
                    aha_err("%s: duplicate tensor '%s' (also in %s)", path, name,
                            s->shards[k].path);
                    goto out;
                }
            }
        }
    }
    rc = 0;
out:
    for (int i = 0; files && files[i]; i++) free(files[i]);
    free(files);
    return rc;
}

// The tensor table of file i (the GGUF, or shard i) and its count.
static const aha_tensor *file_tensors(const aha_model_store *s, int i, int64_t *n) {
    *n = s->gguf ? (int64_t)s->gguf->n_tensors : s->shards[i].n;
    return s->gguf ? s->gguf->tensors : s->shards[i].tensors;
}

static int n_weight_files(const aha_model_store *s) { return s->gguf ? 1 : s->n_shards; }

// One used flag per tensor of every file, all 0.
static int alloc_used(aha_model_store *s) {
    if (!(s->used = aha_calloc((size_t)n_weight_files(s), sizeof *s->used, "tensor table"))) return -1;
    for (int i = 0; i < n_weight_files(s); i++) {
        int64_t n;
        file_tensors(s, i, &n);
        if (!(s->used[i] = aha_calloc((size_t)n, 1, "tensor table"))) return -1;
    }
    return 0;
}

int aha_store_open(aha_model_store **out, const char *path, int dir) {
    aha_model_store *s = aha_calloc(1, sizeof *s, "model store");
    *out = s;
    if (!s) return -1;
    if (dir) return open_shards(s, path) == 0 ? alloc_used(s) : -1;
    s->gguf = aha_calloc(1, sizeof *s->gguf, "gguf");
    if (!s->gguf) return -1;
    if (aha_gguf_open(s->gguf, path) != 0) {
        free(s->gguf);
        s->gguf = NULL;
        return -1;
    }
    return alloc_used(s);
}

void aha_store_close(aha_model_store *s) {
    if (!s) return;
    for (int i = 0; s->used && i < n_weight_files(s); i++) free(s->used[i]);
    free(s->used);
    if (s->gguf) aha_gguf_close(s->gguf);
    free(s->gguf);
    for (int i = 0; i < s->n_shards; i++) aha_st_close(&s->shards[i]);
    free(s->shards), free(s->index);
    for (int i = 0; i < s->n_owned; i++) free(s->owned[i]);
    free(s->owned);
    free(s);
}

const aha_gguf *aha_store_gguf(const aha_model_store *s) { return s->gguf; }

int aha_store_n_files(const aha_model_store *s) { return s->gguf ? 1 : s->n_shards + (s->index != NULL); }

const char *aha_store_file(const aha_model_store *s, int i) {
    if (s->gguf) return s->gguf->path;
    if (s->index) return i ? s->shards[i - 1].path : s->index;
    return s->shards[i].path;
}

// Note t (found in one of the files) as used by the model.
static void mark_used(const aha_model_store *s, const aha_tensor *t) {
    for (int i = 0; t && i < n_weight_files(s); i++) {
        int64_t n;
        const aha_tensor *base = file_tensors(s, i, &n);
        if (t >= base && t < base + n) s->used[i][t - base] = 1;
    }
}

int aha_store_unused(const aha_model_store *s, int (*known)(const char *name), const aha_tensor **t,
                     const char **file) {
    for (int i = 0; i < n_weight_files(s); i++) {
        int64_t n;
        const aha_tensor *base = file_tensors(s, i, &n);
        for (int64_t k = 0; k < n; k++) {
            if (s->used[i][k] || (known && known(base[k].name))) continue;
            *t = &base[k];
            *file = s->gguf ? s->gguf->path : s->shards[i].path;
            return 1;
        }
    }
    return 0;
}

static void find(const aha_model_store *s, const char *hf_name, const aha_tensor **t, const char **file) {
    *t = NULL;
    *file = s->gguf ? s->gguf->path : NULL;
    if (s->gguf) {
        *t = gguf_find_hf(s->gguf, hf_name);
        return;
    }
    for (int i = 0; i < s->n_shards && !*t; i++) {
        *t = aha_st_find(&s->shards[i], hf_name);
        *file = s->shards[i].path;
    }
    // A multimodal Gemma-3 (Gemma3ForConditionalGeneration) keeps the language
    // model under model.language_model. (transformers 5) or language_model.model.
    // (4.x; its lm_head as language_model.lm_head).
    static const char *const prefixes[] = {"model.language_model.", "language_model.model."};
    for (int p = 0; !*t && p < 2 && strncmp(hf_name, "model.", 6) == 0; p++) {
        char name[256];
        snprintf(name, sizeof name, "%s%s", prefixes[p], hf_name + 6);
        for (int i = 0; i < s->n_shards && !*t; i++) *t = aha_st_find(&s->shards[i], name), *file = s->shards[i].path;
    }
    for (int i = 0; !*t && i < s->n_shards && strcmp(hf_name, "lm_head.weight") == 0; i++)
        *t = aha_st_find(&s->shards[i], "language_model.lm_head.weight"), *file = s->shards[i].path;
    char mx[160];
    for (int i = 0; !*t && i < s->n_shards && mixtral_name(hf_name, mx, sizeof mx); i++) {
        *t = aha_st_find(&s->shards[i], mx);
        *file = s->shards[i].path;
    }
}

void aha_store_find(const aha_model_store *s, const char *hf_name, const aha_tensor **t, const char **file) {
    find(s, hf_name, t, file);
    mark_used(s, *t);
}

float *aha_store_alloc(aha_model_store *s, int64_t n, const char *what) {
    float *buf = aha_malloc((size_t)n, sizeof(float), what);
    if (!buf) return NULL;
    if (aha_grow(&s->owned, &s->cap_owned, (size_t)s->n_owned + 1, sizeof *s->owned, what) != 0) {
        free(buf);
        return NULL;
    }
    s->owned[s->n_owned++] = buf;
    return buf;
}

const float *aha_store_f32(aha_model_store *s, const aha_tensor *t, size_t *converted) {
    if (t->dtype == AHA_F32 && (uintptr_t)t->data % sizeof(float) == 0) return t->data;
    int64_t n = aha_tensor_numel(t);
    float *buf = aha_store_alloc(s, n, t->name);
    if (!buf) return NULL;
    aha_dequant(t, buf);
    *converted += (size_t)n * sizeof(float);
    return buf;
}

static void count_dtypes(const aha_tensor *t, int64_t n, int64_t *params, int *seen) {
    for (int64_t i = 0; i < n; i++) {
        *params += aha_tensor_numel(&t[i]);
        seen[t[i].dtype] = 1;
    }
}

void aha_store_summary(const aha_model_store *s, int64_t *n_params, char **dtypes) {
    int seen[AHA_DTYPE_COUNT] = {0};
    *n_params = 0;
    if (s->gguf) count_dtypes(s->gguf->tensors, (int64_t)s->gguf->n_tensors, n_params, seen);
    for (int i = 0; i < s->n_shards; i++)
        count_dtypes(s->shards[i].tensors, s->shards[i].n, n_params, seen);
    char buf[128] = "";
    for (int d = 0; d < AHA_DTYPE_COUNT; d++)
        if (seen[d])
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? "+" : "",
                     aha_dtype_name((aha_dtype)d));
    *dtypes = strdup(buf);
}
