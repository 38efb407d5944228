// A docs page whose tables are generated from a schema (the trace's, the
// report's): the text between two marker lines is what the schema renders.
// The test renders it and checks that the page holds exactly that; with
// --write (`make docs`) it rewrites that part, so a field added to the
// schema reaches the page without a second edit, and a page edited by hand
// fails the test.
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "err.h"

// Append s to the page text being rendered.
static inline void doc_put(aha_buf *b, const char *s) { aha_buf_add(b, s, strlen(s)); }

static inline char *doc_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (s = malloc((size_t)len + 1)) && fread(s, 1, (size_t)len, f) == (size_t)len)
        s[len] = '\0';
    else
        free(s), s = NULL;
    if (f) fclose(f);
    return s;
}

// Page's text from its line `begin` through its line `end` is gen (which
// holds both): write it there (write), or check that it is (else the fix is
// `make docs`, from source: the schema's file).
static inline void doc_page_section(const char *page, const char *begin, const char *end, const char *gen, int write,
                             const char *source) {
    char *doc = doc_slurp(page), *a = doc && gen ? strstr(doc, begin) : NULL, *z = a ? strstr(a, end) : NULL;
    CHECK(gen, "%s", aha_errmsg()); // rendering failed
    CHECK(!gen || (a && z), "%s: no generated-section markers (lines \"%.30s...\" and \"%.20s\")", page, begin, end);
    if (a && z && write) {
        z += strlen(end);
        FILE *f = fopen(page, "wb");
        int ok = f && fwrite(doc, 1, (size_t)(a - doc), f) == (size_t)(a - doc) && fputs(gen, f) >= 0 && fputs(z, f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        CHECK(ok, "%s: write failed", page);
    } else if (a && z) {
        z += strlen(end);
        CHECK((size_t)(z - a) == strlen(gen) && memcmp(a, gen, strlen(gen)) == 0,
              "%s: its field tables differ from %s's: run `make docs`", page, source);
    }
    free(doc);
}

// A doc test's main: check page's generated part (render's) or, with
// --write, write it.
static inline int doc_page_main(int argc, char **argv, const char *page, const char *begin, const char *end,
                         char *(*render)(void), const char *source) {
    int write = argc > 1 && strcmp(argv[1], "--write") == 0;
    char name[256], *gen = render();
    snprintf(name, sizeof name, write ? "%s: field tables written from %s" : "%s lists exactly the fields of %s", page, source);
    TEST(name, doc_page_section(page, begin, end, gen, write, source));
    free(gen);
    TEST_EXIT();
}
