#include "router_file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mapfile.h"
#include "safetensors.h"

// FNV-1a over layer 0's query rows (router rows excluded): tells two models
// of equal shape apart, and is the same for the model and its AHA export.
static uint64_t q_checksum(const aha_model *m) {
    const aha_config *c = &m->cfg;
    const uint32_t *u = (const uint32_t *)m->layers[0].wq;
    size_t n = (size_t)c->n_heads * c->head_dim * c->dim;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ u[i]) * 1099511628211ull;
    return h;
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
        if (!cJSON_IsString(e) || rf->n_meta == AHA_ROUTER_META_MAX) continue;
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
    }
    rc = 0;
out:
    aha_st_close(&st);
    if (rc) aha_router_file_free(rf);
    return rc;
}

void aha_router_file_free(aha_router_file *rf) {
    free(rf->w);
    for (int i = 0; i < rf->n_meta; i++) free(rf->meta_key[i]), free(rf->meta_val[i]);
    memset(rf, 0, sizeof *rf);
}

int aha_router_file_save(const char *path, const float *w, int L, int H, int dim, const char **key,
                         const char **val, int n) {
    cJSON *root = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(root, "__metadata__");
    for (int i = 0; i < n; i++) cJSON_AddStringToObject(md, key[i], val[i]);
    const size_t bytes = (size_t)H * dim * sizeof(float);
    for (int l = 0; l < L; l++) {
        char name[64];
        snprintf(name, sizeof name, "router.%d.weight", l);
        cJSON *t = cJSON_AddObjectToObject(root, name);
        cJSON_AddStringToObject(t, "dtype", "F32");
        cJSON *shape = cJSON_AddArrayToObject(t, "shape"), *off = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(shape, cJSON_CreateNumber(H));
        cJSON_AddItemToArray(shape, cJSON_CreateNumber(dim));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(l * bytes)));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)((l + 1) * bytes)));
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    FILE *f = json ? fopen(path, "wb") : NULL;
    if (!f) {
        aha_err("%s: cannot write the router file", path);
        free(json);
        return -1;
    }
    size_t len = strlen(json);
    uint64_t hlen = (len + 7) / 8 * 8; // data 8-byte aligned, the header padded with spaces
    int ok = fwrite(&hlen, 8, 1, f) == 1 && fwrite(json, 1, len, f) == len;
    for (size_t i = len; ok && i < hlen; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fwrite(w, bytes, (size_t)L, f) == (size_t)L;
    free(json);
    if (fclose(f) != 0 || !ok) {
        aha_err("%s: write failed", path);
        return -1;
    }
    return 0;
}

int aha_router_fuse(const aha_router_file *rf, aha_model *m, float ***owned) {
    aha_config *c = &m->cfg;
    const size_t hd = (size_t)c->n_heads * c->head_dim, dim = (size_t)c->dim, H = (size_t)c->n_heads;
    float **q = aha_calloc((size_t)c->n_layers, sizeof *q, "fused q_proj");
    if (!q) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        q[l] = aha_malloc(hd + H, dim * sizeof(float), "fused q_proj");
        if (!q[l]) {
            aha_router_unfuse(q, c->n_layers);
            return -1;
        }
        memcpy(q[l], m->layers[l].wq, hd * dim * sizeof(float));
        memcpy(q[l] + hd * dim, rf->w + (size_t)l * H * dim, H * dim * sizeof(float));
    }
    for (int l = 0; l < c->n_layers; l++) m->layers[l].wq = q[l];
    c->aha = 1;
    *owned = q;
    return 0;
}

void aha_router_unfuse(float **owned, int L) {
    for (int l = 0; owned && l < L; l++) free(owned[l]);
    free(owned);
}
