// GGUF reader. Every count, length and offset in the file is checked against
// the bytes that remain before it is used, so a hostile file can neither make
// us read outside the mapping nor allocate more than the file could describe.
#include "gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "names.h"

// Smallest possible encodings, to bound the counts in the header: a kv is
// key length, one key byte, type, one value byte; a tensor info is name
// length, one name byte, n_dims, one ne, type, offset.
#define MIN_KV_BYTES (8 + 1 + 4 + 1)
#define MIN_TENSOR_BYTES (8 + 1 + 4 + 8 + 4 + 8)

static const uint8_t type_size[GGUF_TYPE_COUNT] = { // 0: variable size
    [GGUF_UINT8] = 1, [GGUF_INT8] = 1,   [GGUF_UINT16] = 2,  [GGUF_INT16] = 2,
    [GGUF_UINT32] = 4, [GGUF_INT32] = 4, [GGUF_FLOAT32] = 4, [GGUF_BOOL] = 1,
    [GGUF_UINT64] = 8, [GGUF_INT64] = 8, [GGUF_FLOAT64] = 8,
};
static const char *const type_names[GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

// ggml type ids of the dtypes we read; every other id is rejected.
static int dtype_from_ggml(uint32_t id, aha_dtype *out) {
    static const struct { uint32_t id; aha_dtype dt; } map[] = {
        {0, AHA_F32},   {1, AHA_F16},   {2, AHA_Q4_0},  {3, AHA_Q4_1},  {6, AHA_Q5_0},
        {7, AHA_Q5_1},  {8, AHA_Q8_0},  {10, AHA_Q2_K}, {11, AHA_Q3_K}, {12, AHA_Q4_K},
        {13, AHA_Q5_K}, {14, AHA_Q6_K}, {30, AHA_BF16},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        if (map[i].id == id) {
            *out = map[i].dt;
            return 0;
        }
    }
    return -1;
}

// Every ggml type id gguf-py (0.19) knows, by name: only for the message that
// refuses one we do not read. NULL: an id ggml never assigned or retired.
static const char *ggml_type_name(uint32_t id) {
    static const char *const names[] = {
        [0] = "F32",      [1] = "F16",     [2] = "Q4_0",     [3] = "Q4_1",   [6] = "Q5_0",
        [7] = "Q5_1",     [8] = "Q8_0",    [9] = "Q8_1",     [10] = "Q2_K",  [11] = "Q3_K",
        [12] = "Q4_K",    [13] = "Q5_K",   [14] = "Q6_K",    [15] = "Q8_K",  [16] = "IQ2_XXS",
        [17] = "IQ2_XS",  [18] = "IQ3_XXS", [19] = "IQ1_S",  [20] = "IQ4_NL", [21] = "IQ3_S",
        [22] = "IQ2_S",   [23] = "IQ4_XS", [24] = "I8",      [25] = "I16",   [26] = "I32",
        [27] = "I64",     [28] = "F64",    [29] = "IQ1_M",   [30] = "BF16",  [34] = "TQ1_0",
        [35] = "TQ2_0",   [39] = "MXFP4",  [40] = "NVFP4",   [41] = "Q1_0",
    };
    return id < sizeof names / sizeof *names ? names[id] : NULL;
}

typedef struct {
    const uint8_t *b; // [size] the file
    size_t pos;       // next byte to read
    size_t size;
} reader;

static size_t left(const reader *r) { return r->size - r->pos; }

// Consume n bytes; NULL (with an error) when fewer remain.
static const uint8_t *take(reader *r, uint64_t n, const char *what) {
    if (n > left(r)) {
        aha_err("truncated: %s at byte %zu needs %" PRIu64 " bytes, only %zu left", what, r->pos,
                n, left(r));
        return NULL;
    }
    r->pos += n;
    return r->b + r->pos - n;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << 8 * i;
    return v;
}

static int rd_u32(reader *r, uint32_t *v, const char *what) {
    const uint8_t *p = take(r, 4, what);
    if (p) *v = (uint32_t)le(p, 4);
    return p ? 0 : -1;
}

static int rd_u64(reader *r, uint64_t *v, const char *what) {
    const uint8_t *p = take(r, 8, what);
    if (p) *v = le(p, 8);
    return p ? 0 : -1;
}

static int rd_str(reader *r, aha_gguf_str *s, const char *what) {
    if (rd_u64(r, &s->len, what)) return -1;
    s->s = (const char *)take(r, s->len, what);
    return s->s ? 0 : -1;
}

// A name (key or tensor name) as a NUL-terminated copy; index i for errors.
static char *rd_name(reader *r, const char *what, uint64_t i) {
    aha_gguf_str s;
    if (rd_str(r, &s, what)) return NULL;
    if (!aha_name_ok(s.s, s.len)) {
        aha_err("%s %" PRIu64 ": empty or has control characters", what, i);
        return NULL;
    }
    char *copy = strndup(s.s, s.len);
    if (!copy) aha_err("out of memory");
    return copy;
}

static void decode_scalar(aha_gguf_kv *kv, const uint8_t *p) {
    uint64_t u = le(p, type_size[kv->type]);
    switch (kv->type) {
    case GGUF_INT8: kv->v.i = (int8_t)u; break;
    case GGUF_INT16: kv->v.i = (int16_t)u; break;
    case GGUF_INT32: kv->v.i = (int32_t)u; break;
    case GGUF_INT64: kv->v.i = (int64_t)u; break;
    case GGUF_FLOAT32: {
        float f;
        uint32_t bits = (uint32_t)u;
        memcpy(&f, &bits, sizeof f);
        kv->v.f = f;
        break;
    }
    case GGUF_FLOAT64: memcpy(&kv->v.f, &u, sizeof kv->v.f); break;
    default: kv->v.u = u; // unsigned ints, bool
    }
}

static int parse_array(reader *r, aha_gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    if (rd_u32(r, &et, "array type") || rd_u64(r, &n, "array length")) return -1;
    if (et == GGUF_ARRAY) {
        aha_err("nested arrays are not supported");
        return -1;
    }
    if (et >= GGUF_TYPE_COUNT) {
        aha_err("unknown array element type %" PRIu32, et);
        return -1;
    }
    kv->v.arr.type = et;
    kv->v.arr.n = n;
    kv->v.arr.data = r->b + r->pos;
    if (et != GGUF_STRING) {
        if (n > left(r) / type_size[et]) {
            aha_err("array of %" PRIu64 " %s is past the end of the file", n, type_names[et]);
            return -1;
        }
        r->pos += n * type_size[et];
        return 0;
    }
    if (n > left(r) / 8) { // each string has at least its 8-byte length
        aha_err("array of %" PRIu64 " strings is past the end of the file", n);
        return -1;
    }
    if (n && !(kv->v.arr.strs = aha_malloc(n, sizeof *kv->v.arr.strs, "string array"))) return -1;
    for (uint64_t j = 0; j < n; j++)
        if (rd_str(r, &kv->v.arr.strs[j], "array string")) return -1;
    return 0;
}

static int parse_value(reader *r, aha_gguf_kv *kv) {
    uint32_t type;
    if (rd_u32(r, &type, "value type")) return -1;
    if (type >= GGUF_TYPE_COUNT) {
        aha_err("unknown value type %" PRIu32, type);
        return -1;
    }
    kv->type = type;
    if (type == GGUF_ARRAY) return parse_array(r, kv);
    if (type == GGUF_STRING) return rd_str(r, &kv->v.s, "string");
    const uint8_t *p = take(r, type_size[type], type_names[type]);
    if (p) decode_scalar(kv, p);
    return p ? 0 : -1;
}

// Parse ne[], type and offset of tensor t (name already read). -1: the error
// needs the tensor's name in front; 1: it names the tensor already.
static int parse_tensor_info(reader *r, aha_tensor *t, uint64_t *offset) {
    uint32_t n_dims, type;
    if (rd_u32(r, &n_dims, "n_dims")) return -1;
    if (n_dims < 1 || n_dims > AHA_MAX_DIMS) {
        aha_err("%" PRIu32 " dimensions (1 to %d supported)", n_dims, AHA_MAX_DIMS);
        return -1;
    }
    t->ndim = (int)n_dims;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t ne;
        if (rd_u64(r, &ne, "ne")) return -1;
        if (ne == 0 || ne > INT64_MAX) {
            aha_err("ne[%d] = %" PRIu64 " is out of range", i, ne);
            return -1;
        }
        t->shape[t->ndim - 1 - i] = (int64_t)ne; // ne[0] is the contiguous one
    }
    if (rd_u32(r, &type, "type") || rd_u64(r, offset, "offset")) return -1;
    if (dtype_from_ggml(type, &t->dtype)) {
        const char *name = ggml_type_name(type);
        if (name)
            aha_err("tensor '%s' has unsupported type %s (ggml type %" PRIu32 ")", t->name, name,
                    type);
        else
            aha_err("tensor '%s' has unknown ggml type %" PRIu32, t->name, type);
        return 1;
    }
    int64_t numel = aha_tensor_numel(t), row = t->shape[t->ndim - 1];
    if (numel < 0) {
        aha_err("dimensions overflow");
        return -1;
    }
    if (row % aha_dtype_block(t->dtype) != 0) {
        aha_err("ne[0] = %" PRId64 " is not a multiple of the %s block size %d", row,
                aha_dtype_name(t->dtype), aha_dtype_block(t->dtype));
        return -1;
    }
    if ((t->nbytes = aha_dtype_bytes(t->dtype, numel, row)) == (size_t)-1) {
        aha_err("size overflows");
        return -1;
    }
    return 0;
}

// Prefix the current error with "key 'k'" or "tensor 't'" for context.
static void err_context(const char *what, const char *name) {
    char ctx[320];
    snprintf(ctx, sizeof ctx, "%s '%.256s'", what, name);
    aha_err_prefix(ctx);
}

static int check_no_dups(const aha_gguf *g, uint64_t n, int keys) {
    const char **names = aha_malloc(n, sizeof *names, "name index");
    if (!names) return -1;
    for (uint64_t i = 0; i < n; i++) names[i] = keys ? g->kv[i].key : g->tensors[i].name;
    const char *dup = aha_names_dup(names, n);
    if (dup) aha_err("duplicate %s '%s'", keys ? "key" : "tensor", dup);
    free(names);
    return dup ? -1 : 0;
}

static int parse_alignment(aha_gguf *g) {
    g->alignment = 32;
    const aha_gguf_kv *a = aha_gguf_get(g, "general.alignment");
    if (!a) return 0;
    if (a->type != GGUF_UINT32 || a->v.u == 0 || (a->v.u & (a->v.u - 1)) != 0) {
        aha_err("general.alignment must be a power-of-two u32");
        return -1;
    }
    g->alignment = a->v.u;
    return 0;
}

// The tensor table as ggml reads it: each tensor's offset is aligned and is
// the running sum of the padded sizes of the tensors before it, so tensors
// are disjoint and in order, and a type, shape or offset that lies about its
// bytes is caught where it first disagrees; the data section ends with the
// last tensor (its padding optional), so a last tensor that claims fewer
// bytes than it has is caught too. Points each tensor at its data.
static int check_table(aha_gguf *g, const uint8_t *data, size_t avail, const uint64_t *offsets) {
    uint64_t expect = 0, end = 0; // the next tensor's offset; where the last one's data ends
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        aha_tensor *t = &g->tensors[i];
        uint64_t off = offsets[i];
        if (off % g->alignment != 0) {
            aha_err("tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %zu",
                    t->name, off, g->alignment);
            return -1;
        }
        if (off > avail || t->nbytes > avail - off) {
            aha_err("tensor '%s': data [%" PRIu64 ", +%zu) is past the end of the data section"
                    " (%zu bytes)", t->name, off, t->nbytes, avail);
            return -1;
        }
        if (off != expect) {
            aha_err("tensor '%s': offset %" PRIu64 ", expected %" PRIu64 " (the padded sizes of the "
                    "tensors before it): a type, shape or offset in the tensor table is wrong",
                    t->name, off, expect);
            return -1;
        }
        end = off + t->nbytes; // <= avail, checked above
        expect = (end + g->alignment - 1) / g->alignment * g->alignment;
        t->data = data + off;
    }
    if (g->n_tensors && avail > expect) {
        aha_err("%zu bytes after the last tensor '%s' (data ends at %" PRIu64 "): a type or shape in "
                "the tensor table is smaller than the data", (size_t)(avail - end),
                g->tensors[g->n_tensors - 1].name, end);
        return -1;
    }
    return 0;
}

static int parse(aha_gguf *g, reader *r, uint64_t **offsets) {
    const uint8_t *magic = take(r, 4, "magic");
    if (!magic) return -1;
    if (memcmp(magic, "GGUF", 4) != 0) {
        aha_err("not a GGUF file (bad magic)");
        return -1;
    }
    uint64_t n_tensors, n_kv;
    if (rd_u32(r, &g->version, "version")) return -1;
    if (g->version != 2 && g->version != 3) {
        aha_err("unsupported GGUF version %" PRIu32, g->version);
        return -1;
    }
    if (rd_u64(r, &n_tensors, "n_tensors") || rd_u64(r, &n_kv, "n_kv")) return -1;
    if (n_kv > left(r) / MIN_KV_BYTES || n_tensors > left(r) / MIN_TENSOR_BYTES) {
        aha_err("%" PRIu64 " tensors and %" PRIu64 " keys are more than the file can hold",
                n_tensors, n_kv);
        return -1;
    }
    if (!(g->kv = aha_calloc(n_kv, sizeof *g->kv, "kv table")) ||
        !(g->kv_read = aha_calloc(n_kv, 1, "kv table")))
        return -1;
    g->n_kv = n_kv;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!(g->kv[i].key = rd_name(r, "key", i))) return -1;
        if (parse_value(r, &g->kv[i])) {
            err_context("key", g->kv[i].key);
            return -1;
        }
    }
    if (check_no_dups(g, n_kv, 1) || parse_alignment(g)) return -1;

    g->tensors = aha_calloc(n_tensors, sizeof *g->tensors, "tensor table");
    *offsets = aha_calloc(n_tensors, sizeof **offsets, "tensor offsets");
    if (!g->tensors || !*offsets) return -1;
    g->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++) {
        aha_tensor *t = &g->tensors[i];
        if (!(t->name = rd_name(r, "tensor", i))) return -1;
        int rc = parse_tensor_info(r, t, &(*offsets)[i]);
        if (rc) {
            if (rc < 0) err_context("tensor", t->name);
            return -1;
        }
    }
    if (check_no_dups(g, n_tensors, 0)) return -1;

    // The data section starts at the next aligned offset after the infos.
    size_t start = (r->pos + g->alignment - 1) / g->alignment * g->alignment;
    size_t avail = start < r->size ? r->size - start : 0;
    return check_table(g, r->b + start, avail, *offsets);
}

int aha_gguf_parse(aha_gguf *g, const char *path, const uint8_t *data, size_t size) {
    memset(g, 0, sizeof *g);
    reader r = {data, 0, size};
    uint64_t *offsets = NULL; // [n_tensors] until the data section is known
    int rc = -1;
    if (!(g->path = strdup(path)))
        aha_err("out of memory");
    else
        rc = parse(g, &r, &offsets);
    free(offsets);
    if (rc) {
        aha_err_prefix(path);
        aha_gguf_close(g);
    }
    return rc;
}

int aha_gguf_open(aha_gguf *g, const char *path) {
    aha_map m;
    if (aha_map_open(&m, path)) return -1;
    if (aha_gguf_parse(g, path, m.data, m.size)) {
        aha_map_close(&m);
        return -1;
    }
    g->map = m;
    return 0;
}

void aha_gguf_close(aha_gguf *g) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        if (g->kv[i].type == GGUF_ARRAY) free(g->kv[i].v.arr.strs);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) free((char *)g->tensors[i].name);
    free(g->kv);
    free(g->kv_read);
    free(g->tensors);
    free(g->path);
    aha_map_close(&g->map);
    memset(g, 0, sizeof *g);
}

const aha_gguf_kv *aha_gguf_get(const aha_gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        if (strcmp(g->kv[i].key, key) == 0) {
            g->kv_read[i] = 1;
            return &g->kv[i];
        }
    }
    return NULL;
}

const char *aha_gguf_unread(const aha_gguf *g, const char *prefix, int (*known)(const char *key, const void *ctx),
                            const void *ctx) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const char *k = g->kv[i].key;
        if (!g->kv_read[i] && strncmp(k, prefix, strlen(prefix)) == 0 && !(known && known(k, ctx))) return k;
    }
    return NULL;
}

const aha_tensor *aha_gguf_find(const aha_gguf *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
    return NULL;
}

static int bad_type(const aha_gguf *g, const aha_gguf_kv *kv, const char *want) {
    aha_err("%s: key '%s' has type %s, want %s", g->path, kv->key, type_names[kv->type], want);
    return -1;
}

int aha_gguf_get_u64(const aha_gguf *g, const char *key, uint64_t *out) {
    const aha_gguf_kv *kv = aha_gguf_get(g, key);
    if (!kv) return 1;
    switch (kv->type) {
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64: case GGUF_BOOL:
        *out = kv->v.u;
        return 0;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        if (kv->v.i < 0) {
            aha_err("%s: key '%s' is negative (%" PRId64 ")", g->path, key, kv->v.i);
            return -1;
        }
        *out = (uint64_t)kv->v.i;
        return 0;
    }
    return bad_type(g, kv, "a non-negative integer");
}

int aha_gguf_get_f64(const aha_gguf *g, const char *key, double *out) {
    const aha_gguf_kv *kv = aha_gguf_get(g, key);
    if (!kv) return 1;
    switch (kv->type) {
    case GGUF_FLOAT32: case GGUF_FLOAT64:
        *out = kv->v.f;
        return 0;
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        *out = (double)kv->v.u;
        return 0;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        *out = (double)kv->v.i;
        return 0;
    }
    return bad_type(g, kv, "a number");
}

int aha_gguf_get_str(const aha_gguf *g, const char *key, aha_gguf_str *out) {
    const aha_gguf_kv *kv = aha_gguf_get(g, key);
    if (!kv) return 1;
    if (kv->type != GGUF_STRING) return bad_type(g, kv, "a string");
    *out = kv->v.s;
    return 0;
}
