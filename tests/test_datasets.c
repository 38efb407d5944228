// Dataset readers: every format gives the exact documented text; bad input is
// reported as path:line and skipped or fatal per skip_bad; folders, token
// files, max_docs; the built-in corpora exist after set-up.
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dataset.h"
#include "err.h"

#define FIX "tests/fixtures/datasets/"
#define MAX_DOCS 8

static char tmpdir[] = "/tmp/aha_datasets_XXXXXX";

// Write n bytes to tmpdir/name (folders made as needed); the path, static.
static const char *write_tmp(const char *name, const void *data, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    for (char *s = strchr(path + strlen(tmpdir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
    return path;
}
static const char *write_str(const char *name, const char *s) { return write_tmp(name, s, strlen(s)); }

// "path:line", static.
static const char *at(const char *path, int line) {
    static char s[600];
    snprintf(s, sizeof s, "%s:%d", path, line);
    return s;
}

// Everything one read of a dataset produced.
typedef struct {
    int rc;                 // 0: read to the end; -1: open or next failed
    int n;                  // documents read
    char text[MAX_DOCS][512]; // [n] their text (NUL-terminated copies)
    char name[MAX_DOCS][512]; // [n] their names
    size_t n_ids[MAX_DOCS]; // [n] token counts (token files)
    int32_t ids[MAX_DOCS][8]; // [n] first token ids
    char err[1024];         // the error when rc == -1
    char log[4096];         // what went to stderr
} run;

// Read path to the end with stderr captured.
static run read_all(const char *path, aha_ds_opts o) {
    static run r;
    memset(&r, 0, sizeof r);
    char logpath[256];
    snprintf(logpath, sizeof logpath, "%s/stderr.log", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    aha_dataset *d = NULL;
    aha_doc doc;
    r.rc = aha_ds_open(&d, path, &o);
    for (int k; r.rc == 0 && (k = aha_ds_next(d, &doc)) != 0; r.n++) {
        if (k < 0) {
            r.rc = -1;
            break;
        }
        if (r.n == MAX_DOCS) continue;
        if (doc.text) snprintf(r.text[r.n], sizeof r.text[0], "%.*s", (int)doc.len, doc.text);
        snprintf(r.name[r.n], sizeof r.name[0], "%s", doc.name);
        r.n_ids[r.n] = doc.n_ids;
        for (size_t i = 0; i < doc.n_ids && i < 8; i++) r.ids[r.n][i] = doc.ids[i];
    }
    if (r.rc < 0) snprintf(r.err, sizeof r.err, "%s", aha_errmsg());
    aha_ds_close(d);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(logpath, "r");
    if (f) {
        r.log[fread(r.log, 1, sizeof r.log - 1, f)] = '\0';
        fclose(f);
    }
    return r;
}

static aha_ds_opts opts(aha_ds_format f) { return (aha_ds_opts){.format = f}; }

// One document of the given format, with exactly the text want.
static void check_one(const char *path, aha_ds_format f, int n, int k, const char *want) {
    run r = read_all(path, opts(f));
    CHECK(r.rc == 0, "%s: %s", path, r.err);
    CHECK(r.n == n, "%s: %d documents, want %d", path, r.n, n);
    CHECK(strcmp(r.text[k], want) == 0, "%s doc %d:\n got '%s'\nwant '%s'", path, k, r.text[k], want);
    // AUTO must reach the same text from the extension and the record's shape.
    run a = read_all(path, opts(AHA_DS_AUTO));
    CHECK(a.rc == 0 && a.n == n && strcmp(a.text[k], want) == 0, "%s: AUTO gives '%s' (%s)", path,
          a.text[k], a.err);
}

// Bad input: fatal names path:line and the problem; skipping reports the same
// on stderr and keeps the n_good good documents (none: "no documents").
static void check_bad(const char *path, aha_ds_format f, const char *where, const char *problem,
                      int n_good) {
    char want[600];
    snprintf(want, sizeof want, "%s: %s", where, problem);
    aha_ds_opts o = opts(f);
    run r = read_all(path, o);
    CHECK(r.rc == -1 && strstr(r.err, want) && !strchr(r.err, '\n'), "fatal: '%s', want '%s'",
          r.err, want);
    o.skip_bad = 1;
    r = read_all(path, o);
    CHECK(n_good ? r.rc == 0 && r.n == n_good : r.rc == -1 && strstr(r.err, "no documents"),
          "skip: rc %d, %d documents, want %d (%s)", r.rc, r.n, n_good, r.err);
    CHECK(strstr(r.log, want) && strstr(r.log, "(skipped)"), "skip: stderr '%s' lacks '%s'", r.log,
          want);
}

// ---- formats ----

static void test_text(void) {
    const char *p = write_str("one.txt", "Hello,\nworld.\n");
    run r = read_all(p, opts(AHA_DS_AUTO));
    CHECK(r.rc == 0 && r.n == 1, "rc %d n %d: %s", r.rc, r.n, r.err);
    CHECK(strcmp(r.text[0], "Hello,\nworld.\n") == 0, "text '%s'", r.text[0]);
    CHECK(strcmp(r.name[0], p) == 0, "name '%s'", r.name[0]);
}

static void test_jsonl(void) {
    run r = read_all(FIX "plain.jsonl", opts(AHA_DS_AUTO));
    CHECK(r.rc == 0 && r.n == 2, "rc %d n %d: %s", r.rc, r.n, r.err);
    CHECK(strcmp(r.text[1], "Second document,\nwith two lines.") == 0, "text '%s'", r.text[1]);
    CHECK(strcmp(r.name[1], FIX "plain.jsonl:3") == 0, "name '%s' (the blank line counts)", r.name[1]);
    aha_ds_opts o = {.text_field = "content"};
    r = read_all(FIX "plain.jsonl", o);
    CHECK(r.rc == 0 && r.n == 2 && strcmp(r.text[0], "alpha") == 0, "text_field: '%s' %s",
          r.text[0], r.err);
}

static void test_gsm8k(void) {
    check_one(FIX "gsm8k.jsonl", AHA_DS_GSM8K, 2, 0,
              "Question: Mia’s hens lay 12 eggs a day. She uses 5 for breakfast and sells the rest"
              " for $3 each. How much does she earn a day?\nAnswer: She sells 12 - 5 = <<12-5=7>>7"
              " eggs.\nShe earns 7 * 3 = $<<7*3=21>>21 a day.\n#### 21");
}

static void test_mbpp(void) {
    check_one(FIX "mbpp.jsonl", AHA_DS_MBPP, 1, 0,
              "You are an expert Python programmer, and here is your task: Write a function to"
              " return the sum of the squares of a list of numbers. Your code should pass these"
              " tests:\n\nassert sum_squares([1, 2, 3]) == 14\nassert sum_squares([]) == 0\n"
              "assert sum_squares([-2]) == 4\n[BEGIN]\ndef sum_squares(nums):\r\n"
              "  return sum(x * x for x in nums)\n[DONE]");
}

// Expected strings computed with lm-eval-harness's hellaswag preprocess().
static void test_hellaswag(void) {
    const char *p = FIX "hellaswag.jsonl";
    check_one(p, AHA_DS_HELLASWAG, 3, 0,
              "Roof shingle removal: A man is sitting on a roof. He starts pulling up roofing on a"
              " roof.");
    check_one(p, AHA_DS_HELLASWAG, 3, 1,
              "Home and Garden: How to water a cactus. Check the soil first. Push a finger into the"
              " soil.  If it is dry two inches down, water it the pot drains.");
    check_one(p, AHA_DS_HELLASWAG, 3, 2,
              "The chef cracks two eggs into a bowl. She whisks them with a fork.");
}

static void test_mmlu(void) {
    const char *p = FIX "mmlu.csv";
    check_one(p, AHA_DS_MMLU, 2, 0, "What is 2 + 2?\nA. 3\nB. 4\nC. 5\nD. 22\nAnswer: B");
    check_one(p, AHA_DS_MMLU, 2, 1,
              "Which of these is a \"prime\" number, if any?\r\nPick one.\nA. 9\nB. 15\nC. 21\n"
              "D. 23\nAnswer: D");
    run r = read_all(p, opts(AHA_DS_MMLU));
    CHECK(strcmp(r.name[1], FIX "mmlu.csv:2") == 0, "name '%s'", r.name[1]);
}

static void test_csqa(void) {
    check_one(FIX "csqa.jsonl", AHA_DS_CSQA, 1, 0,
              "Question: Where would you most likely boil water in a kettle?\nA. garage\nB. kitchen\n"
              "C. forest\nD. river\nE. office\nAnswer: B");
}

static void test_multinews(void) {
    check_one(FIX "multinews.jsonl", AHA_DS_MULTINEWS, 1, 0,
              "The city council voted on Tuesday to expand the bus network. \n \n Three new lines"
              " will open next spring.\n\nResidents welcomed the decision at a public meeting.\n\n"
              "Summary: – The city will add three bus lines next spring after a council vote.");
}

// ---- token files ----

typedef struct {
    uint8_t p[256]; // bytes written so far
    size_t n;
} buf;

static void put(buf *b, const void *x, size_t n) {
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

// The documented layout, written by hand: "AHATOK01", u64 n_docs, then
// { u32 n, int32 ids[n] } per document.
static buf tok_file(uint64_t n_docs, const int32_t *const *docs, const uint32_t *lens, int n) {
    buf b = {.n = 0};
    put(&b, "AHATOK01", 8);
    put(&b, &n_docs, 8);
    for (int i = 0; i < n; i++) {
        put(&b, &lens[i], 4);
        put(&b, docs[i], 4 * lens[i]);
    }
    return b;
}

static const int32_t doc_a[] = {1, 2, 3}, doc_b[] = {42}, doc_c[] = {7, 49151};
static const int32_t *const tok_docs[] = {doc_a, doc_b, doc_c};
static const uint32_t tok_lens[] = {3, 1, 2};

static void test_tokens(void) {
    buf b = tok_file(3, tok_docs, tok_lens, 3);
    const char *p = write_tmp("ids.bin", b.p, b.n); // AUTO by the magic, not the name
    run r = read_all(p, opts(AHA_DS_AUTO));
    CHECK(r.rc == 0 && r.n == 3, "rc %d n %d: %s", r.rc, r.n, r.err);
    for (int i = 0; i < 3 && i < r.n; i++) {
        CHECK(r.n_ids[i] == tok_lens[i] && !r.text[i][0], "doc %d: %zu ids", i, r.n_ids[i]);
        for (uint32_t j = 0; j < tok_lens[i] && j < 8; j++)
            CHECK(r.ids[i][j] == tok_docs[i][j], "doc %d id %u: %d", i, j, r.ids[i][j]);
    }
    char want[600];
    snprintf(want, sizeof want, "%s#2", p);
    CHECK(strcmp(r.name[1], want) == 0, "name '%s'", r.name[1]);
}

// ---- bad input ----

static void test_bad_json(void) {
    const char *p = write_str("bad_json.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"\n{\"text\": \"c\"}\n");
    check_bad(p, AHA_DS_JSONL, at(p, 2), "invalid JSON at column", 2);
    p = write_str("not_object.jsonl", "[1, 2]\n{\"text\": \"c\"}\n");
    check_bad(p, AHA_DS_AUTO, at(p, 1), "not a JSON object", 1);
}

static void test_bad_missing_field(void) {
    const char *p = write_str("missing.jsonl", "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n");
    check_bad(p, AHA_DS_JSONL, at(p, 2), "no \"text\" field", 1);
    p = write_str("gsm_missing.jsonl", "{\"question\": \"q?\"}\n{\"question\": \"q\", \"answer\": \"a\"}\n");
    check_bad(p, AHA_DS_GSM8K, at(p, 1), "no \"answer\" field", 1);
}

static void test_bad_type(void) {
    const char *p = write_str("type.jsonl", "{\"text\": 5}\n{\"text\": \"b\"}\n");
    check_bad(p, AHA_DS_JSONL, at(p, 1), "\"text\" is a number, not a string", 1);
    p = write_str("hs_label.jsonl", "{\"ctx\": \"c\", \"endings\": [\"x\", \"y\"], \"label\": \"\"}\n"
                                    "{\"ctx\": \"c\", \"endings\": [\"x\", \"y\"], \"label\": 1}\n");
    check_bad(p, AHA_DS_HELLASWAG, at(p, 1), "\"label\" is not an ending index 0..1", 1);
}

static void test_bad_utf8(void) {
    const char *p = write_str("utf8.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"caf\xc3\"}\n");
    char where[600];
    check_bad(p, AHA_DS_JSONL, at(p, 2), "invalid UTF-8 (byte 0xc3 at column 14)", 1);
    // A text file is one document: skipping it leaves none.
    p = write_str("utf8.txt", "line one\nline two\nan overlong \xc0\xaf slash\n");
    snprintf(where, sizeof where, "%s:3: invalid UTF-8 (byte 0xc0 at column 13)", p);
    run r = read_all(p, opts(AHA_DS_TEXT));
    CHECK(r.rc == -1 && strstr(r.err, where), "text: '%s', want '%s'", r.err, where);
    r = read_all(p, (aha_ds_opts){.skip_bad = 1});
    CHECK(r.rc == -1 && strstr(r.log, where) && strstr(r.err, "no documents"),
          "text skipped: '%s' / '%s'", r.log, r.err);
}

// cJSON's strings end at a NUL: a \u0000 escape would cut the document there.
// Refused wherever it is (plain text, a template's field, a key), never an
// escaped backslash followed by "u0000".
static void test_bad_nul(void) {
    const char *p = write_str("nul.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"cut\\u0000 here\"}\n");
    check_bad(p, AHA_DS_JSONL, at(p, 2), "\\u0000 (a NUL character) in a JSON string at column 14", 1);
    p = write_str("nul_gsm.jsonl", "{\"question\": \"q\", \"answer\": \"4\\u0000\"}\n{\"question\": \"q\", \"answer\": \"a\"}\n");
    check_bad(p, AHA_DS_AUTO, at(p, 1), "\\u0000 (a NUL character)", 1);
    p = write_str("nul_key.jsonl", "{\"te\\u0000x\": \"a\", \"text\": \"b\"}\n{\"text\": \"c\"}\n");
    check_bad(p, AHA_DS_JSONL, at(p, 1), "\\u0000 (a NUL character)", 1);
    p = write_str("nul_not.jsonl", "{\"text\": \"a\\\\u0000\"}\n");
    check_one(p, AHA_DS_JSONL, 1, 0, "a\\u0000");
}

static void test_bad_csv(void) {
    // The first record spans two lines, so the bad one is on line 3.
    const char *p = write_str("cols.csv", "\"q1\nstill q1\",a,b,c,d,A\nq2,a,b,c,d\nq3,a,b,c,d,C\n");
    check_bad(p, AHA_DS_MMLU, at(p, 3), "5 columns, want 6 (question,A,B,C,D,answer)", 2);
    p = write_str("answer.csv", "q1,a,b,c,d,E\nq2,a,b,c,d,C\n");
    check_bad(p, AHA_DS_AUTO, at(p, 1), "answer column is not A, B, C or D", 1);
    p = write_str("quote.csv", "q1,a,b,c,d,A\n\"q2 never ends,a,b\n");
    check_bad(p, AHA_DS_MMLU, at(p, 2), "unterminated quoted field", 1);
}

static void test_bad_tokens(void) {
    char where[600];
    buf b = tok_file(3, tok_docs, tok_lens, 3);
    const char *p = write_tmp("cut.tok", b.p, b.n - 6); // inside the last document
    snprintf(where, sizeof where, "%s: document 3", p);
    check_bad(p, AHA_DS_AUTO, where, "truncated (6 bytes left at offset 40)", 2);
    p = write_tmp("short.tok", b.p, 12);
    check_bad(p, AHA_DS_TOKENS, p, "not a token file (no AHATOK01 header)", 0);
    b = tok_file(2, tok_docs, tok_lens, 3); // the header says 2; one more follows
    p = write_tmp("extra.tok", b.p, b.n);
    check_bad(p, AHA_DS_TOKENS, p, "12 bytes after the last of 2 documents", 2);
    const int32_t neg[] = {5, -1};
    const int32_t *docs2[] = {neg, doc_b};
    const uint32_t lens2[] = {2, 1};
    b = tok_file(2, docs2, lens2, 2);
    p = write_tmp("neg.tok", b.p, b.n);
    snprintf(where, sizeof where, "%s: document 1", p);
    check_bad(p, AHA_DS_TOKENS, where, "negative token id -1 at index 1", 1);
}

static void test_bad_empty(void) {
    char dir[600], where[700];
    write_str("withempty/a.txt", "");
    write_str("withempty/b.txt", "text");
    snprintf(dir, sizeof dir, "%s/withempty", tmpdir);
    snprintf(where, sizeof where, "%s/a.txt", dir);
    check_bad(dir, AHA_DS_AUTO, where, "empty file", 1);
    // Zero documents: always an error naming the path.
    aha_ds_opts o = {.skip_bad = 1};
    snprintf(dir, sizeof dir, "%s/nothing", tmpdir);
    mkdir(dir, 0755);
    run r = read_all(dir, o);
    snprintf(where, sizeof where, "%s: no documents", dir);
    CHECK(r.rc == -1 && strcmp(r.err, where) == 0, "empty folder: '%s'", r.err);
    const char *p = write_str("blank.jsonl", "\n  \n\n");
    r = read_all(p, o);
    snprintf(where, sizeof where, "%s: no documents", p);
    CHECK(r.rc == -1 && strcmp(r.err, where) == 0, "blank lines only: '%s'", r.err);
    r = read_all("/nonexistent/data.txt", o);
    CHECK(r.rc == -1 && strstr(r.err, "/nonexistent/data.txt: cannot open"), "missing: '%s'", r.err);
}

// ---- folders, max_docs, names ----

static void test_folder(void) {
    write_str("tree/b.txt", "bee");
    write_str("tree/a.md", "# A");
    write_str("tree/sub/d.jsonl", "{\"text\": \"d1\"}\n{\"text\": \"d2\"}\n");
    write_str("tree/sub/c.txt", "sea");
    write_str("tree/.hidden", "never read");
    write_tmp("tree/z.bin", "\x7f" "ELF\0\0\0", 7);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tree/", tmpdir); // a trailing '/' is fine
    run r = read_all(dir, opts(AHA_DS_AUTO));
    const char *want[] = {"# A", "bee", "sea", "d1", "d2"};
    CHECK(r.rc == 0 && r.n == 5, "rc %d n %d: %s", r.rc, r.n, r.err);
    for (int i = 0; i < 5 && i < r.n; i++)
        CHECK(strcmp(r.text[i], want[i]) == 0, "doc %d: '%s', want '%s'", i, r.text[i], want[i]);
    CHECK(strstr(r.name[3], "/tree/sub/d.jsonl:1"), "name '%s'", r.name[3]);
    CHECK(strstr(r.log, "z.bin: binary file, skipped"), "no note for z.bin: '%s'", r.log);
    const char *p = write_tmp("bin.txt", "\x7f" "ELF\0\0\0", 7);
    char where[600];
    snprintf(where, sizeof where, "%s: binary file (NUL byte at offset 4)", p);
    r = read_all(p, opts(AHA_DS_AUTO)); // named alone, a binary file is an error
    CHECK(r.rc == -1 && strstr(r.err, where), "'%s'", r.err);
}

static void test_max_docs(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tree", tmpdir);
    aha_ds_opts o = {.max_docs = 2};
    run r = read_all(dir, o);
    CHECK(r.rc == 0 && r.n == 2 && strcmp(r.text[1], "bee") == 0, "folder: n %d", r.n);
    o.max_docs = 1;
    r = read_all(FIX "gsm8k.jsonl", o);
    CHECK(r.rc == 0 && r.n == 1, "jsonl: n %d", r.n);
    o.max_docs = -1;
    r = read_all(FIX "gsm8k.jsonl", o);
    CHECK(r.rc == -1 && strstr(r.err, "max_docs"), "negative: '%s'", r.err);
}

static void test_format_names(void) {
    int f = AHA_DS_AUTO;
    CHECK(aha_ds_formats.n == AHA_DS_TOKENS + 1, "%d names for %d formats", aha_ds_formats.n, AHA_DS_TOKENS + 1);
    for (int i = AHA_DS_AUTO; i <= AHA_DS_TOKENS; i++) {
        CHECK(aha_enum_parse(&aha_ds_formats, "--data-format", aha_ds_format_name((aha_ds_format)i), &f) == 0 && f == i,
              "format %d", i);
    }
    CHECK(aha_enum_parse(&aha_ds_formats, "--data-format", "parquet", &f) == -1 &&
              strstr(aha_errmsg(), "--data-format: 'parquet' is not auto, text,"), "%s", aha_errmsg());
}

// ---- the built-in corpora ----

static void test_corpus(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) {
        CHECK(0, "%s is missing: run datasets/build_corpora.sh (scripts/setup.sh runs it)", dir);
        return;
    }
    aha_dataset *d;
    aha_doc doc;
    int n = 0, n_long = 0, k = 0;
    CHECK(aha_ds_open(&d, dir, NULL) == 0, "%s", aha_errmsg());
    if (check_failed_) return;
    while ((k = aha_ds_next(d, &doc)) == 1) {
        n++;
        n_long += doc.len >= 20000;
    }
    CHECK(k == 0, "%s", aha_errmsg());
    aha_ds_close(d);
    CHECK(n >= 10 && n_long >= 3, "%s: %d documents, %d of 20 KB or more (want >= 10 and >= 3)",
          dir, n, n_long);
}

int main(void) {
    if (!mkdtemp(tmpdir)) return 1;
    TEST("datasets: text file", test_text());
    TEST("datasets: jsonl + text_field", test_jsonl());
    TEST("datasets: gsm8k template", test_gsm8k());
    TEST("datasets: mbpp template", test_mbpp());
    TEST("datasets: hellaswag template (lm-eval preprocess)", test_hellaswag());
    TEST("datasets: mmlu csv template", test_mmlu());
    TEST("datasets: commonsenseqa template", test_csqa());
    TEST("datasets: multi-news template", test_multinews());
    TEST("datasets: token file round trip", test_tokens());
    TEST("datasets: bad JSON line", test_bad_json());
    TEST("datasets: missing field", test_bad_missing_field());
    TEST("datasets: wrong field type", test_bad_type());
    TEST("datasets: invalid UTF-8", test_bad_utf8());
    TEST("datasets: \\u0000 in JSON text", test_bad_nul());
    TEST("datasets: bad CSV record", test_bad_csv());
    TEST("datasets: bad token file", test_bad_tokens());
    TEST("datasets: empty file, empty dataset", test_bad_empty());
    TEST("datasets: folder reader", test_folder());
    TEST("datasets: max_docs", test_max_docs());
    TEST("datasets: format names", test_format_names());
    TEST("datasets: built-in prose corpus", test_corpus("datasets/corpora/prose"));
    TEST("datasets: built-in code corpus", test_corpus("datasets/corpora/code"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    TEST_EXIT();
}
