// safetensors reader: validates the JSON header completely, then hands out
// views into the mapping (nothing is copied).
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "names.h"

#define MAX_HEADER (100u << 20)     // the limit the reference (Rust) reader uses
#define MAX_EXACT (INT64_C(1) << 53) // JSON numbers are doubles: exact up to 2^53

// A JSON number holding an integer in [0, 2^53]; -1 for anything else.
static int64_t json_uint(const cJSON *j) {
    if (!cJSON_IsNumber(j)) return -1;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= (double)MAX_EXACT) || d != (double)(int64_t)d) return -1;
    return (int64_t)d;
}

static int parse_dtype(aha_tensor *t, const cJSON *e) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const char *s = cJSON_IsString(j) ? j->valuestring : NULL;
    if (!s || !aha_name_ok(s, strlen(s))) {
        aha_err("tensor '%s': dtype missing or not a name", t->name);
        return -1;
    }
    static const aha_dtype known[] = {AHA_F32, AHA_F16, AHA_BF16};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (strcmp(s, aha_dtype_name(known[i])) == 0) {
            t->dtype = known[i];
            return 0;
        }
    }
    aha_err("unknown dtype '%s' for tensor '%s'", s, t->name);
    return -1;
}

static int parse_shape(aha_tensor *t, const cJSON *e) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(j)) {
        aha_err("tensor '%s': shape missing or not an array", t->name);
        return -1;
    }
    int ndim = cJSON_GetArraySize(j);
    if (ndim > AHA_MAX_DIMS) {
        aha_err("tensor '%s': shape has %d dims (at most %d)", t->name, ndim, AHA_MAX_DIMS);
        return -1;
    }
    t->ndim = ndim ? ndim : 1; // a scalar is stored as shape [1]
    t->shape[0] = 1;
    int i = 0;
    for (const cJSON *d = j->child; d; d = d->next, i++) {
        int64_t v = json_uint(d);
        if (v < 0) {
            aha_err("tensor '%s': shape[%d] is not an integer in 0..2^53", t->name, i);
            return -1;
        }
        if (v == 0) {
            aha_err("tensor '%s': shape[%d] is 0 (empty tensors are not supported)", t->name, i);
            return -1;
        }
        t->shape[i] = v;
    }
    int64_t numel = aha_tensor_numel(t);
    if (numel < 0 || (t->nbytes = aha_dtype_bytes(t->dtype, numel, 1)) == (size_t)-1) {
        aha_err("tensor '%s': shape overflows (too many elements)", t->name);
        return -1;
    }
    return 0;
}

static int parse_offsets(aha_tensor *t, const cJSON *e, const uint8_t *base, uint64_t avail) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    int64_t b = -1, end = -1;
    if (cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2) {
        b = json_uint(j->child);
        end = json_uint(j->child->next);
    }
    if (b < 0 || end < 0) {
        aha_err("tensor '%s': data_offsets is not [begin, end] of non-negative integers", t->name);
        return -1;
    }
    if (b > end) {
        aha_err("tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] end before they begin",
                t->name, b, end);
        return -1;
    }
    if ((uint64_t)end > avail) {
        aha_err("tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] past the end of the data"
                " (%" PRIu64 " bytes)", t->name, b, end, avail);
        return -1;
    }
    if ((uint64_t)(end - b) != t->nbytes) {
        aha_err("tensor '%s': data_offsets [%" PRId64 ", %" PRId64 "] hold %" PRId64
                " bytes, but %s with %" PRId64 " elements needs %zu", t->name, b, end, end - b,
                aha_dtype_name(t->dtype), aha_tensor_numel(t), t->nbytes);
        return -1;
    }
    t->data = base + b;
    return 0;
}

static int cmp_data(const void *a, const void *b) {
    const uint8_t *x = (*(const aha_tensor *const *)a)->data;
    const uint8_t *y = (*(const aha_tensor *const *)b)->data;
    return (x > y) - (x < y);
}

// No two tensors share a name or a byte.
static int check_unique(const aha_safetensors *st) {
    size_t n = (size_t)st->n;
    const char **names = aha_malloc(n, sizeof *names, "tensor names");
    const aha_tensor **byoff = aha_malloc(n, sizeof *byoff, "tensor order");
    int rc = names && byoff ? 0 : -1;
    for (size_t i = 0; !rc && i < n; i++) {
        names[i] = st->tensors[i].name;
        byoff[i] = &st->tensors[i];
    }
    const char *dup = rc ? NULL : aha_names_dup(names, n);
    if (dup) {
        aha_err("duplicate tensor '%s'", dup);
        rc = -1;
    }
    if (!rc) qsort(byoff, n, sizeof *byoff, cmp_data);
    for (size_t i = 1; !rc && i < n; i++) {
        const aha_tensor *a = byoff[i - 1], *b = byoff[i];
        if ((const uint8_t *)a->data + a->nbytes > (const uint8_t *)b->data) {
            aha_err("tensors '%s' and '%s' overlap", a->name, b->name);
            rc = -1;
        }
    }
    free(names);
    free(byoff);
    return rc;
}

static int parse(aha_safetensors *st, const uint8_t *data, size_t size, cJSON **root) {
    if (size < 8) {
        aha_err("file is %zu bytes, too short for a safetensors header", size);
        return -1;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)data[i] << 8 * i;
    if (hlen > MAX_HEADER) {
        aha_err("header length %" PRIu64 " is over the 100 MB limit", hlen);
        return -1;
    }
    if (hlen > size - 8) {
        aha_err("header length %" PRIu64 " is past the end of the file (%zu bytes)", hlen, size);
        return -1;
    }
    const char *json = (const char *)data + 8, *end = NULL;
    *root = cJSON_ParseWithLengthOpts(json, hlen, &end, 0);
    if (!*root) {
        aha_err("header is not valid JSON (error at byte %td)", end ? end - json + 8 : 8);
        return -1;
    }
    for (; end < json + hlen; end++) { // writers pad the header with spaces
        if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') {
            aha_err("header has bytes after the JSON (at byte %td)", end - json + 8);
            return -1;
        }
    }
    if (!cJSON_IsObject(*root)) {
        aha_err("header is not a JSON object");
        return -1;
    }
    const uint8_t *base = data + 8 + hlen;
    uint64_t avail = size - 8 - hlen;

    size_t n = 0, name_bytes = 0;
    for (const cJSON *e = (*root)->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        n++;
        name_bytes += strlen(e->string) + 1;
    }
    st->tensors = aha_calloc(n, sizeof *st->tensors, "tensor table");
    st->names = aha_malloc(name_bytes, 1, "tensor names");
    if (!st->tensors || !st->names) return -1;
    char *name = st->names;
    for (const cJSON *e = (*root)->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        size_t len = strlen(e->string);
        if (!aha_name_ok(e->string, len)) {
            aha_err("tensor %d: name is empty or has control characters", st->n);
            return -1;
        }
        aha_tensor *t = &st->tensors[st->n];
        t->name = memcpy(name, e->string, len + 1);
        name += len + 1;
        if (!cJSON_IsObject(e)) {
            aha_err("tensor '%s': entry is not a JSON object", t->name);
            return -1;
        }
        if (parse_dtype(t, e) || parse_shape(t, e) || parse_offsets(t, e, base, avail)) return -1;
        st->n++;
    }
    return check_unique(st);
}

int aha_st_parse(aha_safetensors *st, const char *path, const uint8_t *data, size_t size) {
    memset(st, 0, sizeof *st);
    cJSON *root = NULL;
    int rc = -1;
    if (!(st->path = strdup(path)))
        aha_err("out of memory");
    else
        rc = parse(st, data, size, &root);
    cJSON_Delete(root);
    if (rc) {
        aha_err_prefix(path);
        aha_st_close(st);
    }
    return rc;
}

int aha_st_open(aha_safetensors *st, const char *path) {
    aha_map m;
    if (aha_map_open(&m, path)) return -1;
    if (aha_st_parse(st, path, m.data, m.size)) {
        aha_map_close(&m);
        return -1;
    }
    st->map = m;
    return 0;
}

void aha_st_close(aha_safetensors *st) {
    aha_map_close(&st->map);
    free(st->tensors);
    free(st->names);
    free(st->path);
    memset(st, 0, sizeof *st);
}

const aha_tensor *aha_st_find(const aha_safetensors *st, const char *name) {
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

int aha_st_write(const char *path, const aha_st_out *t, int n, const char **key, const char **val, int n_meta) {
    cJSON *root = cJSON_CreateObject();
    if (n_meta) {
        cJSON *md = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; i < n_meta; i++) cJSON_AddStringToObject(md, key[i], val[i]);
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = sizeof(float) * (size_t)t[i].shape[0] * (t[i].ndim > 1 ? (size_t)t[i].shape[1] : 1);
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON *shape = cJSON_AddArrayToObject(e, "shape"), *offs = cJSON_AddArrayToObject(e, "data_offsets");
        for (int d = 0; d < t[i].ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    FILE *f = json ? fopen(path, "wb") : NULL;
    if (!f) {
        aha_err("%s: cannot write", path);
        free(json);
        return -1;
    }
    size_t len = strlen(json);
    uint64_t hlen = (len + 7) / 8 * 8; // data 8-byte aligned: the header padded with spaces
    int ok = fwrite(&hlen, 8, 1, f) == 1 && fwrite(json, 1, len, f) == len;
    for (size_t i = len; ok && i < hlen; i++) ok = fputc(' ', f) != EOF;
    for (int i = 0; ok && i < n; i++) {
        size_t numel = (size_t)t[i].shape[0] * (t[i].ndim > 1 ? (size_t)t[i].shape[1] : 1);
        ok = fwrite(t[i].data, sizeof(float), numel, f) == numel;
    }
    free(json);
    if (fclose(f) != 0 || !ok) {
        aha_err("%s: write failed", path);
        return -1;
    }
    return 0;
}
