// docs/trace-format.md's field tables are the schema's (trace_schema.h):
// this renders them from the tables and checks that the page holds exactly
// that between its "schema" markers (tests/doc_page.h; `make docs` writes
// them).
#include "doc_page.h"
#include "trace_schema.h"

#define BEGIN "<!-- schema: generated from runtime/trace/trace_schema.c by `make docs`; edit there -->\n"
#define END "<!-- schema: end -->\n"

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
            doc_put(b, p);
            break;
        }
        *bar = '\0';
        doc_put(b, p), doc_put(b, "\\|");
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
    doc_put(b, root ? "| name | type | meaning | the same to |\n|---|---|---|---|\n" : "| name | type | meaning |\n|---|---|---|\n");
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *a = &g->attrs[i];
        doc_put(b, "| `"), doc_put(b, a->name), doc_put(b, "` | "), doc_put(b, kind[a->kind]), doc_put(b, " | "), put_filled(b, a->doc, &text_vars);
        if (root) {
            doc_put(b, " | ");
            doc_put(b, (a->flags & A_RESUME) && (a->flags & A_COMBINE) ? "resume, combine"
                   : a->flags & A_RESUME                            ? "resume"
                   : a->flags & A_COMBINE                           ? "combine"
                                                                    : "");
            if (a->flag && (a->flags & (A_RESUME | A_COMBINE))) doc_put(b, " (`"), doc_put(b, a->flag), doc_put(b, "`)");
        }
        doc_put(b, " |\n");
    }
}

// " `a`, `b`": the names of g's attributes with flag.
static void names_with(aha_buf *b, const trace_group *g, unsigned flag) {
    for (int i = 0, k = 0; i < g->n_attrs; i++)
        if (g->attrs[i].flags & flag) doc_put(b, k++ ? ", `" : " `"), doc_put(b, g->attrs[i].name), doc_put(b, "`");
}

// The generated part of the page.
static char *render(void) {
    static const char *shape[] = {[SH_T] = "[T]", [SH_LTH] = "[L, T, H]", [SH_DOCS] = "[n_docs + 1]", [SH_DOC] = "[n_docs]"};
    aha_buf b = {0};
    doc_put(&b, BEGIN "\n### Root attributes\n\n\"The same to\": `aha record --resume` refuses a trace that "
            "differs from the run in these (naming the first by what sets it, in parentheses, with both values as "
            "typed), and `aha report` / `aha merge` refuse to combine traces that differ in those marked combine. "
            "The model, the dataset and the router file are compared by their fingerprints (`*_sha256`), their "
            "paths only with a trace that lacks them. A reader refuses a file without");
    const trace_group *root = &trace_groups[TG_ROOT];
    names_with(&b, root, A_REQUIRED);
    doc_put(&b, "; the others take a default when absent (resume needs all but");
    names_with(&b, root, A_OPTIONAL);
    doc_put(&b, ").\n\n");
    attr_table(&b, root, 1);
    doc_put(&b, "\n### Groups\n\nEvery group has a string attribute `description` (here with `<name>`, `<policy>` "
            "and `<w>` for a run's).\n\n| path | present | description |\n|---|---|---|\n");
    for (int k = 0; k < TG_COUNT; k++) {
        const trace_group *g = &trace_groups[k];
        doc_put(&b, "| `"), put_filled(&b, g->path, &code_vars), doc_put(&b, "` | "), doc_put(&b, when_text(g->when, 1)), doc_put(&b, " | ");
        put_filled(&b, g->desc, &text_vars), doc_put(&b, " |\n");
    }
    doc_put(&b, "\nAttributes of `provenance`:\n\n");
    attr_table(&b, &trace_groups[TG_PROVENANCE], 0);
    doc_put(&b, "\nAttributes of each `runs/<name>`:\n\n");
    attr_table(&b, &trace_groups[TG_RUN], 0);
    doc_put(&b, "\n### Datasets\n\nEvery dataset has a string attribute `description`, the text below; `<e>` is an "
            "eps printed with C's `%g`, `<w>` a window, `<name>` a run's name.\n\n"
            "| path | type | shape | present | attribute | description |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < TD_COUNT; i++) {
        const trace_dset *d = &trace_dsets[i];
        doc_put(&b, "| `"), put_filled(&b, d->path, &code_vars), doc_put(&b, "` | "), doc_put(&b, trace_types[d->type].name);
        doc_put(&b, " | "), doc_put(&b, shape[d->shape]), doc_put(&b, " | "), doc_put(&b, when_text(d->when, 0)), doc_put(&b, " | ");
        if (d->attr) doc_put(&b, "`"), doc_put(&b, d->attr), doc_put(&b, "` (float64)");
        doc_put(&b, " | "), put_filled(&b, d->desc, &text_vars), doc_put(&b, " |\n");
    }
    doc_put(&b, "\n### Coordinates\n\nIn a complete trace: 1-D datasets at the root, each an HDF5 dimension scale "
            "(attribute `CLASS` = `DIMENSION_SCALE`, `NAME` its name) that every dataset's axis of that name is "
            "attached to (attribute `DIMENSION_LIST`): `[T]` and `[L, T, H]` datasets to `token`, and `layer` and "
            "`head`; `[n_docs]` ones to `doc`; `doc_offsets` is a scale of its own. Each has a `description`.\n\n"
            "| path | type | description |\n|---|---|---|\n");
    for (int i = 0; i < TC_COUNT; i++) {
        const trace_coord *c = &trace_coords[i];
        doc_put(&b, "| `"), doc_put(&b, c->path), doc_put(&b, "` | "), doc_put(&b, trace_types[c->type].name);
        doc_put(&b, " | "), put_filled(&b, c->desc, &text_vars), doc_put(&b, " |\n");
    }
    doc_put(&b, "\n" END);
    return aha_buf_take(&b, "the page's tables");
}

int main(int argc, char **argv) {
    return doc_page_main(argc, argv, "docs/trace-format.md", BEGIN, END, render, "runtime/trace/trace_schema.c");
}
