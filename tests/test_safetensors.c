// safetensors reader: every malformed file is refused with one line naming the
// file and the problem; a valid file reads back exactly.
#include "filebuf.h"
#include "safetensors.h"

static void st_file(aha_buf *b, const char *header, size_t data_len) {
    put_u64(b, strlen(header));
    put(b, header, strlen(header));
    for (size_t i = 0; i < data_len; i++) put(b, "\x5a", 1);
}

static void st_expect_fail(aha_buf *b, const char *phrase) {
    aha_safetensors st;
    const char *path = write_tmp("bad.safetensors", b);
    check_refused(aha_st_open(&st, path), path, phrase);
}

// One header entry: "name": {"dtype": ..., "shape": ..., "data_offsets": ...}.
#define ENTRY(name, dtype, shape, offsets)                                                        \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

// Headers (with `data` bytes after them) that must be refused.
static const struct {
    const char *name, *header;
    size_t data;
    const char *phrase;
} st_bad[] = {
    {"st: header not JSON", "{\"a\": ", 0, "not valid JSON"},
    {"st: header not an object", "[1, 2]", 0, "not a JSON object"},
    {"st: bytes after the JSON", "{} x", 0, "bytes after the JSON"},
    {"st: entry not an object", "{\"a\": 5}", 0, "tensor 'a': entry is not a JSON object"},
    {"st: unknown dtype", "{" ENTRY("a", "I7", "[1]", "[0,4]") "}", 4,
     "unknown dtype 'I7' for tensor 'a'"},
    {"st: missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype missing"},
    {"st: shape/offset size mismatch", "{" ENTRY("a", "F32", "[2]", "[0,4]") "}", 8,
     "tensor 'a': data_offsets [0, 4] hold 4 bytes, but F32 with 2 elements needs 8"},
    {"st: offsets past end", "{" ENTRY("a", "F32", "[2]", "[0,8]") "}", 4,
     "tensor 'a': data_offsets [0, 8] past the end of the data (4 bytes)"},
    {"st: offsets reversed", "{" ENTRY("a", "F16", "[1]", "[4,2]") "}", 4,
     "end before they begin"},
    {"st: offsets not a pair", "{" ENTRY("a", "F16", "[1]", "[0]") "}", 4,
     "data_offsets is not [begin, end]"},
    {"st: overlapping tensors",
     "{" ENTRY("a", "F32", "[2]", "[0,8]") "," ENTRY("b", "F32", "[2]", "[4,12]") "}", 12,
     "tensors 'a' and 'b' overlap"},
    {"st: duplicate names",
     "{" ENTRY("a", "F32", "[1]", "[0,4]") "," ENTRY("a", "F32", "[1]", "[4,8]") "}", 8,
     "duplicate tensor 'a'"},
    {"st: negative dim", "{" ENTRY("a", "F32", "[-1]", "[0,4]") "}", 4,
     "tensor 'a': shape[0] is not an integer"},
    {"st: non-integer dim", "{" ENTRY("a", "F32", "[2, 1.5]", "[0,4]") "}", 4,
     "tensor 'a': shape[1] is not an integer"},
    {"st: dim beyond 2^53", "{" ENTRY("a", "F32", "[1e300]", "[0,4]") "}", 4,
     "tensor 'a': shape[0] is not an integer"},
    {"st: zero dim", "{" ENTRY("a", "F32", "[3, 0]", "[0,0]") "}", 0, "shape[1] is 0"},
    {"st: too many dims", "{" ENTRY("a", "F32", "[1,1,1,1,1]", "[0,4]") "}", 4,
     "shape has 5 dims"},
    {"st: element count overflows", "{" ENTRY("a", "F32", "[4294967296,4294967296]", "[0,4]") "}",
     4, "shape overflows"},
    {"st: byte count overflows", "{" ENTRY("a", "F32", "[9007199254740992,512]", "[0,4]") "}", 4,
     "shape overflows"},
    {"st: control character in name", "{" ENTRY("a\\nb", "F32", "[1]", "[0,4]") "}", 4,
     "name is empty or has control characters"},
};

static void test_st_header(int i) {
    aha_buf b = {0};
    st_file(&b, st_bad[i].header, st_bad[i].data);
    st_expect_fail(&b, st_bad[i].phrase);
}

static void test_st_raw(const void *bytes, size_t n, const char *phrase) {
    aha_buf b = {0};
    put(&b, bytes, n);
    st_expect_fail(&b, phrase);
}

static void test_st_valid(void) {
    // F32 [2,3], F16 [4], BF16 [2,2], scalar F32; header padded with spaces.
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    ENTRY("w", "F32", "[2,3]", "[0,24]") "," ENTRY("h", "F16", "[4]", "[24,32]") ","
                    ENTRY("b", "BF16", "[2,2]", "[32,40]") "," ENTRY("s", "F32", "[]", "[40,44]")
                    "}    ";
    const float w[6] = {1, -2, 0.5f, 3e-38f, -0.0f, 1e30f}, s = 42;
    const uint16_t hv[4] = {0x3c00, 0xc100, 0x0001, 0x7bff};
    const uint16_t bv[4] = {0x3f80, 0xc0a0, 0x0001, 0xff80};
    const float hf[4] = {1, -2.5f, 0x1p-24f, 65504}, bf[4] = {1, -5, 0x1p-133f, -INFINITY};
    aha_buf b = {0};
    put_u64(&b, strlen(h));
    put(&b, h, strlen(h));
    put(&b, w, sizeof w);
    put(&b, hv, sizeof hv);
    put(&b, bv, sizeof bv);
    put(&b, &s, 4);
    const char *path = write_tmp("ok.safetensors", &b);
    aha_safetensors st;
    if (aha_st_open(&st, path) != 0) {
        CHECK(0, "%s", aha_errmsg());
        unlink(path);
        return;
    }
    CHECK(st.n == 4 && !aha_st_find(&st, "__metadata__") && !aha_st_find(&st, "x"), "n = %d", st.n);
    const aha_tensor *tw = aha_st_find(&st, "w"), *th = aha_st_find(&st, "h");
    const aha_tensor *tb = aha_st_find(&st, "b"), *ts = aha_st_find(&st, "s");
    CHECK(tw && tw->dtype == AHA_F32 && tw->ndim == 2 && tw->shape[0] == 2 && tw->shape[1] == 3 &&
          tw->nbytes == 24 && memcmp(tw->data, w, 24) == 0, "w");
    CHECK(ts && ts->ndim == 1 && ts->shape[0] == 1 && memcmp(ts->data, &s, 4) == 0, "scalar s");
    CHECK(th && th->dtype == AHA_F16 && tb && tb->dtype == AHA_BF16 && tb->ndim == 2, "h, b");
    if (th && tb) {
        float out[4];
        aha_dequant(th, out);
        CHECK(memcmp(out, hf, sizeof out) == 0, "f16 read back as %g %g ...", out[0], out[1]);
        aha_dequant(tb, out);
        CHECK(memcmp(out, bf, sizeof out) == 0, "bf16 read back as %g %g ...", out[0], out[1]);
    }
    aha_st_close(&st);
    unlink(path);
}

int main(void) {
    if (tmpdir_make()) return 1;
    TEST("st: empty file", test_st_raw("", 0, "0 bytes, too short"));
    TEST("st: truncated length", test_st_raw("\x10\0\0\0\0", 5, "5 bytes, too short"));
    TEST("st: header length past end", test_st_raw("\x10\0\0\0\0\0\0\0{}", 10,
                                                   "header length 16 is past the end of the file"));
    TEST("st: header length over 100 MB", test_st_raw("\0\0\0\x10\0\0\0\0{}", 10, "100 MB"));
    for (int i = 0; i < N(st_bad); i++) TEST(st_bad[i].name, test_st_header(i));
    TEST("st: valid F32/F16/BF16 file reads back exactly", test_st_valid());
    rmdir(tmpdir);
    TEST_EXIT();
}
