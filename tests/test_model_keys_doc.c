// docs/runtime.md's tables of what aha reads from a model file, and what it
// leaves unread on purpose, are the loaders' own rows (model_config_rows.h,
// aha_ignored_tensors, aha_tok_gguf_info): this renders them and checks that
// the page holds exactly that between its markers (tests/doc_page.h; `make
// docs` writes them).
#include "doc_page.h"
#include "model_config_rows.h"
#include "tokenizer_gguf_keys.h"

#define BEGIN "<!-- model keys: generated from the loaders' tables by `make docs`; edit there -->\n"
#define END "<!-- model keys: end -->\n"

static void put_cell(aha_buf *b, const char *s) {
    char one[2] = {0};
    for (; *s; s++) one[0] = *s, doc_put(b, *s == '|' ? "\\|" : one);
}

// A kind's name in the table: config.json's model_type, or the GGUF name.
static const char *kind_name(int k, int gguf) { return gguf ? aha_kinds[k].gguf : aha_kinds[k].model_type; }

// The types a row is read for: "all" (every kind of all), then the others' names
// ("(outer)" after the multimodal wrapper's).
static void put_types(aha_buf *b, unsigned types, unsigned all, int gguf) {
    int k = 0;
    if ((types & all) == all) doc_put(b, "all"), k++, types &= ~all;
    for (int i = 0; i < AHA_N_KINDS; i++)
        if (types >> i & 1) {
            doc_put(b, k++ ? ", " : ""), doc_put(b, kind_name(i, gguf));
            doc_put(b, i == K_GEMMA3_MM && !gguf ? " (outer)" : "");
        }
}

// The architecture row's text: its doc, then every kind of the format, with what it is.
static void put_kinds(aha_buf *b, unsigned kinds, int gguf) {
    doc_put(b, ": ");
    for (int i = 0, k = 0; i < AHA_N_KINDS; i++) {
        if (!(kinds >> i & 1)) continue;
        doc_put(b, k++ ? ", " : ""), doc_put(b, kind_name(i, gguf));
        const char *what = aha_kinds[i].what;
        if (what && !(gguf && i == K_GEMMA3_MM)) doc_put(b, " ("), put_cell(b, what), doc_put(b, ")");
    }
}

static void put_rows(aha_buf *b, const char *head, const cfg_row *rows, int n_rows, unsigned all, unsigned kinds,
                     int gguf) {
    doc_put(b, head);
    for (int i = 0; i < n_rows; i++) {
        const cfg_row *r = &rows[i];
        doc_put(b, "| `"), doc_put(b, r->name), doc_put(b, "` | ");
        put_types(b, r->types, all, gguf);
        doc_put(b, " | ");
        if (r->kind == ROW_ONLY) doc_put(b, "only `"), put_cell(b, r->only), doc_put(b, "`: ");
        if (r->kind == ROW_INFO) doc_put(b, "not read: ");
        put_cell(b, r->doc);
        if (r->kind == ROW_ARCH) put_kinds(b, kinds, gguf);
        if (r->required) doc_put(b, " (required)");
        doc_put(b, " |\n");
    }
}

static char *render(void) {
    aha_buf b = {0};
    doc_put(&b, BEGIN);
    put_rows(&b,
             "\nconfig.json fields (in a multimodal `gemma3` config, the outer object's; the rest are "
             "its `text_config`'s):\n\n| field | model types | what aha does with it |\n|---|---|---|\n",
             aha_json_rows, aha_n_json_rows, AHA_KINDS_JSON & ~(1u << K_GEMMA3_MM), AHA_KINDS_JSON, 0);
    put_rows(&b,
             "\nGGUF keys (`{arch}.` before each name but the `general.`, `split.` and `quantize.` "
             "ones; the tokenizer's are below):\n\n| key | architectures | what aha does with it |\n|---|---|---|\n",
             aha_gguf_rows, aha_n_gguf_rows, AHA_KINDS_GGUF, AHA_KINDS_GGUF, 1);
    doc_put(&b, "\nGGUF tokenizer keys no token id depends on (the others are read by the tokenizer's "
                "loader, or refused; a name ending in `.` or `_` stands for every key that starts so):\n\n"
                "| key | vocabularies | why |\n|---|---|---|\n");
    static const char *const only[] = {"all", "byte-level BPE (`gpt2`)", "SentencePiece (`llama`)"};
    for (int i = 0; i < aha_n_tok_gguf_info; i++) {
        doc_put(&b, "| `"), doc_put(&b, aha_tok_gguf_info[i].key), doc_put(&b, "` | ");
        doc_put(&b, only[aha_tok_gguf_info[i].only]), doc_put(&b, " | ");
        put_cell(&b, aha_tok_gguf_info[i].why), doc_put(&b, " |\n");
    }
    doc_put(&b, "\nTensors a load leaves unread (any other unread tensor is refused):\n\n"
                "| tensor name starts with | why |\n|---|---|\n");
    for (int i = 0; i < aha_n_ignored_tensors; i++) {
        doc_put(&b, "| `"), doc_put(&b, aha_ignored_tensors[i].prefix), doc_put(&b, "` | ");
        put_cell(&b, aha_ignored_tensors[i].why), doc_put(&b, " |\n");
    }
    doc_put(&b, END);
    if (b.failed) {
        aha_buf_free(&b);
        return NULL;
    }
    return b.p;
}

int main(int argc, char **argv) {
    return doc_page_main(argc, argv, "docs/runtime.md", BEGIN, END, render, "the loaders' tables");
}
