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

// The types a row is read for: "all", or their names ("all" covers every
// type but the last when last_apart, the multimodal wrapper).
static void put_types(aha_buf *b, unsigned types, const char *const *names, int n, int last_apart) {
    const unsigned all = (1u << (n - last_apart)) - 1;
    int k = 0;
    if ((types & all) == all) doc_put(b, "all"), k++, types &= ~all;
    for (int i = 0; i < n; i++)
        if (types & (1u << i)) doc_put(b, k++ ? ", " : ""), doc_put(b, names[i]), doc_put(b, i == n - 1 && last_apart ? " (outer)" : "");
}

static void put_rows(aha_buf *b, const char *head, const cfg_row *rows, int n_rows, const char *const *names,
                     int n_names, int last_apart) {
    doc_put(b, head);
    for (int i = 0; i < n_rows; i++) {
        const cfg_row *r = &rows[i];
        doc_put(b, "| `"), doc_put(b, r->name), doc_put(b, "` | ");
        put_types(b, r->types, names, n_names, last_apart);
        doc_put(b, " | ");
        if (r->kind == ROW_ONLY) doc_put(b, "only `"), put_cell(b, r->only), doc_put(b, "`: ");
        if (r->kind == ROW_INFO) doc_put(b, "not read: ");
        put_cell(b, r->doc);
        if (r->required) doc_put(b, " (required)");
        doc_put(b, " |\n");
    }
}

static char *render(void) {
    aha_buf b = {0};
    doc_put(&b, BEGIN);
    put_rows(&b, "\nconfig.json fields (in a multimodal `gemma3` config, the outer object's; the rest are "
                 "its `text_config`'s):\n\n| field | model types | what aha does with it |\n|---|---|---|\n",
             aha_json_rows, aha_n_json_rows, aha_json_types, 9, 1);
    put_rows(&b, "\nGGUF keys (`{arch}.` before each name but the `general.`, `split.` and `quantize.` "
                 "ones; the tokenizer's are below):\n\n| key | architectures | what aha does with it |\n|---|---|---|\n",
             aha_gguf_rows, aha_n_gguf_rows, aha_gguf_archs, 6, 0);
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
