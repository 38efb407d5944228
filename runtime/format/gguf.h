// GGUF v2/v3 reader: header, key/value metadata, tensor infos, aligned data.
#pragma once
#include "mapfile.h"
#include "tensor.h"

enum {
    GGUF_UINT8, GGUF_INT8, GGUF_UINT16, GGUF_INT16, GGUF_UINT32, GGUF_INT32,
    GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_UINT64, GGUF_INT64,
    GGUF_FLOAT64, GGUF_TYPE_COUNT
};

typedef struct {
    const char *s; // points into the mapping, NOT NUL-terminated
    uint64_t len;
} aha_gguf_str;

typedef struct {
    char *key;      // NUL-terminated copy
    uint32_t type;  // GGUF_*
    union {
        uint64_t u; // unsigned ints and bool
        int64_t i;  // signed ints
        double f;   // float32/float64
        aha_gguf_str s;
        struct {
            uint32_t type;       // element type (never GGUF_ARRAY)
            uint64_t n;          // element count
            const uint8_t *data; // first element in the mapping
            aha_gguf_str *strs;  // [n] when type == GGUF_STRING (owned), else NULL
        } arr;
    } v;
} aha_gguf_kv;

typedef struct {
    char *path;
    aha_map map;
    uint32_t version;
    aha_gguf_kv *kv;     // [n_kv]
    uint64_t n_kv;
    uint8_t *kv_read;    // [n_kv] 1 once a loader looked the key up (aha_gguf_get and the getters)
    aha_tensor *tensors; // [n_tensors], shape in row-major (HF) order
    uint64_t n_tensors;
    size_t alignment;    // general.alignment or 32
} aha_gguf;

// Open and validate everything (magic, version, counts, string lengths, types,
// dims, offsets, alignment, sizes, duplicates). 0 or -1 with "path: problem".
int aha_gguf_open(aha_gguf *g, const char *path);
// The same checks on bytes the caller keeps alive and unchanged while g is
// open (g->map stays empty); path only names them in errors. Used by open and
// by the fuzz target.
int aha_gguf_parse(aha_gguf *g, const char *path, const uint8_t *data, size_t size);
void aha_gguf_close(aha_gguf *g);
// The key's entry (NULL when absent), noted as read: a loader that asks for a
// key owns what it means, and aha_gguf_unread finds the keys none asked for.
const aha_gguf_kv *aha_gguf_get(const aha_gguf *g, const char *key);
// The first key under prefix ("" = any) that no loader looked up and that
// known(key, ctx) does not accept (known NULL: none is); NULL when none.
const char *aha_gguf_unread(const aha_gguf *g, const char *prefix, int (*known)(const char *key, const void *ctx),
                            const void *ctx);
const aha_tensor *aha_gguf_find(const aha_gguf *g, const char *name);
// Typed getters: 0 on success; 1 when the key is absent (out untouched);
// -1 (with an error naming the file and key) when present with a bad type.
int aha_gguf_get_u64(const aha_gguf *g, const char *key, uint64_t *out);
int aha_gguf_get_f64(const aha_gguf *g, const char *key, double *out);
int aha_gguf_get_str(const aha_gguf *g, const char *key, aha_gguf_str *out);
