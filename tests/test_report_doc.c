// docs/report-format.md's field tables are the report's table
// (analyze/report_schema.c): this renders them and checks that the page
// holds exactly that between its markers (tests/doc_page.h; `make docs`
// writes them).
#include "doc_page.h"
#include "report_schema.h"

#define BEGIN "<!-- report schema: generated from analyze/report_schema.c by `make docs`; edit there -->\n"
#define END "<!-- report schema: end -->\n"

// s as a table cell: '|' escaped.
static void put_cell(aha_buf *b, const char *s) {
    char one[2] = {0};
    for (; *s; s++) one[0] = *s, doc_put(b, *s == '|' ? "\\|" : one);
}

// An object's name as a link to its section.
static void put_obj(aha_buf *b, report_obj k) {
    doc_put(b, "[`"), doc_put(b, report_objs[k].name), doc_put(b, "`](#"), doc_put(b, report_objs[k].name), doc_put(b, ")");
}

// "[L][H] frac", "number or null", "frac or null".
static void put_type(aha_buf *b, const report_field *r) {
    static const char *names[] = {[RT_INT] = "integer", [RT_NUM] = "number", [RT_NUM_NULL] = "number or null",
                                  [RT_STR] = "string", [RT_BOOL] = "true / false"};
    if (r->shape) doc_put(b, r->shape), doc_put(b, " ");
    if (r->type == RT_OBJ || r->type == RT_OBJ_NULL) put_obj(b, r->of);
    else doc_put(b, names[r->type]);
    if (r->type == RT_OBJ_NULL) doc_put(b, " or null");
}

// Where objects of kind k are: the fields that hold one.
static void put_where(aha_buf *b, report_obj k) {
    int n = 0;
    for (int f = 0; f < RF_COUNT; f++) {
        const report_field *r = &report_fields[f];
        if ((r->type != RT_OBJ && r->type != RT_OBJ_NULL) || r->of != k) continue;
        doc_put(b, n++ ? ", `" : " In `"), doc_put(b, report_objs[r->obj].name), doc_put(b, "."), doc_put(b, r->key);
        doc_put(b, "`");
    }
    if (n) doc_put(b, ".");
}

static void put_object(aha_buf *b, report_obj k) {
    const report_object *o = &report_objs[k];
    doc_put(b, "\n### `"), doc_put(b, o->name), doc_put(b, "`\n\n"), doc_put(b, o->desc);
    put_where(b, k);
    if (o->base != RO_COUNT) doc_put(b, " The fields of "), put_obj(b, o->base), doc_put(b, ", then:");
    doc_put(b, "\n\n| field | type | unit | counts | present | meaning |\n|---|---|---|---|---|---|\n");
    for (int f = 0; f < RF_COUNT; f++) {
        const report_field *r = &report_fields[f];
        if (r->obj != k) continue;
        doc_put(b, "| `"), doc_put(b, r->key), doc_put(b, "` | "), put_type(b, r), doc_put(b, " | ");
        put_cell(b, r->unit), doc_put(b, " | "), put_cell(b, r->counts), doc_put(b, " | ");
        put_cell(b, r->when ? r->when : "always"), doc_put(b, " | "), put_cell(b, r->desc), doc_put(b, " |\n");
    }
}

// The generated part of the page.
static char *render(void) {
    aha_buf b = {0};
    doc_put(&b, BEGIN);
    for (int k = 0; k < RO_COUNT; k++) put_object(&b, (report_obj)k);
    doc_put(&b, "\n" END);
    return aha_buf_take(&b, "the page's tables");
}

int main(int argc, char **argv) {
    return doc_page_main(argc, argv, "docs/report-format.md", BEGIN, END, render, "analyze/report_schema.c");
}
