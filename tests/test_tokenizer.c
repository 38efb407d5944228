// The BPE tokenizers against Hugging Face tokenizers: the real SmolLM2 GGUF
// (byte-level), the real Gemma-3 270M GGUF (SentencePiece-style) and tiny
// tokenizers of the other families must give HF's ids for every text in
// tests/fixtures/tok_texts.json (fixtures written by
// tests/fixtures/make_tokenizer_fixtures.py); every malformed tokenizer.json
// and GGUF is refused with one line naming the file. A model that does not
// load fails every test that uses it (`make test` fetches them); load and
// encode speed are figures of `make bench` (bench_tokenizer), not asserts here.
#include <cjson/cJSON.h>
#include <utf8proc.h>

#include "filebuf.h"
#include "gguf.h"
#include "mapfile.h"
#include "tokenizer.h"
#include "tokenizer_impl.h"

#define FIX "tests/fixtures/"
#define MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define GEMMA3 "models/gemma-3-270m-q4_k_m.gguf"

static cJSON *texts; // [n] the conformance texts

static cJSON *json_file(const char *path) {
    aha_map m;
    if (aha_map_open(&m, path) != 0) return NULL;
    cJSON *j = cJSON_ParseWithLength((const char *)m.data, m.size);
    aha_map_close(&m);
    return j;
}

// "[1 2 3 ...]" (the first 24 ids), for failure messages.
static const char *ids_str(const int32_t *ids, size_t n, char *out, size_t cap) {
    size_t k = (size_t)snprintf(out, cap, "[");
    for (size_t i = 0; i < n && i < 24 && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%d", i ? " " : "", (int)ids[i]);
    if (k < cap) snprintf(out + k, cap - k, "%s]", n > 24 ? " ..." : "");
    return out;
}

// Every text encodes to the ids HF gave (want[key]) and, when dec_key is
// given, decodes to HF's decoding (want[dec_key]).
static void check_texts(const aha_tokenizer *t, const cJSON *want, const char *key, const char *dec_key) {
    const cJSON *all = cJSON_GetObjectItem(want, key), *dec = dec_key ? cJSON_GetObjectItem(want, dec_key) : NULL;
    CHECK(!dec_key || cJSON_GetArraySize(dec) == cJSON_GetArraySize(texts), "fixture has no %s", dec_key);
    CHECK(cJSON_GetArraySize(all) == cJSON_GetArraySize(texts), "fixture has %d id lists for %d texts",
          cJSON_GetArraySize(all), cJSON_GetArraySize(texts));
    for (int i = 0; i < cJSON_GetArraySize(texts); i++) {
        const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
        const cJSON *w = cJSON_GetArrayItem(all, i), *e;
        int32_t hf[4096], *ids;
        size_t n_hf = 0, n;
        cJSON_ArrayForEach(e, w) if (n_hf < 4096) hf[n_hf++] = (int32_t)e->valuedouble;
        if (aha_tok_encode(t, text, strlen(text), &ids, &n) != 0) {
            CHECK(0, "text %d: %s", i, aha_errmsg());
            continue;
        }
        char a[512], b[512];
        CHECK(n == n_hf && memcmp(ids, hf, n * sizeof *ids) == 0, "text %d '%.20s': %s, HF %s", i, text,
              ids_str(ids, n, a, sizeof a), ids_str(hf, n_hf, b, sizeof b));
        char *s;
        size_t len;
        CHECK(aha_tok_decode(t, ids, n, &s, &len) == 0, "%s", aha_errmsg());
        const char *hf_dec = dec ? cJSON_GetStringValue(cJSON_GetArrayItem(dec, i)) : NULL;
        if (hf_dec && s)
            CHECK(len == strlen(hf_dec) && memcmp(s, hf_dec, len) == 0, "text %d decodes to '%s', HF '%s'", i,
                  s, hf_dec);
        free(s);
        free(ids);
    }
}

static void check_specials(const aha_tokenizer *t, const cJSON *want) {
    const cJSON *bos = cJSON_GetObjectItem(want, "bos"), *eos = cJSON_GetObjectItem(want, "eos");
    CHECK(aha_tok_bos(t) == (cJSON_IsNumber(bos) ? bos->valueint : -1), "bos %d", aha_tok_bos(t));
    CHECK(aha_tok_eos(t) == (cJSON_IsNumber(eos) ? eos->valueint : -1), "eos %d", aha_tok_eos(t));
    CHECK(aha_tok_add_bos(t) == cJSON_IsTrue(cJSON_GetObjectItem(want, "add_bos")), "add_bos %d",
          aha_tok_add_bos(t));
}

// ---- SmolLM2 (the real GGUF) ----

static aha_gguf smol_gguf;
static aha_tokenizer *smol;

// The tests that use SmolLM2 fail, not pass, where it did not load.
#define NEED_SMOL()                                                           \
    do {                                                                      \
        CHECK(smol, "SmolLM2's tokenizer did not load from " MODEL);          \
        if (!smol) return;                                                    \
    } while (0)

static void test_smollm2(void) {
    int opened = aha_gguf_open(&smol_gguf, MODEL) == 0;
    CHECK(opened, "%s (make test fetches it)", aha_errmsg());
    if (!opened) return;
    CHECK(aha_tok_load_gguf(&smol, &smol_gguf) == 0, "%s", aha_errmsg());
    if (!smol) return;
    cJSON *want = json_file(FIX "tok_smollm2.json");
    CHECK(want, "cannot read tok_smollm2.json");
    check_texts(smol, want, "ids", "decoded");
    check_specials(smol, want);
    CHECK(aha_tok_vocab_size(smol) == 49152, "vocab %d", aha_tok_vocab_size(smol));
    CHECK(strcmp(aha_tok_kind(smol), "bpe/smollm (49152 tokens)") == 0, "kind '%s'", aha_tok_kind(smol));
    size_t len;
    const char *p = aha_tok_piece(smol, 1, &len);
    CHECK(p && len == 12 && memcmp(p, "<|im_start|>", 12) == 0, "piece of id 1");
    CHECK(!aha_tok_piece(smol, -1, &len) && !aha_tok_piece(smol, 49152, &len), "piece out of range");
    cJSON_Delete(want);
}

// A random mix of ASCII, Latin, CJK, emoji and whitespace; always valid UTF-8.
static size_t random_text(char *out, size_t cap, uint64_t *seed) {
    static const uint32_t ranges[][2] = {{0x20, 0x7e}, {0x09, 0x0d}, {0xa0, 0x24f}, {0x300, 0x36f},
                                         {0x4e00, 0x4fff}, {0x1f300, 0x1f64f}, {0x2000, 0x206f}};
    size_t n = 0;
    while (n + 4 < cap) {
        *seed = *seed * 6364136223846793005u + 1442695040888963407u;
        uint32_t r = (uint32_t)(*seed >> 33);
        const uint32_t *g = ranges[r % (r & 0x100 ? 7 : 1)];
        uint32_t c = g[0] + (r >> 9) % (g[1] - g[0] + 1);
        if (c >= 0xd800 && c < 0xe000) continue;
        n += (size_t)utf8proc_encode_char((utf8proc_int32_t)c, (utf8proc_uint8_t *)out + n);
    }
    return n;
}

static void round_trip(const aha_tokenizer *t) {
    static char text[1 << 16];
    uint64_t seed = 42;
    for (int k = 0; k < 50; k++) {
        size_t n = random_text(text, 64 + (size_t)k * 1000, &seed);
        int32_t *ids;
        size_t n_ids, len;
        char *back = NULL;
        CHECK(aha_tok_encode(t, text, n, &ids, &n_ids) == 0, "%s", aha_errmsg());
        CHECK(aha_tok_decode(t, ids, n_ids, &back, &len) == 0, "%s", aha_errmsg());
        CHECK(back && len == n && memcmp(back, text, n) == 0, "round trip %d differs", k);
        free(ids);
        free(back);
    }
}

static void test_round_trip(void) {
    NEED_SMOL();
    round_trip(smol);
}

// ---- Gemma-3 270M (the real GGUF, SentencePiece-style BPE) ----

static aha_gguf gemma_gguf;
static aha_tokenizer *gemma;

static void test_gemma3(void) {
    int opened = aha_gguf_open(&gemma_gguf, GEMMA3) == 0;
    CHECK(opened, "%s (make test fetches it)", aha_errmsg());
    if (!opened) return;
    CHECK(aha_tok_load_gguf(&gemma, &gemma_gguf) == 0, "%s", aha_errmsg());
    if (!gemma) return;
    cJSON *want = json_file(FIX "tok_gemma3.json");
    CHECK(want, "cannot read tok_gemma3.json");
    check_texts(gemma, want, "ids", "decoded");
    check_specials(gemma, want);
    CHECK(strcmp(aha_tok_kind(gemma), "spm/gemma3 (262144 tokens)") == 0, "kind '%s'", aha_tok_kind(gemma));
    size_t len;
    const char *p = aha_tok_piece(gemma, 138, &len); // stored as two spaces, spelled U+2581 U+2581
    CHECK(p && len == 2 && memcmp(p, "  ", 2) == 0, "piece of id 138");
    p = aha_tok_piece(gemma, 238 + 0xE6, &len); // <0xE6>: the byte
    CHECK(p && len == 1 && (uint8_t)p[0] == 0xE6, "piece of <0xE6>");
    cJSON_Delete(want);
}

static void test_gemma3_round_trip(void) {
    CHECK(gemma, "Gemma-3's tokenizer did not load from " GEMMA3);
    if (gemma) round_trip(gemma);
}

// ---- tiny SentencePiece-style tokenizers: tokenizer.json and GGUF ----

static const char *const spm_families[] = {"llama2", "metaspace", "gemma"};

static void test_spm_json(int f) {
    char path[256];
    snprintf(path, sizeof path, FIX "tok_tiny/spm_%s.ids.json", spm_families[f]);
    cJSON *want = json_file(path);
    CHECK(want, "cannot read %s", path);
    snprintf(path, sizeof path, FIX "tok_tiny/spm_%s.json", spm_families[f]);
    aha_tokenizer *t;
    CHECK(aha_tok_load_json(&t, path) == 0, "%s", aha_errmsg());
    if (t && want) {
        check_texts(t, want, "ids", "decoded");
        check_specials(t, want);
        CHECK(strncmp(aha_tok_kind(t), "spm/tokenizer.json (", 20) == 0, "kind '%s'", aha_tok_kind(t));
    }
    aha_tok_free(t);
    cJSON_Delete(want);
}

// The GGUF twins against transformers loading them, special tokens included.
static void test_spm_gguf(int f, const char *arch) {
    char path[256];
    snprintf(path, sizeof path, FIX "tok_tiny/spm_%s.ids.json", spm_families[f]);
    cJSON *want = json_file(path);
    CHECK(want, "cannot read %s", path);
    snprintf(path, sizeof path, FIX "tok_tiny/spm_%s.gguf", spm_families[f]);
    aha_gguf g;
    aha_tokenizer *t = NULL;
    CHECK(aha_gguf_open(&g, path) == 0, "%s", aha_errmsg());
    CHECK(aha_tok_load_gguf(&t, &g) == 0, "%s", aha_errmsg());
    if (t && want) {
        check_texts(t, want, "gguf_ids", "gguf_decoded");
        const cJSON *bos = cJSON_GetObjectItem(want, "gguf_bos"), *eos = cJSON_GetObjectItem(want, "gguf_eos");
        CHECK(cJSON_IsNumber(bos) && cJSON_IsNumber(eos) && aha_tok_bos(t) == bos->valueint &&
                  aha_tok_eos(t) == eos->valueint, "bos %d eos %d", aha_tok_bos(t), aha_tok_eos(t));
        CHECK(aha_tok_add_bos(t) == cJSON_IsTrue(cJSON_GetObjectItem(want, "gguf_add_bos")),
              "add_bos %d", aha_tok_add_bos(t));
        char kind[64];
        snprintf(kind, sizeof kind, "spm/%s (", arch);
        CHECK(strncmp(aha_tok_kind(t), kind, strlen(kind)) == 0, "kind '%s'", aha_tok_kind(t));
    }
    aha_tok_free(t);
    aha_gguf_close(&g);
    cJSON_Delete(want);
}

static void test_long_pieces(void) {
    NEED_SMOL();
    size_t n = 1 << 20;
    char *text = malloc(n);
    int32_t *ids;
    size_t n_ids, len;
    char *back;
    const char fill[] = {' ', 'a', '7', '\n'};
    for (int k = 0; k < 4; k++) { // one pre-token of 1 MB: the BPE queue is n log n
        memset(text, fill[k], n);
        CHECK(aha_tok_encode(smol, text, n, &ids, &n_ids) == 0, "%s", aha_errmsg());
        CHECK(aha_tok_decode(smol, ids, n_ids, &back, &len) == 0 && len == n && memcmp(back, text, n) == 0,
              "1 MB of '%c' does not round-trip", fill[k]);
        free(ids);
        free(back);
    }
    free(text);
}

static void test_invalid_utf8(void) {
    NEED_SMOL();
    static const struct { const char *s; size_t at; } bad[] = {
        {"ab\xff", 2}, {"\xc3", 0}, {"ok \xc0\x80", 3}, {"\xed\xa0\x80", 0},
        {"caf\xc3\xa9 \xf4\x90\x80\x80", 6}, {"\xe2\x82", 0}, {"a\x80", 1},
    };
    for (int i = 0; i < N(bad); i++) {
        int32_t *ids;
        size_t n;
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", bad[i].at);
        CHECK(aha_tok_encode(smol, bad[i].s, strlen(bad[i].s), &ids, &n) == -1 && !ids,
              "case %d was encoded", i);
        CHECK(strcmp(aha_errmsg(), want) == 0, "case %d: '%s', want '%s'", i, aha_errmsg(), want);
    }
    int32_t *ids;
    size_t n;
    CHECK(aha_tok_encode(smol, "a\0b", 3, &ids, &n) == 0 && n == 3, "an embedded NUL is a char");
    free(ids);
}

static void test_decode_range(void) {
    NEED_SMOL();
    int32_t bad[] = {1, 49152};
    char *s;
    size_t len;
    CHECK(aha_tok_decode(smol, bad, 2, &s, &len) == -1 && !s, "decoded an out-of-range id");
    CHECK(strstr(aha_errmsg(), "49152"), "'%s'", aha_errmsg());
    CHECK(aha_tok_decode(smol, bad, 0, &s, &len) == 0 && len == 0 && s && !*s, "empty decode");
    free(s);
}

// ---- tiny families: tokenizer.json and GGUF ----

static const char *const families[] = {"gpt2", "llama3", "qwen2", "olmo2", "mixed"};

static void test_family_json(int f) {
    char path[256];
    snprintf(path, sizeof path, FIX "tok_tiny/%s.ids.json", families[f]);
    cJSON *want = json_file(path);
    CHECK(want, "cannot read %s", path);
    snprintf(path, sizeof path, FIX "tok_tiny/%s.json", families[f]);
    aha_tokenizer *t;
    CHECK(aha_tok_load_json(&t, path) == 0, "%s", aha_errmsg());
    if (t && want) {
        check_texts(t, want, "ids", "decoded");
        check_specials(t, want);
    }
    aha_tok_free(t);
    cJSON_Delete(want);
}

static void test_family_gguf(int f) {
    char path[256];
    snprintf(path, sizeof path, FIX "tok_tiny/%s.ids.json", families[f]);
    cJSON *want = json_file(path);
    CHECK(want, "cannot read %s", path);
    int twin = cJSON_IsArray(cJSON_GetObjectItem(want, "gguf_ids")) &&
               cJSON_IsString(cJSON_GetObjectItem(want, "gguf_pre"));
    CHECK(twin, "%s has no gguf_ids / gguf_pre: nothing to compare", path);
    if (!twin) {
        cJSON_Delete(want);
        return;
    }
    snprintf(path, sizeof path, FIX "tok_tiny/%s.gguf", families[f]);
    aha_gguf g;
    aha_tokenizer *t = NULL;
    CHECK(aha_gguf_open(&g, path) == 0, "%s", aha_errmsg());
    CHECK(aha_tok_load_gguf(&t, &g) == 0, "%s", aha_errmsg());
    if (t) {
        check_texts(t, want, "gguf_ids", NULL);
        check_specials(t, want);
        char kind[64];
        snprintf(kind, sizeof kind, "bpe/%s (", cJSON_GetObjectItem(want, "gguf_pre")->valuestring);
        CHECK(strncmp(aha_tok_kind(t), kind, strlen(kind)) == 0, "kind '%s'", aha_tok_kind(t));
    }
    aha_tok_free(t);
    aha_gguf_close(&g);
    cJSON_Delete(want);
}

static void test_gguf_refused(const char *file, const char *phrase) {
    aha_gguf g;
    aha_tokenizer *t = NULL;
    CHECK(aha_gguf_open(&g, file) == 0, "%s", aha_errmsg());
    int rc = aha_tok_load_gguf(&t, &g);
    const char *msg = aha_errmsg();
    CHECK(rc == -1 && !t, "loaded");
    CHECK(strstr(msg, file) && strstr(msg, phrase) && !strchr(msg, '\n'), "'%s' lacks '%s' or the path",
          msg, phrase);
    aha_gguf_close(&g);
}

// ---- hand-written GGUF metadata ----

static void gg_kv_head(aha_buf *b, const char *key, uint32_t type) {
    put_str(b, key);
    put_u32(b, type);
}
static void gg_kv_strs(aha_buf *b, const char *key, const char *const *v, int n) {
    gg_kv_head(b, key, GGUF_ARRAY);
    put_u32(b, GGUF_STRING);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++) put_str(b, v[i]);
}
static void gg_kv_i32s(aha_buf *b, const char *key, const int32_t *v, int n) {
    gg_kv_head(b, key, GGUF_ARRAY);
    put_u32(b, GGUF_INT32);
    put_u64(b, (uint64_t)n);
    put(b, v, 4 * (size_t)n);
}

// What a hand-written GGUF gets wrong (GG_OK: nothing).
enum { GG_OK, GG_NO_TOKENS, GG_TOKENS_INT, GG_TYPES_SHORT, GG_MERGE_NO_SPACE, GG_MERGE_UNKNOWN,
       GG_BOS_RANGE, GG_NO_PRE, GG_SAME_TOKEN, GG_COUNT };

// Tokens a, b, ab, Ġ, a user-defined <x>, a control token outside the byte
// alphabet (transformers does not add those); merge "a b"; pre gpt-2; bos 1.
static const char *gg_write(int broken) {
    static const char *const tokens[] = {"a", "b", "ab", "\xc4\xa0", "<x>", "<\xef\xbd\x98>", "a"};
    static const int32_t types[] = {1, 1, 1, 1, 4, 3, 1};
    const char *merge = broken == GG_MERGE_NO_SPACE ? "ab" : broken == GG_MERGE_UNKNOWN ? "a zz" : "a b";
    int n_tok = broken == GG_SAME_TOKEN ? 7 : 6;
    aha_buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, 0);
    put_u64(&b, 6 - (broken == GG_NO_TOKENS) - (broken == GG_NO_PRE));
    gg_kv_head(&b, "tokenizer.ggml.model", GGUF_STRING);
    put_str(&b, "gpt2");
    if (broken != GG_NO_PRE) {
        gg_kv_head(&b, "tokenizer.ggml.pre", GGUF_STRING);
        put_str(&b, "gpt-2");
    }
    if (broken == GG_TOKENS_INT)
        gg_kv_i32s(&b, "tokenizer.ggml.tokens", types, 6);
    else if (broken != GG_NO_TOKENS)
        gg_kv_strs(&b, "tokenizer.ggml.tokens", tokens, n_tok);
    gg_kv_i32s(&b, "tokenizer.ggml.token_type", types, n_tok - (broken == GG_TYPES_SHORT));
    gg_kv_strs(&b, "tokenizer.ggml.merges", &merge, 1);
    gg_kv_head(&b, "tokenizer.ggml.bos_token_id", GGUF_UINT32);
    put_u32(&b, broken == GG_BOS_RANGE ? 99 : 1);
    return write_tmp("tok.gguf", &b);
}

static void test_gguf_handmade(void) {
    aha_gguf g;
    aha_tokenizer *t = NULL;
    const char *path = gg_write(GG_OK);
    CHECK(aha_gguf_open(&g, path) == 0, "%s", aha_errmsg());
    CHECK(aha_tok_load_gguf(&t, &g) == 0, "%s", aha_errmsg());
    static const char text[] = "ab<x> ab<\xef\xbd\x98>";
    static const int32_t want[] = {2, 4, 3, 2}; // the control token's text is not in the byte vocab: dropped
    int32_t *ids = NULL;
    size_t n = 0;
    char a[256], w[256];
    CHECK(t && aha_tok_encode(t, text, strlen(text), &ids, &n) == 0, "%s", aha_errmsg());
    CHECK(n == 4 && memcmp(ids, want, sizeof want) == 0, "%s, want %s", ids_str(ids, n, a, sizeof a),
          ids_str(want, 4, w, sizeof w));
    CHECK(t && aha_tok_bos(t) == 1 && aha_tok_eos(t) == -1 && !aha_tok_add_bos(t), "bos/eos/add_bos");
    free(ids);
    aha_tok_free(t);
    aha_gguf_close(&g);
    unlink(path);
}

static const struct {
    const char *name, *phrase;
} gg_bad[GG_COUNT] = {
    [GG_NO_TOKENS] = {"no tokenizer.ggml.tokens", "tokenizer.ggml.tokens missing"},
    [GG_TOKENS_INT] = {"tokens not strings", "tokenizer.ggml.tokens has the wrong type"},
    [GG_TYPES_SHORT] = {"token_type of another length", "token_type is not an int32 array as long"},
    [GG_MERGE_NO_SPACE] = {"merge without a space", "merge 1 is not \"a b\""},
    [GG_MERGE_UNKNOWN] = {"merge naming an unknown token", "names unknown token 'zz'"},
    [GG_BOS_RANGE] = {"bos id out of range", "bos_token_id = 99 is not a token id"},
    [GG_NO_PRE] = {"no tokenizer.ggml.pre", "no tokenizer.ggml.model or tokenizer.ggml.pre"},
    [GG_SAME_TOKEN] = {"the same token twice", "tokens 0 and 6 are the same: 'a'"},
};

// A written GGUF opens but its tokenizer is refused with phrase.
static void gguf_tok_refused(const char *path, const char *phrase) {
    aha_gguf g;
    aha_tokenizer *t = NULL;
    CHECK(aha_gguf_open(&g, path) == 0, "%s", aha_errmsg());
    int rc = aha_tok_load_gguf(&t, &g);
    CHECK(!t, "loaded");
    check_refused(rc, path, phrase);
    aha_gguf_close(&g);
}

static void test_gguf_bad(int i) { gguf_tok_refused(gg_write(i), gg_bad[i].phrase); }

// ---- hand-written SentencePiece GGUF metadata ----

// What a hand-written SentencePiece GGUF gets wrong (SPM_OK: nothing).
enum { SPM_OK, SPM_NO_SCORES, SPM_SCORES_SHORT, SPM_BAD_BYTE, SPM_BAD_BYTE_NL, SPM_SCORES_INT, SPM_COUNT };

// Tokens <unk> <s> </s> <0x61> a b ab U+2581 U+2581a (types unknown, control
// x2, byte, normal...); scores make ab (-1) merge before U+2581a (-2); no
// merges, so they come from the scores; add_space_prefix absent (true).
static const char *spm_write(int broken) {
    static const char *const tokens[] = {"<unk>", "<s>", "</s>", "<0x61>", "a", "b", "ab", "\xe2\x96\x81",
                                         "\xe2\x96\x81" "a"};
    static const int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1, 1};
    static const float scores[] = {0, 0, 0, 0, -10, -10, -1, -10, -2};
    const char *bad_byte[N(tokens)];
    memcpy(bad_byte, tokens, sizeof tokens);
    bad_byte[3] = broken == SPM_BAD_BYTE_NL ? "<0x\n>" : "<0x6g>";
    aha_buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, 0);
    put_u64(&b, 6 - (broken == SPM_NO_SCORES));
    gg_kv_head(&b, "general.architecture", GGUF_STRING);
    put_str(&b, "llama");
    gg_kv_head(&b, "tokenizer.ggml.model", GGUF_STRING);
    put_str(&b, "llama");
    gg_kv_strs(&b, "tokenizer.ggml.tokens", broken == SPM_BAD_BYTE || broken == SPM_BAD_BYTE_NL ? bad_byte : tokens,
               N(tokens));
    gg_kv_i32s(&b, "tokenizer.ggml.token_type", types, N(types));
    if (broken == SPM_SCORES_INT) {
        gg_kv_i32s(&b, "tokenizer.ggml.scores", types, N(types));
    } else if (broken != SPM_NO_SCORES) {
        gg_kv_head(&b, "tokenizer.ggml.scores", GGUF_ARRAY);
        put_u32(&b, GGUF_FLOAT32);
        int n = N(scores) - (broken == SPM_SCORES_SHORT);
        put_u64(&b, (uint64_t)n);
        put(&b, scores, 4 * (size_t)n);
    }
    gg_kv_head(&b, "tokenizer.ggml.unknown_token_id", GGUF_UINT32);
    put_u32(&b, 0);
    return write_tmp("spm.gguf", &b);
}

static void test_spm_handmade(void) {
    aha_gguf g;
    aha_tokenizer *t = NULL;
    const char *path = spm_write(SPM_OK);
    CHECK(aha_gguf_open(&g, path) == 0, "%s", aha_errmsg());
    CHECK(aha_tok_load_gguf(&t, &g) == 0, "%s", aha_errmsg());
    // U+2581a U+2581 a b U+2581 b: ab merges first, so U+2581 ab stays apart;
    // é has no token and no byte tokens but 0x61's: unk, the two bytes fused
    static const char text[] = "a ab b\xc3\xa9\xc3\xa9";
    static const int32_t want[] = {8, 7, 6, 7, 5, 0};
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    char a[256], w[256], *back = NULL;
    CHECK(t && aha_tok_encode(t, text, strlen(text), &ids, &n) == 0, "%s", aha_errmsg());
    CHECK(n == N(want) && memcmp(ids, want, sizeof want) == 0, "%s, want %s", ids_str(ids, n, a, sizeof a),
          ids_str(want, N(want), w, sizeof w));
    static const int32_t some[] = {8, 7, 6, 3, 2};
    CHECK(t && aha_tok_decode(t, some, N(some), &back, &len) == 0 && len == 9 && !memcmp(back, "a aba</s>", 9),
          "decoded '%s', want 'a aba</s>' (leading space stripped, <0x61> as its byte)", back ? back : "?");
    CHECK(t && aha_tok_bos(t) == -1 && aha_tok_eos(t) == -1 && !aha_tok_add_bos(t), "bos/eos/add_bos");
    free(back);
    free(ids);
    aha_tok_free(t);
    aha_gguf_close(&g);
    unlink(path);
}

static const struct {
    const char *name, *phrase;
} spm_bad[SPM_COUNT] = {
    [SPM_NO_SCORES] = {"no scores and no merges", "tokenizer.ggml.scores missing"},
    [SPM_SCORES_SHORT] = {"fewer scores than tokens", "scores has 8 entries for 9 tokens"},
    [SPM_BAD_BYTE] = {"a byte token not spelled <0xNN>", "token 3 '<0x6g>' has the byte type but is not <0xNN>"},
    [SPM_BAD_BYTE_NL] = {"a byte token with a newline (the error stays one line)", "token 3 '<0x\\n>' has the byte type"},
    [SPM_SCORES_INT] = {"scores not float32", "tokenizer.ggml.scores has the wrong type"},
};

static void test_spm_bad(int i) { gguf_tok_refused(spm_write(i), spm_bad[i].phrase); }

// ---- hand-written tokenizer.json ----

// A tokenizer.json from its parts (JSON text each; NULL: a small valid
// default), or the whole text.
typedef struct {
    const char *name, *vocab, *merges, *normalizer, *pre, *model_extra, *top_extra, *text, *phrase, *decoder;
} json_case;

static const char *tok_json(const json_case *c) {
    static char out[4096];
    if (c->text) return c->text;
    snprintf(out, sizeof out,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": %s%s}, \"normalizer\": %s,"
             " \"pre_tokenizer\": %s, \"decoder\": %s%s}",
             c->vocab ? c->vocab : "{\"a\": 0, \"b\": 1, \"ab\": 2, \"<unk>\": 3, \"\\u0120\": 4}",
             c->merges ? c->merges : "[\"a b\"]", c->model_extra ? c->model_extra : "",
             c->normalizer ? c->normalizer : "null",
             c->pre ? c->pre : "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}",
             c->decoder ? c->decoder : "{\"type\": \"ByteLevel\"}", c->top_extra ? c->top_extra : "");
    return out;
}

static const char *json_tmp(const char *text) {
    aha_buf b = {0};
    put(&b, text, strlen(text));
    return write_tmp("tokenizer.json", &b);
}

// Encode text under a hand-written tokenizer.json and check the ids.
static void expect_ids(const json_case *c, const char *text, const int32_t *want, size_t n_want) {
    aha_tokenizer *t = NULL;
    const char *path = json_tmp(tok_json(c));
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(aha_tok_load_json(&t, path) == 0, "%s", aha_errmsg());
    CHECK(t && aha_tok_encode(t, text, strlen(text), &ids, &n) == 0, "%s", aha_errmsg());
    char a[256], b[256];
    CHECK(n == n_want && (!n || memcmp(ids, want, n * sizeof *ids) == 0), "'%s': %s, want %s", text,
          ids_str(ids, n, a, sizeof a), ids_str(want, n_want, b, sizeof b));
    char *back = NULL;
    size_t len;
    if (t && !strstr(c->model_extra ? c->model_extra : "", "unk")) // unk loses bytes
        CHECK(aha_tok_decode(t, ids, n, &back, &len) == 0 && len == strlen(text) && !memcmp(back, text, len),
              "'%s' decodes to '%s'", text, back ? back : "?");
    free(back);
    free(ids);
    aha_tok_free(t);
    unlink(path);
}

// Expected ids computed with tokenizers 0.23.3 from the same JSON.
static void test_unk(void) {
    static const int32_t fused[] = {2, 3, 2}, unfused[] = {2, 3, 3, 2}, dropped[] = {2, 2};
    json_case c = {.model_extra = ", \"unk_token\": \"<unk>\", \"fuse_unk\": true"};
    expect_ids(&c, "abccab", fused, 3);
    c.model_extra = ", \"unk_token\": \"<unk>\", \"fuse_unk\": false";
    expect_ids(&c, "abccab", unfused, 4);
    c.model_extra = NULL;
    expect_ids(&c, "abab", dropped, 2);
}

// A merge listed twice takes its last rank (tokenizers' merge map keeps the
// last insert): "a b" (rank 1) beats "b c" (rank 2).
static void test_repeated_merge(void) {
    static const int32_t want[] = {3, 2};
    json_case c = {.vocab = "{\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4}",
                   .merges = "[\"b c\", \"a b\", \"b c\"]"};
    expect_ids(&c, "abc", want, 2);
}

// An added token decodes to its own text. (tokenizers runs it through the
// ByteLevel decoder instead, which turns the é of "café" into U+FFFD.)
static void test_added_literal(void) {
    static const int32_t want[] = {2, 5, 2};
    json_case c = {.top_extra = ", \"added_tokens\": [{\"id\": 5, \"content\": \"café\", \"special\": false,"
                                " \"normalized\": false}]"};
    expect_ids(&c, "abcaféab", want, 3);
}

#define ADDED(fields) ", \"added_tokens\": [" fields "]"

// Metaspace's prepend schemes around a special added token, pre-tokenizer
// and decoder alike: ids and decodings from tokenizers 0.23.3 on the same
// JSON ("first" means the start of the input, not of the text after <x>).
static void test_metaspace(void) {
    static const struct {
        const char *scheme, *text, *decoded;
        int32_t ids[6];
        size_t n;
    } cases[] = {
        {"first", "a <x>a b", "a <x>a b", {4, 1, 5, 2, 1, 3}, 6},
        {"first", "<x>a  a", "<x>a  a", {5, 2, 1, 4}, 4},
        {"always", "a <x>a b", "a <x> a b", {4, 1, 5, 4, 1, 3}, 6},
        {"always", "<x>a  a", "<x> a  a", {5, 4, 1, 4}, 4},
        {"never", "a <x>a b", "a <x>a b", {2, 1, 5, 2, 1, 3}, 6},
        {"never", "a\xe2\x96\x81" "a", "a a", {2, 4}, 2},
    };
    for (int i = 0; i < N(cases); i++) {
        char pre[256], dec[256];
        snprintf(pre, sizeof pre, "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"%s\"}",
                 cases[i].scheme);
        snprintf(dec, sizeof dec, "%s", pre);
        json_case c = {.vocab = "{\"<unk>\": 0, \"\u2581\": 1, \"a\": 2, \"b\": 3, \"\u2581a\": 4, \"<x>\": 5}",
                       .merges = "[[\"\u2581\", \"a\"]]", .pre = pre, .decoder = dec,
                       .top_extra = ADDED("{\"id\": 5, \"content\": \"<x>\", \"special\": true, \"normalized\": false}")};
        aha_tokenizer *t = NULL;
        const char *path = json_tmp(tok_json(&c));
        int32_t *ids = NULL;
        size_t n = 0, len = 0;
        char *back = NULL, a[256], w[256];
        CHECK(aha_tok_load_json(&t, path) == 0, "%s", aha_errmsg());
        CHECK(t && aha_tok_encode(t, cases[i].text, strlen(cases[i].text), &ids, &n) == 0, "%s", aha_errmsg());
        CHECK(n == cases[i].n && !memcmp(ids, cases[i].ids, n * sizeof *ids), "%s '%s': %s, want %s",
              cases[i].scheme, cases[i].text, ids_str(ids, n, a, sizeof a), ids_str(cases[i].ids, cases[i].n, w, sizeof w));
        CHECK(t && aha_tok_decode(t, ids, n, &back, &len) == 0 && !strcmp(back, cases[i].decoded),
              "%s: decoded '%s', want '%s'", cases[i].scheme, back ? back : "?", cases[i].decoded);
        free(back);
        free(ids);
        aha_tok_free(t);
        unlink(path);
    }
}
#define SPM_DECODER "{\"type\": \"ByteFallback\"}"
#define BYTE_LEVEL "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}"
static const json_case json_bad[] = {
    {.name = "not JSON", .text = "{\"model\": ", .phrase = "not valid JSON"},
    {.name = "empty file", .text = "", .phrase = "not valid JSON"},
    {.name = "no model", .text = "{\"version\": \"1.0\"}", .phrase = "no \"model\" object"},
    {.name = "unknown model type", .text = "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
     .phrase = "model type 'Unigram' unsupported"},
    {.name = "vocab not an object", .vocab = "[\"a\", \"b\"]", .phrase = "model.vocab is not an object"},
    {.name = "merges not an array", .merges = "{}", .phrase = "model.merges is not an array"},
    {.name = "id not an integer", .vocab = "{\"a\": 0, \"b\": 1.5}", .phrase = "'b': id is not an integer"},
    {.name = "id out of range", .vocab = "{\"a\": 0, \"b\": 7}", .phrase = "'b' has id 7, out of range 0..1"},
    {.name = "duplicate ids", .vocab = "{\"a\": 0, \"b\": 0}", .phrase = "id 0 is both 'a' and 'b'"},
    {.name = "gap in ids", .vocab = "{\"a\": 1}", .merges = "[]", .top_extra = ADDED("{\"id\": 1, \"content\": \"a\"}"),
     .phrase = "no token has id 0"},
    {.name = "same token twice", .vocab = "{\"a\": 0, \"b\": 1, \"\\u0061\": 2}", .merges = "[]",
     .phrase = "tokens 0 and 2 are the same: 'a'"},
    {.name = "merge naming an unknown token", .merges = "[\"a zz\"]", .phrase = "names unknown token 'zz'"},
    {.name = "merge making an unknown token", .merges = "[[\"b\", \"a\"]]", .phrase = "makes a token not in the vocab"},
    {.name = "merge without one space", .merges = "[\"a b c\"]", .phrase = "merge 1 is neither"},
    {.name = "unsupported normalizer", .normalizer = "{\"type\": \"Lowercase\"}",
     .phrase = "normalizer 'Lowercase' unsupported"},
    {.name = "non-NFC normalizer in a Sequence",
     .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"NFKC\"}]}",
     .phrase = "normalizer 'NFKC' unsupported"},
    {.name = "unsupported pre-tokenizer", .pre = "{\"type\": \"Whitespace\"}",
     .phrase = "pre_tokenizer 'Whitespace' unsupported"},
    {.name = "bad regex",
     .pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a(b\"},"
            " \"behavior\": \"Isolated\"}, " BYTE_LEVEL "]}",
     .phrase = "regex 'a(b': missing closing parenthesis"},
    {.name = "unknown Split behavior",
     .pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": \"-\"},"
            " \"behavior\": \"Sideways\"}, " BYTE_LEVEL "]}",
     .phrase = "behavior 'Sideways' unknown"},
    {.name = "pre-tokenizer after ByteLevel",
     .pre = "{\"type\": \"Sequence\", \"pretokenizers\": [" BYTE_LEVEL ", {\"type\": \"Digits\"}]}",
     .phrase = "'Digits' after ByteLevel"},
    {.name = "no ByteLevel pre-tokenizer", .pre = "null", .phrase = "not a byte-level tokenizer"},
    {.name = "BPE dropout", .model_extra = ", \"dropout\": 0.1", .phrase = "dropout"},
    {.name = "unk_token not in the vocab", .model_extra = ", \"unk_token\": \"<nope>\"",
     .phrase = "unk_token '<nope>' not in the vocab"},
    {.name = "added token clashing with a vocab id", .top_extra = ADDED("{\"id\": 0, \"content\": \"zz\"}"),
     .phrase = "id 0 is both 'a' and 'zz'"},
    {.name = "added token with two ids",
     .top_extra = ADDED("{\"id\": 5, \"content\": \"<x>\"}, {\"id\": 6, \"content\": \"<x>\"}"),
     .phrase = "'<x>' has two ids, 5 and 6"},
    {.name = "added token with single_word",
     .top_extra = ADDED("{\"id\": 5, \"content\": \"<x>\", \"single_word\": true}"),
     .phrase = "single_word unsupported"},
    {.name = "added token without content", .top_extra = ADDED("{\"id\": 5}"), .phrase = "without a content"},
    {.name = "spm: unsupported pre-tokenizer", .pre = "{\"type\": \"Whitespace\"}", .decoder = SPM_DECODER,
     .phrase = "pre_tokenizer 'Whitespace' unsupported"},
    {.name = "spm: unsupported decoder", .pre = "null", .decoder = "{\"type\": \"WordPiece\"}",
     .phrase = "decoder 'WordPiece' unsupported"},
    {.name = "spm: Replace normalizer of another pattern", .pre = "null", .decoder = SPM_DECODER,
     .normalizer = "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"b\"}",
     .phrase = "normalizer Replace 'a' -> 'b' unsupported"},
    {.name = "spm: Prepend of another string", .pre = "null", .decoder = SPM_DECODER,
     .normalizer = "{\"type\": \"Prepend\", \"prepend\": \"_\"}", .phrase = "normalizer Prepend '_' unsupported"},
    {.name = "spm: Metaspace with an unknown prepend_scheme", .decoder = SPM_DECODER,
     .pre = "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"sometimes\"}",
     .phrase = "prepend_scheme 'sometimes' unknown"},
    {.name = "spm: Metaspace with another replacement", .decoder = SPM_DECODER,
     .pre = "{\"type\": \"Metaspace\", \"replacement\": \"_\"}", .phrase = "replacement '_' unsupported"},
    {.name = "spm: Strip before Fuse", .pre = "null",
     .decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Strip\", \"content\": \" \", \"start\": 1,"
                " \"stop\": 0}, {\"type\": \"Fuse\"}]}",
     .phrase = "decoder Strip unsupported but as Strip(' ', start, 0) after Fuse"},
    {.name = "Metaspace in a byte-level tokenizer",
     .pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Metaspace\", \"replacement\": \"\u2581\"}, "
            BYTE_LEVEL "]}",
     .phrase = "pre_tokenizer 'Metaspace' unsupported"},
    {.name = "byte_fallback in a byte-level tokenizer", .model_extra = ", \"byte_fallback\": true",
     .phrase = "byte_fallback with a ByteLevel pre_tokenizer unsupported"},
    {.name = "template naming an unknown special",
     .top_extra = ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                  "{\"id\": \"<s>\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {}}",
     .phrase = "special token '<s>' has no valid id"},
};

static void test_json_bad(int i) {
    aha_tokenizer *t = NULL;
    const char *path = json_tmp(tok_json(&json_bad[i]));
    int rc = aha_tok_load_json(&t, path);
    CHECK(!t, "loaded");
    check_refused(rc, path, json_bad[i].phrase);
}

static void test_json_missing(void) {
    aha_tokenizer *t = NULL;
    check_refused(aha_tok_load_json(&t, "/nonexistent/tokenizer.json"), "/nonexistent/tokenizer.json", "");
}

// tokenizer_config.json: the special tokens Hugging Face reads, over what
// tokenizer.json implied (qwen2: no template; llama3: a template adding BOS).
static void with_config(const char *family, const char *config, int rc_want, int32_t *bos, int32_t *eos,
                        int *add_bos, const char *phrase) {
    char path[256];
    snprintf(path, sizeof path, FIX "tok_tiny/%s.json", family);
    aha_tokenizer *t = NULL;
    CHECK(aha_tok_load_json(&t, path) == 0, "%s", aha_errmsg());
    if (!t) return;
    aha_buf b = {0};
    put(&b, config, strlen(config));
    const char *cfg = write_tmp("tokenizer_config.json", &b);
    int rc = aha_tok_load_config(t, cfg);
    CHECK(rc == rc_want, "%s: rc %d (%s)", config, rc, aha_errmsg());
    if (rc == 0) *bos = aha_tok_bos(t), *eos = aha_tok_eos(t), *add_bos = aha_tok_add_bos(t);
    else check_refused(rc, cfg, phrase);
    unlink(cfg);
    aha_tok_free(t);
}

static void test_config(void) {
    aha_tokenizer *q = NULL, *l = NULL;
    CHECK(aha_tok_load_json(&q, FIX "tok_tiny/qwen2.json") == 0 && aha_tok_load_json(&l, FIX "tok_tiny/llama3.json") == 0,
          "%s", aha_errmsg());
    if (!q || !l) return;
    const int32_t im_end = aha_tok_find(q, "<|im_end|>"), im_start = aha_tok_find(q, "<|im_start|>");
    const int32_t eot = aha_tok_find(l, "<|eot_id|>"), begin = aha_tok_find(l, "<|begin_of_text|>");
    CHECK(im_end >= 0 && im_start >= 0 && eot >= 0 && begin >= 0, "fixture tokens");
    CHECK(aha_tok_add_bos(l) && aha_tok_bos(l) == begin, "llama3's template adds <|begin_of_text|>");
    int32_t bos = -2, eos = -2;
    int add = -1;
    with_config("qwen2", "{\"bos_token\": null, \"eos_token\": \"<|im_end|>\"}", 0, &bos, &eos, &add, "");
    CHECK(bos == -1 && eos == im_end && add == 0, "qwen2 chat: bos %d eos %d add %d", bos, eos, add);
    with_config("qwen2", "{\"bos_token\": {\"content\": \"<|im_start|>\", \"lstrip\": false}, "
                "\"add_bos_token\": true}", 0, &bos, &eos, &add, "");
    CHECK(bos == im_start && add == 1 && eos == aha_tok_eos(q), "AddedToken bos: bos %d add %d", bos, add);
    with_config("llama3", "{\"bos_token\": \"<|eot_id|>\", \"eos_token\": \"<|eot_id|>\"}", 0, &bos, &eos,
                &add, "");
    CHECK(bos == begin && add == 1 && eos == eot, "the template's BOS stays: bos %d add %d eos %d", bos, add, eos);
    with_config("llama3", "{\"add_bos_token\": false}", 0, &bos, &eos, &add, "");
    CHECK(add == 0, "add_bos_token false turns the template's BOS off");
    with_config("qwen2", "{\"eos_token\": \"<|nope|>\"}", -1, &bos, &eos, &add, "eos_token '<|nope|>' is not in the vocabulary");
    with_config("qwen2", "{\"eos_token\": 7}", -1, &bos, &eos, &add, "eos_token is neither a string");
    with_config("qwen2", "{\"add_bos_token\": \"yes\"}", -1, &bos, &eos, &add, "add_bos_token is not true or false");
    with_config("qwen2", "{\"bos_token\": null, \"add_bos_token\": true}", -1, &bos, &eos, &add,
                "add_bos_token is true but there is no bos_token");
    with_config("qwen2", "{\"bos_token\": ", -1, &bos, &eos, &add, "not a JSON object");
    aha_tok_free(q), aha_tok_free(l);
}

int main(void) {
    if (tmpdir_make() != 0) return 1;
    texts = json_file(FIX "tok_texts.json");
    if (cJSON_GetArraySize(texts) == 0) { // not an array, or no texts: every comparison would be vacuous
        printf("FAIL cannot read " FIX "tok_texts.json\n");
        return 1;
    }
    TEST("tokenizer: SmolLM2 GGUF gives HF's ids and decoding for every text", test_smollm2());
    TEST("tokenizer: decode(encode(x)) == x on random multilingual text", test_round_trip());
    TEST("tokenizer: 1 MB single pre-tokens encode and round-trip", test_long_pieces());
    TEST("tokenizer: invalid UTF-8 is refused with its byte offset", test_invalid_utf8());
    TEST("tokenizer: decode refuses ids out of range", test_decode_range());
    TEST("tokenizer: Gemma-3 GGUF gives HF's ids and decoding for every text", test_gemma3());
    TEST("tokenizer: Gemma-3 decode(encode(x)) == x on random multilingual text", test_gemma3_round_trip());
    for (int f = 0; f < N(spm_families); f++) {
        char name[128];
        snprintf(name, sizeof name, "tokenizer: tiny SentencePiece %s tokenizer.json gives HF's ids", spm_families[f]);
        TEST(name, test_spm_json(f));
    }
    TEST("tokenizer: tiny SentencePiece llama2 GGUF gives transformers' ids", test_spm_gguf(0, "llama"));
    TEST("tokenizer: tiny SentencePiece gemma GGUF (gemma3) gives transformers' ids", test_spm_gguf(2, "gemma3"));
    for (int f = 0; f < N(families); f++) {
        char name[128];
        snprintf(name, sizeof name, "tokenizer: tiny %s tokenizer.json gives HF's ids", families[f]);
        TEST(name, test_family_json(f));
        snprintf(name, sizeof name, "tokenizer: tiny %s GGUF gives HF's ids", families[f]);
        TEST(name, test_family_gguf(f));
    }
    TEST("tokenizer: GGUF with tokenizer.ggml.model 't5' is refused",
         test_gguf_refused(FIX "tok_tiny/bad_model.gguf", "model is 't5': only 'gpt2'"));
    TEST("tokenizer: GGUF with an unknown tokenizer.ggml.pre is refused naming it",
         test_gguf_refused(FIX "tok_tiny/bad_pre.gguf", "'no-such-pre' unknown"));
    TEST("tokenizer: hand-written GGUF: added tokens by token type", test_gguf_handmade());
    TEST("tokenizer: hand-written SentencePiece GGUF: merges from scores, unk, decode", test_spm_handmade());
    for (int i = 1; i < SPM_COUNT; i++) {
        char name[128];
        snprintf(name, sizeof name, "tokenizer SentencePiece GGUF refused: %s", spm_bad[i].name);
        TEST(name, test_spm_bad(i));
    }
    for (int i = 1; i < GG_COUNT; i++) {
        char name[128];
        snprintf(name, sizeof name, "tokenizer GGUF refused: %s", gg_bad[i].name);
        TEST(name, test_gguf_bad(i));
    }
    TEST("tokenizer: unk_token and fuse_unk as in tokenizers", test_unk());
    TEST("tokenizer: a repeated merge takes its last rank", test_repeated_merge());
    TEST("tokenizer: an added token decodes to its own text", test_added_literal());
    TEST("tokenizer: Metaspace prepend_scheme first/always/never around an added token", test_metaspace());
    TEST("tokenizer_config.json: bos_token, eos_token, add_bos_token as HF reads them; bad ones refused",
         test_config());
    TEST("tokenizer.json refused: missing file", test_json_missing());
    for (int i = 0; i < N(json_bad); i++) {
        char name[128];
        snprintf(name, sizeof name, "tokenizer.json refused: %s", json_bad[i].name);
        TEST(name, test_json_bad(i));
    }
    aha_tok_free(smol);
    aha_gguf_close(&smol_gguf);
    aha_tok_free(gemma);
    aha_gguf_close(&gemma_gguf);
    cJSON_Delete(texts);
    rmdir(tmpdir);
    TEST_EXIT();
}
