// docs/trace-format.md's field tables are the schema's (trace_schema.h):
// this renders them from the tables and checks that the page holds exactly
// that between its "schema" markers. `make docs` (this program with
// --write) rewrites them, so a field added to the schema reaches the page
// without a second edit, and a page edited by hand fails here.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "err.h"
#include "trace_schema.h"

#define BEGIN "<!-- schema: generated from runtime/trace/trace_schema.c by `make docs`; edit there -->\n"
#define END "<!-- schema: end -->\n"

static void put(aha_buf *b, const char *s) { aha_buf_add(b, s, strlen(s)); }

// What the page writes for a template's {key}s: in a path (a code span),
// and in prose (where <e> alone would read as an HTML tag).
static const trace_vars code_vars = {"<e>", "<w>", "<sinks>", "<name>", "<policy>"};
static const trace_vars text_vars = {"`<e>`", "`<w>`", "`<sinks>`", "`<name>`", "`<policy>`"};

// tmpl filled with the placeholders above, as a table cell ('|' escaped).
static void put_filled(aha_buf *b, const char *tmpl, const trace_vars *v) {
    char s[1024];
    CHECK(trace_fill(s, sizeof s, tmpl, v) == 0, "template %s", tmpl);
    for (char *p = s, *bar; *p; p = bar + 1) {
        if (!(bar = strchr(p, '|'))) {
            put(b, p);
            break;
        }
        *bar = '\0';
        put(b, p), put(b, "\\|");
    }
}

static const char *when_text(trace_when w, int group) {
    static const char *t[] = {[W_ALWAYS] = "always", [W_AHA] = "`aha` = 1",
                              [W_EPS] = "one per eps", [W_WERR] = "`werr` = 1: one per window",
                              [W_MASS] = "`mass` = 1: one per window", [W_MASS1] = "`mass` = 1",
                              [W_RUN] = "one per run", [W_RUN_GATE] = "one per run whose policy is not `global`"};
    return group && w == W_WERR ? "`werr` = 1" : group && w == W_MASS ? "`mass` = 1" : t[w];
}

static void attr_table(aha_buf *b, const trace_group *g, int root) {
    static const char *kind[] = {[AK_STR] = "str", [AK_INT] = "int64", [AK_I64] = "int64",
                                 [AK_F64] = "float64", [AK_F64S] = "float64 [n]", [AK_INTS] = "int64 [n]"};
    put(b, root ? "| name | type | meaning | the same to |\n|---|---|---|---|\n" : "| name | type | meaning |\n|---|---|---|\n");
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *a = &g->attrs[i];
        put(b, "| `"), put(b, a->name), put(b, "` | "), put(b, kind[a->kind]), put(b, " | "), put_filled(b, a->doc, &text_vars);
        if (root) {
            put(b, " | ");
            put(b, (a->flags & A_RESUME) && (a->flags & A_COMBINE) ? "resume, combine"
                   : a->flags & A_RESUME                            ? "resume"
                   : a->flags & A_COMBINE                           ? "combine"
                                                                    : "");
            if (a->flag && (a->flags & (A_RESUME | A_COMBINE))) put(b, " (`"), put(b, a->flag), put(b, "`)");
        }
        put(b, " |\n");
    }
}

// " `a`, `b`": the names of g's attributes with flag.
static void names_with(aha_buf *b, const trace_group *g, unsigned flag) {
    for (int i = 0, k = 0; i < g->n_attrs; i++)
        if (g->attrs[i].flags & flag) put(b, k++ ? ", `" : " `"), put(b, g->attrs[i].name), put(b, "`");
}

// The generated part of the page.
static char *render(void) {
    static const char *shape[] = {[SH_T] = "[T]", [SH_LTH] = "[L, T, H]", [SH_DOCS] = "[n_docs + 1]", [SH_DOC] = "[n_docs]"};
    aha_buf b = {0};
    put(&b, BEGIN "\n### Root attributes\n\n\"The same to\": `aha record --resume` refuses a trace that "
            "differs from the run in these (naming the first by what sets it, in parentheses, with both values as "
            "typed), and `aha report` / `aha merge` refuse to combine traces that differ in those marked combine. "
            "The model, the dataset and the router file are compared by their fingerprints (`*_sha256`), their "
            "paths only with a trace that lacks them. A reader refuses a file without");
    const trace_group *root = &trace_groups[TG_ROOT];
    names_with(&b, root, A_REQUIRED);
    put(&b, "; the others take a default when absent (resume needs all but");
    names_with(&b, root, A_OPTIONAL);
    put(&b, ").\n\n");
    attr_table(&b, root, 1);
    put(&b, "\n### Groups\n\nEvery group has a string attribute `description` (here with `<name>`, `<policy>` "
            "and `<w>` for a run's).\n\n| path | present | description |\n|---|---|---|\n");
    for (int k = 0; k < TG_COUNT; k++) {
        const trace_group *g = &trace_groups[k];
        put(&b, "| `"), put_filled(&b, g->path, &code_vars), put(&b, "` | "), put(&b, when_text(g->when, 1)), put(&b, " | ");
        put_filled(&b, g->desc, &text_vars), put(&b, " |\n");
    }
    put(&b, "\nAttributes of `provenance`:\n\n");
    attr_table(&b, &trace_groups[TG_PROVENANCE], 0);
    put(&b, "\nAttributes of each `runs/<name>`:\n\n");
    attr_table(&b, &trace_groups[TG_RUN], 0);
    put(&b, "\n### Datasets\n\nEvery dataset has a string attribute `description`, the text below; `<e>` is an "
            "eps printed with C's `%g`, `<w>` a window, `<name>` a run's name.\n\n"
            "| path | type | shape | present | attribute | description |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < TD_COUNT; i++) {
        const trace_dset *d = &trace_dsets[i];
        put(&b, "| `"), put_filled(&b, d->path, &code_vars), put(&b, "` | "), put(&b, trace_types[d->type].name);
        put(&b, " | "), put(&b, shape[d->shape]), put(&b, " | "), put(&b, when_text(d->when, 0)), put(&b, " | ");
        if (d->attr) put(&b, "`"), put(&b, d->attr), put(&b, "` (float64)");
        put(&b, " | "), put_filled(&b, d->desc, &text_vars), put(&b, " |\n");
    }
    put(&b, "\n" END);
    return aha_buf_take(&b, "the schema's tables");
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (s = malloc((size_t)len + 1)) && fread(s, 1, (size_t)len, f) == (size_t)len)
        s[len] = '\0';
    else
        free(s), s = NULL;
    if (f) fclose(f);
    *n = s ? (size_t)len : 0;
    return s;
}

// Write the page with gen between its markers, or check that it has it.
static void page_tables(const char *page, int write) {
    size_t n;
    char *doc = slurp(page, &n), *gen = render();
    char *a = doc && gen ? strstr(doc, BEGIN) : NULL, *z = a ? strstr(a, END) : NULL;
    CHECK(gen, "%s", aha_errmsg());
    CHECK(a && z, "%s: no schema markers (lines \"%.30s...\" and \"%.20s\")", page, BEGIN, END);
    if (a && z && write) {
        z += strlen(END);
        FILE *f = fopen(page, "wb");
        int ok = f && fwrite(doc, 1, (size_t)(a - doc), f) == (size_t)(a - doc) && fputs(gen, f) >= 0 &&
                 fputs(z, f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        CHECK(ok, "%s: write failed", page);
    } else if (a && z) {
        z += strlen(END);
        CHECK((size_t)(z - a) == strlen(gen) && memcmp(a, gen, strlen(gen)) == 0,
              "%s: its field tables differ from runtime/trace/trace_schema.c's: run `make docs`", page);
    }
    free(doc), free(gen);
}

int main(int argc, char **argv) {
    const char *page = "docs/trace-format.md";
    if (argc > 1 && strcmp(argv[1], "--write") == 0) {
        TEST("docs/trace-format.md: field tables written from the schema", page_tables(page, 1));
    } else {
        TEST("docs/trace-format.md lists exactly the schema's fields", page_tables(page, 0));
    }
    TEST_EXIT();
}
