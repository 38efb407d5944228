// Dequantization against gguf-py: tests/fixtures/quant/*.bin (made by
// tests/fixtures/make_quant_fixtures.py) hold stored bytes and the floats
// gguf-py computes from them. Every comparison is bit-exact (NaN payloads
// included): both sides do the same float32 operations in the same order.
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "f16.h"
#include "gguf.h"
#include "tensor.h"

#define FIXTURES "tests/fixtures/quant/"
#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define GEMMA3 "models/gemma-3-270m-q4_k_m.gguf"

// The whole file, malloc'd; NULL if unreadable.
static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static uint32_t rd32(const uint8_t *p) {
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

// Dequantize t and compare with the n floats stored (unaligned) at want.
static void check_dequant(const aha_tensor *t, const uint8_t *want, int64_t n, const char *what) {
    float *got = malloc((size_t)n * sizeof *got);
    aha_dequant(t, got);
    for (int64_t i = 0; i < n; i++) {
        uint32_t g, w;
        memcpy(&g, &got[i], 4);
        memcpy(&w, want + 4 * i, 4);
        if (g != w) {
            float wf;
            memcpy(&wf, &w, 4);
            CHECK(0, "%s[%lld] = %.9g (0x%08x), want %.9g (0x%08x)", what, (long long)i,
                  got[i], g, wf, w);
            break;
        }
    }
    free(got);
}

// "AHAQ", u32 n_values, u32 n_bytes, bytes, n_values f32.
static void test_fixture(aha_dtype dt) {
    char path[256];
    snprintf(path, sizeof path, FIXTURES "%s.bin", aha_dtype_name(dt));
    size_t size;
    uint8_t *buf = slurp(path, &size);
    CHECK(buf && size >= 12 && memcmp(buf, "AHAQ", 4) == 0, "%s: missing or bad", path);
    if (!buf || size < 12) goto out;
    uint32_t n = rd32(buf + 4), nbytes = rd32(buf + 8);
    CHECK(size == 12 + (size_t)nbytes + 4 * (size_t)n, "%s: wrong size", path);
    CHECK(aha_dtype_bytes(dt, n, n) == nbytes, "%s: %u values need %zu bytes, file has %u", path,
          n, aha_dtype_bytes(dt, n, n), nbytes);
    if (check_failed_) goto out;
    aha_tensor t = {.name = path, .dtype = dt, .ndim = 1, .shape = {n},
                    .data = buf + 12, .nbytes = nbytes};
    check_dequant(&t, buf + 12 + nbytes, n, path);
out:
    free(buf);
}

static void test_dtype_sizes(void) {
    CHECK(aha_dtype_block(AHA_Q4_K) == 256 && aha_dtype_block_bytes(AHA_Q4_K) == 144, "Q4_K");
    CHECK(aha_dtype_block(AHA_Q6_K) == 256 && aha_dtype_block_bytes(AHA_Q6_K) == 210, "Q6_K");
    CHECK(aha_dtype_block_bytes(AHA_Q8_0) == 34 && aha_dtype_block_bytes(AHA_Q4_0) == 18, "Q8_0");
    CHECK(aha_dtype_block_bytes(AHA_Q4_1) == 20 && aha_dtype_block_bytes(AHA_BF16) == 2, "Q4_1");
    CHECK(aha_dtype_block(AHA_Q5_0) == 32 && aha_dtype_block_bytes(AHA_Q5_0) == 22, "Q5_0");
    CHECK(aha_dtype_block(AHA_Q5_1) == 32 && aha_dtype_block_bytes(AHA_Q5_1) == 24, "Q5_1");
    CHECK(aha_dtype_block(AHA_Q2_K) == 256 && aha_dtype_block_bytes(AHA_Q2_K) == 84, "Q2_K");
    CHECK(aha_dtype_block(AHA_Q3_K) == 256 && aha_dtype_block_bytes(AHA_Q3_K) == 110, "Q3_K");
    CHECK(aha_dtype_block(AHA_Q5_K) == 256 && aha_dtype_block_bytes(AHA_Q5_K) == 176, "Q5_K");
    CHECK(aha_dtype_bytes(AHA_Q5_0, 256 * 640, 640) == 256 * 20 * 22, "Q5_0 256x640");
    CHECK(aha_dtype_bytes(AHA_Q4_1, 192 * 576, 576) == 192 * 18 * 20, "Q4_1 192x576");
    CHECK(aha_dtype_bytes(AHA_Q8_0, 100, 50) == (size_t)-1, "row not a block multiple");
    CHECK(aha_dtype_bytes(AHA_F32, 10, 3) == (size_t)-1, "n not a multiple of row");
    CHECK(aha_dtype_bytes(AHA_F32, INT64_MAX / 2 + 1, 1) == (size_t)-1, "bytes overflow");
    aha_tensor t = {.ndim = 3, .shape = {INT64_C(1) << 32, INT64_C(1) << 31, 2}};
    CHECK(aha_tensor_numel(&t) == -1, "numel overflow");
    t.shape[0] = 0;
    CHECK(aha_tensor_numel(&t) == -1, "zero dimension");
    t = (aha_tensor){.ndim = 2, .shape = {3, 5}};
    CHECK(aha_tensor_numel(&t) == 15, "numel");
    CHECK(aha_f16_to_f32(0x3c00) == 1.0f && aha_f16_to_f32(0x7bff) == 65504.0f, "f16 normal");
    CHECK(aha_f16_to_f32(0x0001) == 0x1p-24f && aha_f16_to_f32(0x83ff) == -0x3ffp-24f,
          "f16 subnormal");
    CHECK(signbit(aha_f16_to_f32(0x8000)) && isinf(aha_f16_to_f32(0xfc00)), "f16 -0, -inf");
    CHECK(isnan(aha_f16_to_f32(0x7e00)) && aha_bf16_to_f32(0x3f80) == 1.0f, "f16 NaN, bf16 1");
}

// Rows of a real model's tensors against tests/fixtures/quant/<file> ("AHAR",
// u32 count, records of u32 name_len, name, u32 row, u32 n, n f32). The rows
// of `whole`, dequantized whole, must agree too: the multi-threaded path of
// aha_dequant against the single-row one.
static void check_rows(const aha_gguf *g, const char *file, const aha_tensor *whole) {
    float *full = malloc((size_t)aha_tensor_numel(whole) * sizeof *full);
    aha_dequant(whole, full);
    char path[256];
    snprintf(path, sizeof path, FIXTURES "%s", file);
    size_t size = 0;
    uint8_t *rows = slurp(path, &size);
    CHECK(rows && size >= 8 && memcmp(rows, "AHAR", 4) == 0, "%s missing or bad", path);
    const uint8_t *p = check_failed_ ? NULL : rows + 8, *end = p ? rows + size : NULL;
    for (uint32_t r = 0, count = p ? rd32(rows + 4) : 0; r < count && !check_failed_; r++) {
        uint32_t len = rd32(p);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, (const char *)p + 4);
        uint32_t row = rd32(p + 4 + len), n = rd32(p + 8 + len);
        const uint8_t *want = p + 12 + len;
        p = want + 4 * (size_t)n;
        CHECK(p <= end, "%s truncated", path);
        const aha_tensor *t = aha_gguf_find(g, name);
        CHECK(t && t->shape[t->ndim - 1] == n, "%s: missing or row length != %u", name, n);
        if (check_failed_) break;
        size_t row_bytes = aha_dtype_bytes(t->dtype, n, n);
        aha_tensor view = {.name = name, .dtype = t->dtype, .ndim = 1, .shape = {n},
                           .data = (const uint8_t *)t->data + row * row_bytes, .nbytes = row_bytes};
        check_dequant(&view, want, n, name);
        if (t == whole) CHECK(memcmp(full + (size_t)row * n, want, 4 * (size_t)n) == 0,
                              "full %s dequant differs at row %u", name, row);
    }
    free(rows);
    free(full);
}

// A real model fetched by set-up; 0, or -1 with a failed CHECK.
static int open_model(aha_gguf *g, const char *path) {
    if (aha_gguf_open(g, path) == 0) return 0;
    CHECK(0, "%s (run scripts/setup.sh test)", aha_errmsg());
    return -1;
}

// The shipped demo model, read by aha_gguf_open and compared row by row with
// tests/fixtures/quant/smollm2_rows.bin.
static void test_model(void) {
    aha_gguf g;
    if (open_model(&g, MODEL)) return;
    uint64_t layers = 0;
    CHECK(g.n_tensors == 272 && g.n_kv == 33, "%llu tensors, %llu kv",
          (unsigned long long)g.n_tensors, (unsigned long long)g.n_kv);
    CHECK(aha_gguf_get_u64(&g, "llama.block_count", &layers) == 0 && layers == 30, "block_count");
    const aha_tensor *e = aha_gguf_find(&g, "token_embd.weight");
    const aha_tensor *k = aha_gguf_find(&g, "blk.0.attn_k.weight");
    CHECK(e && e->dtype == AHA_Q8_0 && e->ndim == 2 && e->shape[0] == 49152 && e->shape[1] == 576,
          "token_embd.weight");
    CHECK(k && k->dtype == AHA_Q4_1 && k->ndim == 2 && k->shape[0] == 192 && k->shape[1] == 576,
          "blk.0.attn_k.weight");
    if (!check_failed_) check_rows(&g, "smollm2_rows.bin", e);
    aha_gguf_close(&g);
}

// Gemma-3 270M's GGUF (Q5_0 for 81 of its 236 tensors): the container reads
// and its first Q5_0 tensor, whole, matches gguf-py (gemma3_rows.bin).
static void test_gemma3(void) {
    aha_gguf g;
    if (open_model(&g, GEMMA3)) return;
    const aha_tensor *k = NULL;
    int q5 = 0;
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        if (g.tensors[i].dtype != AHA_Q5_0) continue;
        if (!q5++) k = &g.tensors[i];
    }
    CHECK(g.n_tensors == 236 && q5 == 81, "%llu tensors, %d Q5_0", (unsigned long long)g.n_tensors,
          q5);
    CHECK(k && !strcmp(k->name, "blk.0.attn_k.weight") && k->ndim == 2 && k->shape[0] == 256 &&
              k->shape[1] == 640,
          "first Q5_0 tensor: %s", k ? k->name : "none");
    if (!check_failed_) check_rows(&g, "gemma3_rows.bin", k);
    aha_gguf_close(&g);
}

int main(void) {
    static const aha_dtype all[] = {AHA_F32,  AHA_F16,  AHA_BF16, AHA_Q8_0, AHA_Q4_0,
                                    AHA_Q4_1, AHA_Q5_0, AHA_Q5_1, AHA_Q2_K, AHA_Q3_K,
                                    AHA_Q4_K, AHA_Q5_K, AHA_Q6_K};
    TEST("dtype sizes and scalar conversions", test_dtype_sizes());
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        char name[64];
        snprintf(name, sizeof name, "dequant %s matches gguf-py", aha_dtype_name(all[i]));
        TEST(name, test_fixture(all[i]));
    }
    TEST("SmolLM2 Q4_1 GGUF: header, shapes, rows match gguf-py", test_model());
    TEST("Gemma-3 270M GGUF: first Q5_0 tensor and rows match gguf-py", test_gemma3());
    TEST_EXIT();
}
