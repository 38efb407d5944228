// GGUF reader: every malformed file is refused with one line naming the file
// and the problem; valid files (ours and gguf-py's) read back exactly.
#include "filebuf.h"
#include "gguf.h"

static void gg_header(aha_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}
// One kv: key, value type, then the value's n bytes.
static void put_kv(aha_buf *b, const char *key, uint32_t type, const void *v, size_t n) {
    put_str(b, key);
    put_u32(b, type);
    put(b, v, n);
}
static void gg_kv_u32(aha_buf *b, const char *key, uint32_t v) { put_kv(b, key, GGUF_UINT32, &v, 4); }
static void gg_tensor(aha_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                      uint64_t offset) {
    put_str(b, name);
    put_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) put_u64(b, ne[i]);
    put_u32(b, type);
    put_u64(b, offset);
}
static void gg_expect_fail(aha_buf *b, const char *phrase) {
    aha_gguf g;
    const char *path = write_tmp("bad.gguf", b);
    check_refused(aha_gguf_open(&g, path), path, phrase);
}

// Broken headers and tables, one builder each.
static void g_magic(aha_buf *b) { put(b, "GGML\3\0\0\0", 8); }
static void g_version(aha_buf *b) { gg_header(b, 1, 0, 0); }
static void g_truncated(aha_buf *b) { put(b, "GGUF\3\0\0\0\0\0", 10); }
static void g_n_tensors(aha_buf *b) { gg_header(b, 3, UINT64_C(1) << 40, 0); }
static void g_n_kv(aha_buf *b) { gg_header(b, 3, 0, UINT64_MAX); }
static void g_key_len(aha_buf *b) {
    gg_header(b, 3, 0, 1);
    put_u64(b, 1000);
    put(b, "a key that stops", 16);
}
static void g_dup_key(aha_buf *b) {
    gg_header(b, 3, 0, 2);
    gg_kv_u32(b, "k", 1);
    gg_kv_u32(b, "k", 2);
}
static void g_dup_tensor(aha_buf *b) {
    gg_header(b, 3, 2, 0);
    gg_tensor(b, "t", 1, (const uint64_t[]){32}, 0, 0);
    gg_tensor(b, "t", 1, (const uint64_t[]){32}, 0, 128);
    pad_to(b, 32);
    put(b, (uint8_t[256]){0}, 256);
}

// Two f32 tensors "a" and "b" of 32 values (128 bytes each) at the offsets
// given, and `data` bytes of data: the tensor table's lies.
static void gg_two(aha_buf *b, uint64_t off_a, uint64_t off_b, size_t data) {
    gg_header(b, 3, 2, 0);
    gg_tensor(b, "a", 1, (const uint64_t[]){32}, 0, off_a);
    gg_tensor(b, "b", 1, (const uint64_t[]){32}, 0, off_b);
    pad_to(b, 32);
    for (size_t k = 0; k < data; k++) put(b, "", 1);
}
static void g_alias(aha_buf *b) { gg_two(b, 0, 0, 256); }
static void g_gap(aha_buf *b) { gg_two(b, 0, 160, 288); }
static void g_swapped(aha_buf *b) { gg_two(b, 128, 0, 256); }
static void g_trailing(aha_buf *b) { gg_two(b, 0, 128, 256 + 64); }

static const struct {
    const char *name;
    void (*build)(aha_buf *);
    const char *phrase;
} gg_bad[] = {
    {"gguf: tensor offset aliased onto another's", g_alias,
     "tensor 'b': offset 0, expected 128 (the padded sizes of the tensors before it)"},
    {"gguf: a gap between tensors", g_gap, "tensor 'b': offset 160, expected 128"},
    {"gguf: tensors out of order", g_swapped, "tensor 'a': offset 128, expected 0"},
    {"gguf: bytes after the last tensor", g_trailing, "64 bytes after the last tensor 'b' (data ends at 256)"},
    {"gguf: bad magic", g_magic, "bad magic"},
    {"gguf: wrong version", g_version, "unsupported GGUF version 1"},
    {"gguf: truncated header", g_truncated, "truncated: n_tensors"},
    {"gguf: n_tensors absurd", g_n_tensors, "more than the file can hold"},
    {"gguf: n_kv absurd", g_n_kv, "more than the file can hold"},
    {"gguf: key length past end", g_key_len,
     "truncated: key at byte 32 needs 1000 bytes, only 16 left"},
    {"gguf: duplicate keys", g_dup_key, "duplicate key 'k'"},
    {"gguf: duplicate tensor names", g_dup_tensor, "duplicate tensor 't'"},
};

static void test_gguf_bad(int i) {
    aha_buf b = {0};
    gg_bad[i].build(&b);
    gg_expect_fail(&b, gg_bad[i].phrase);
}

// Files with one kv: key, value type, then the value's bytes as given.
#define VAL(s) s, sizeof s - 1
static const struct {
    const char *name, *key;
    uint32_t type;
    const char *value;
    size_t len;
    const char *phrase;
} gg_bad_kv[] = {
    {"gguf: empty key", "", GGUF_UINT32, VAL("\1\0\0\0"), "key 0: empty"},
    {"gguf: unknown kv type", "k", 13, VAL("\0\0\0\0"), "key 'k': unknown value type 13"},
    {"gguf: string length past end", "k", GGUF_STRING, VAL("\x63\0\0\0\0\0\0\0abc"),
     "key 'k': truncated: string at byte 45 needs 99 bytes, only 3 left"},
    {"gguf: nested array", "k", GGUF_ARRAY, VAL("\x9\0\0\0\1\0\0\0\0\0\0\0"),
     "key 'k': nested arrays are not supported"},
    {"gguf: array count past end", "k", GGUF_ARRAY, VAL("\4\0\0\0\0\0\0\0\0\0\0\x10"),
     "key 'k': array of 1152921504606846976 u32 is past the end"},
    {"gguf: string array count past end", "k", GGUF_ARRAY, VAL("\x8\0\0\0\xe8\3\0\0\0\0\0\0"),
     "key 'k': array of 1000 strings is past the end"},
    {"gguf: alignment not a power of two", "general.alignment", GGUF_UINT32, VAL("\x18\0\0\0"),
     "general.alignment must be a power-of-two u32"},
    {"gguf: alignment zero", "general.alignment", GGUF_UINT32, VAL("\0\0\0\0"),
     "general.alignment must be a power-of-two u32"},
    {"gguf: alignment not u32", "general.alignment", GGUF_UINT64, VAL("\x20\0\0\0\0\0\0\0"),
     "general.alignment must be a power-of-two u32"},
};

static void test_gguf_bad_kv(int i) {
    aha_buf b = {0};
    gg_header(&b, 3, 0, 1);
    put_kv(&b, gg_bad_kv[i].key, gg_bad_kv[i].type, gg_bad_kv[i].value, gg_bad_kv[i].len);
    gg_expect_fail(&b, gg_bad_kv[i].phrase);
}

// Files with one tensor "t" (ne, ggml type, offset) and `data` bytes of data.
static const struct {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[AHA_MAX_DIMS + 1];
    uint32_t type;
    uint64_t offset;
    size_t data;
    const char *phrase;
} gg_bad_tensor[] = {
    {"gguf: n_dims 0", 0, {32}, 0, 0, 128, "tensor 't': 0 dimensions"},
    {"gguf: n_dims 5", 5, {32, 1, 1, 1, 1}, 0, 0, 128, "tensor 't': 5 dimensions"},
    {"gguf: zero ne", 2, {32, 0}, 0, 0, 128, "tensor 't': ne[1] = 0 is out of range"},
    {"gguf: unsupported ggml type named", 1, {256}, 16, 0, 128,
     "bad.gguf: tensor 't' has unsupported type IQ2_XXS (ggml type 16)"},
    {"gguf: unsupported ggml type named (Q8_1)", 1, {32}, 9, 0, 128,
     "bad.gguf: tensor 't' has unsupported type Q8_1 (ggml type 9)"},
    {"gguf: retired ggml type id", 1, {32}, 4, 0, 128,
     "bad.gguf: tensor 't' has unknown ggml type 4"},
    {"gguf: ggml type id past the table", 1, {32}, 1000, 0, 128,
     "bad.gguf: tensor 't' has unknown ggml type 1000"},
    {"gguf: offset not aligned", 1, {32}, 0, 4, 160,
     "tensor 't': offset 4 is not a multiple of the alignment 32"},
    {"gguf: data past end", 1, {32}, 0, 32, 128,
     "tensor 't': data [32, +128) is past the end of the data section (128 bytes)"},
    {"gguf: dims overflow", 2, {UINT64_C(1) << 32, UINT64_C(1) << 32}, 0, 0, 0,
     "tensor 't': dimensions overflow"},
    {"gguf: bytes overflow", 1, {UINT64_C(1) << 62}, 0, 0, 0, "tensor 't': size overflows"},
    {"gguf: ne[0] not a block multiple", 2, {33, 2}, 8, 0, 68,
     "tensor 't': ne[0] = 33 is not a multiple of the Q8_0 block size 32"},
    {"gguf: ne[0] not a Q2_K block multiple", 1, {128}, 10, 0, 84,
     "tensor 't': ne[0] = 128 is not a multiple of the Q2_K block size 256"},
    // One byte short of each new type's size: 2 rows of 32 or 256 values.
    {"gguf: Q5_0 data one byte short", 2, {32, 2}, 6, 0, 43,
     "tensor 't': data [0, +44) is past the end of the data section (43 bytes)"},
    {"gguf: Q5_1 data one byte short", 2, {32, 2}, 7, 0, 47,
     "tensor 't': data [0, +48) is past the end of the data section (47 bytes)"},
    {"gguf: Q2_K data one byte short", 2, {256, 2}, 10, 0, 167,
     "tensor 't': data [0, +168) is past the end of the data section (167 bytes)"},
    {"gguf: Q3_K data one byte short", 2, {256, 2}, 11, 0, 219,
     "tensor 't': data [0, +220) is past the end of the data section (219 bytes)"},
    {"gguf: Q5_K data one byte short", 2, {256, 2}, 13, 0, 351,
     "tensor 't': data [0, +352) is past the end of the data section (351 bytes)"},
};

static void test_gguf_bad_tensor(int i) {
    aha_buf b = {0};
    gg_header(&b, 3, 1, 0);
    gg_tensor(&b, "t", gg_bad_tensor[i].n_dims, gg_bad_tensor[i].ne, gg_bad_tensor[i].type,
              gg_bad_tensor[i].offset);
    pad_to(&b, 32);
    for (size_t k = 0; k < gg_bad_tensor[i].data; k++) put(&b, "", 1);
    gg_expect_fail(&b, gg_bad_tensor[i].phrase);
}

typedef struct {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[AHA_MAX_DIMS]; // GGUF order: ne[0] is contiguous
    uint32_t ggml;             // ggml type id
    aha_dtype dt;
    size_t nbytes;
} tensor_spec;

static const tensor_spec gg_tensors[] = {
    {"f32", 2, {3, 2}, 0, AHA_F32, 24},        {"f16", 1, {4}, 1, AHA_F16, 8},
    {"bf16", 3, {2, 1, 3}, 30, AHA_BF16, 12},  {"q8_0", 2, {32, 2}, 8, AHA_Q8_0, 68},
    {"q4_0", 1, {32}, 2, AHA_Q4_0, 18},        {"q4_1", 1, {64}, 3, AHA_Q4_1, 40},
    {"q4_k", 1, {256}, 12, AHA_Q4_K, 144},     {"q6_k", 4, {256, 1, 1, 2}, 14, AHA_Q6_K, 420},
    {"q5_0", 2, {64, 3}, 6, AHA_Q5_0, 132},    {"q5_1", 1, {32}, 7, AHA_Q5_1, 24},
    {"q2_k", 2, {512, 1}, 10, AHA_Q2_K, 168},  {"q3_k", 1, {256}, 11, AHA_Q3_K, 110},
    {"q5_k", 3, {256, 2, 2}, 13, AHA_Q5_K, 704},
};
enum { N_GG_TENSORS = sizeof gg_tensors / sizeof *gg_tensors };

// Version 2, alignment 64, one kv of every type, one tensor of every dtype;
// tensor i's bytes are all 0x11 * (i + 1).
static void gg_valid(aha_buf *b) {
    const uint8_t u8 = 200, one = 1;
    const int8_t i8 = -5;
    const uint16_t u16 = 60000;
    const int16_t i16 = -300;
    const int32_t i32 = -7;
    const float f32 = 0.5f;
    const uint64_t u64 = UINT64_C(1) << 40;
    const int64_t i64 = -(INT64_C(1) << 40);
    const double f64 = 0.25;
    gg_header(b, 2, N_GG_TENSORS, 16);
    put_kv(b, "u8", GGUF_UINT8, &u8, 1);
    put_kv(b, "i8", GGUF_INT8, &i8, 1);
    put_kv(b, "u16", GGUF_UINT16, &u16, 2);
    put_kv(b, "i16", GGUF_INT16, &i16, 2);
    gg_kv_u32(b, "u32", 4000000000u);
    put_kv(b, "i32", GGUF_INT32, &i32, 4);
    put_kv(b, "f32", GGUF_FLOAT32, &f32, 4);
    put_kv(b, "bool", GGUF_BOOL, &one, 1);
    put_kv(b, "u64", GGUF_UINT64, &u64, 8);
    put_kv(b, "i64", GGUF_INT64, &i64, 8);
    put_kv(b, "f64", GGUF_FLOAT64, &f64, 8);
    put_kv(b, "str", GGUF_STRING, "\5\0\0\0\0\0\0\0hello", 13);
    put_kv(b, "arr", GGUF_ARRAY, "\4\0\0\0\3\0\0\0\0\0\0\0\1\0\0\0\2\0\0\0\3\0\0\0", 24);
    put_kv(b, "strs", GGUF_ARRAY, "\x8\0\0\0\2\0\0\0\0\0\0\0" // string[2]
                                  "\1\0\0\0\0\0\0\0a\2\0\0\0\0\0\0\0bc", 31);
    put_kv(b, "empty", GGUF_ARRAY, "\x8\0\0\0\0\0\0\0\0\0\0\0", 12);
    gg_kv_u32(b, "general.alignment", 64);
    uint64_t off = 0;
    for (int i = 0; i < N_GG_TENSORS; i++) {
        const tensor_spec *t = &gg_tensors[i];
        gg_tensor(b, t->name, t->n_dims, t->ne, t->ggml, off);
        off = (off + t->nbytes + 63) / 64 * 64;
    }
    for (int i = 0; i < N_GG_TENSORS; i++) {
        pad_to(b, 64);
        for (size_t k = 0; k < gg_tensors[i].nbytes; k++) put(b, &(uint8_t){0x11 * (i + 1)}, 1);
    }
}

static void check_gguf_getters(const aha_gguf *g, const char *path) {
    uint64_t u = 0;
    double f = 0;
    aha_gguf_str s = {0};
    CHECK(aha_gguf_get_u64(g, "u8", &u) == 0 && u == 200, "u8");
    CHECK(aha_gguf_get_u64(g, "u16", &u) == 0 && u == 60000, "u16");
    CHECK(aha_gguf_get_u64(g, "u32", &u) == 0 && u == 4000000000u, "u32");
    CHECK(aha_gguf_get_u64(g, "u64", &u) == 0 && u == UINT64_C(1) << 40, "u64");
    CHECK(aha_gguf_get_u64(g, "bool", &u) == 0 && u == 1, "bool");
    CHECK(aha_gguf_get_u64(g, "i8", &u) == -1 && strstr(aha_errmsg(), path) &&
          strstr(aha_errmsg(), "key 'i8' is negative"), "i8: %s", aha_errmsg());
    CHECK(aha_gguf_get_u64(g, "i16", &u) == -1 && aha_gguf_get_u64(g, "i32", &u) == -1, "i16, i32");
    CHECK(aha_gguf_get_u64(g, "f32", &u) == -1 && strstr(aha_errmsg(), "key 'f32' has type f32"),
          "f32: %s", aha_errmsg());
    CHECK(aha_gguf_get_u64(g, "absent", &u) == 1, "absent key");
    CHECK(aha_gguf_get_f64(g, "f32", &f) == 0 && f == 0.5, "f32 as f64");
    CHECK(aha_gguf_get_f64(g, "f64", &f) == 0 && f == 0.25, "f64");
    CHECK(aha_gguf_get_f64(g, "i64", &f) == 0 && f == -0x1p40, "i64 as f64");
    CHECK(aha_gguf_get_f64(g, "u8", &f) == 0 && f == 200, "u8 as f64");
    CHECK(aha_gguf_get_f64(g, "str", &f) == -1, "str as f64");
    CHECK(aha_gguf_get_str(g, "str", &s) == 0 && s.len == 5 && memcmp(s.s, "hello", 5) == 0, "str");
    CHECK(aha_gguf_get_str(g, "u8", &s) == -1 && strstr(aha_errmsg(), "want a string"),
          "u8 as str: %s", aha_errmsg());
    const aha_gguf_kv *a = aha_gguf_get(g, "arr"), *sa = aha_gguf_get(g, "strs");
    const aha_gguf_kv *e = aha_gguf_get(g, "empty");
    CHECK(a && a->type == GGUF_ARRAY && a->v.arr.type == GGUF_UINT32 && a->v.arr.n == 3 &&
          !a->v.arr.strs && memcmp(a->v.arr.data, "\1\0\0\0\2\0\0\0\3\0\0\0", 12) == 0,
          "u32 array");
    CHECK(sa && sa->v.arr.type == GGUF_STRING && sa->v.arr.n == 2 && sa->v.arr.strs[0].len == 1 &&
          sa->v.arr.strs[0].s[0] == 'a' && sa->v.arr.strs[1].len == 2 &&
          memcmp(sa->v.arr.strs[1].s, "bc", 2) == 0, "string array");
    CHECK(e && e->v.arr.n == 0, "empty array");
}

static void test_gguf_valid(void) {
    aha_buf b = {0};
    gg_valid(&b);
    const char *path = write_tmp("ok.gguf", &b);
    aha_gguf g;
    if (aha_gguf_open(&g, path) != 0) {
        CHECK(0, "%s", aha_errmsg());
        unlink(path);
        return;
    }
    CHECK(g.version == 2 && g.n_kv == 16 && g.n_tensors == N_GG_TENSORS && g.alignment == 64,
          "header");
    for (int i = 0; i < N_GG_TENSORS && !check_failed_; i++) {
        const tensor_spec *want = &gg_tensors[i];
        const aha_tensor *t = aha_gguf_find(&g, want->name);
        CHECK(t && t == &g.tensors[i] && t->dtype == want->dt && t->ndim == (int)want->n_dims &&
                  t->nbytes == want->nbytes,
              "tensor %s", want->name);
        for (int k = 0; t && k < t->ndim; k++) // GGUF's ne[] reversed into row-major order
            CHECK(t->shape[t->ndim - 1 - k] == (int64_t)want->ne[k], "%s shape", want->name);
        const uint8_t *d = t ? t->data : NULL;
        CHECK(d && (size_t)(d - g.map.data) % 64 == 0 && d[0] == 0x11 * (i + 1) &&
                  d[t->nbytes - 1] == 0x11 * (i + 1),
              "%s data", want->name);
    }
    CHECK(!aha_gguf_find(&g, "absent"), "absent tensor");
    check_gguf_getters(&g, path);
    aha_gguf_close(&g);
    unlink(path);
}

// A file written by gguf-py's GGUFWriter, an independent writer (made by
// tests/fuzz/make_corpus.py, where it also seeds the fuzzer).
static void test_gguf_interop(void) {
    const char *path = "tests/fuzz/corpus_gguf/valid_all_types.gguf";
    aha_gguf g;
    if (aha_gguf_open(&g, path) != 0) {
        CHECK(0, "%s", aha_errmsg());
        return;
    }
    uint64_t layers = 0;
    CHECK(g.version == 3 && g.n_kv == 14 && g.n_tensors == 8, "header");
    CHECK(aha_gguf_get_u64(&g, "llama.block_count", &layers) == 0 && layers == 2, "block_count");
    const aha_gguf_kv *tok = aha_gguf_get(&g, "tokenizer.ggml.tokens");
    CHECK(tok && tok->type == GGUF_ARRAY && tok->v.arr.n == 3 && tok->v.arr.strs[2].len == 3 &&
              memcmp(tok->v.arr.strs[2].s, "<s>", 3) == 0,
          "tokens");
    const aha_tensor *f = aha_gguf_find(&g, "f32"), *b = aha_gguf_find(&g, "bf16");
    const aha_tensor *q = aha_gguf_find(&g, "q8_0"), *k = aha_gguf_find(&g, "q6_k");
    CHECK(f && f->ndim == 2 && f->shape[0] == 2 && f->shape[1] == 3, "f32 shape");
    CHECK(b && b->dtype == AHA_BF16 && b->shape[0] == 2 && b->shape[1] == 4, "bf16 shape");
    CHECK(q && q->dtype == AHA_Q8_0 && q->shape[0] == 2 && q->shape[1] == 32, "q8_0 shape");
    CHECK(k && k->dtype == AHA_Q6_K && k->nbytes == 210, "q6_k");
    aha_gguf_close(&g);
}

// gguf-py's writer again, with the quants added later (tests/fuzz/make_corpus.py):
// its ggml type ids map to ours and the sizes agree.
static void test_gguf_interop_new_quants(void) {
    const char *path = "tests/fuzz/corpus_gguf/valid_new_quants.gguf";
    static const struct {
        const char *name;
        aha_dtype dt;
        int64_t rows, cols; // row-major shape
        size_t nbytes;
    } want[] = {
        {"q5_0", AHA_Q5_0, 2, 32, 44},   {"q5_1", AHA_Q5_1, 1, 32, 24},
        {"q2_k", AHA_Q2_K, 1, 256, 84},  {"q3_k", AHA_Q3_K, 1, 256, 110},
        {"q5_k", AHA_Q5_K, 2, 256, 352},
    };
    aha_gguf g;
    if (aha_gguf_open(&g, path) != 0) {
        CHECK(0, "%s", aha_errmsg());
        return;
    }
    CHECK(g.version == 3 && g.n_kv == 2 && g.n_tensors == N(want), "header");
    for (int i = 0; i < N(want); i++) {
        const aha_tensor *t = aha_gguf_find(&g, want[i].name);
        CHECK(t && t->dtype == want[i].dt && t->ndim == 2 && t->shape[0] == want[i].rows &&
                  t->shape[1] == want[i].cols && t->nbytes == want[i].nbytes,
              "%s", want[i].name);
    }
    aha_gguf_close(&g);
}

int main(void) {
    if (tmpdir_make()) return 1;
    for (int i = 0; i < N(gg_bad); i++) TEST(gg_bad[i].name, test_gguf_bad(i));
    for (int i = 0; i < N(gg_bad_kv); i++) TEST(gg_bad_kv[i].name, test_gguf_bad_kv(i));
    for (int i = 0; i < N(gg_bad_tensor); i++) TEST(gg_bad_tensor[i].name, test_gguf_bad_tensor(i));
    TEST("gguf: valid file, every kv type and dtype", test_gguf_valid());
    TEST("gguf: file written by gguf-py", test_gguf_interop());
    TEST("gguf: file written by gguf-py, Q5_0 Q5_1 Q2_K Q3_K Q5_K", test_gguf_interop_new_quants());
    rmdir(tmpdir);
    TEST_EXIT();
}
