#include "tokenizer_gguf_keys.h"

#include <inttypes.h>
#include <string.h>

#include "err.h"
#include "tokenizer_impl.h"

const aha_gguf_kv *aha_tok_gguf_array(const aha_gguf *g, const char *key, uint32_t type) {
    const aha_gguf_kv *kv = aha_gguf_get(g, key);
    if (!kv || kv->type != GGUF_ARRAY || kv->v.arr.type != type) {
        aha_err("%s %s", key, kv ? "has the wrong type" : "missing");
        return NULL;
    }
    return kv;
}

int aha_tok_gguf_merges(aha_tokenizer *t, const aha_gguf_kv *merges) {
    for (uint64_t i = 0; i < merges->v.arr.n; i++) {
        const aha_gguf_str *m = &merges->v.arr.strs[i];
        const char *sp = memchr(m->s, ' ', m->len);
        if (!sp || memchr(sp + 1, ' ', m->len - (size_t)(sp - m->s) - 1)) {
            aha_err("merge %" PRIu64 " is not \"a b\"", i + 1);
            return -1;
        }
        if (aha_tok_add_merge(t, m->s, (size_t)(sp - m->s), sp + 1, m->len - (size_t)(sp - m->s) - 1))
            return -1;
    }
    return 0;
}

int64_t aha_tok_gguf_id(const aha_gguf *g, const char *key, int n_vocab) {
    uint64_t v;
    int rc = aha_gguf_get_u64(g, key, &v);
    if (rc == 1) return -1;
    if (rc == 0 && v < (uint64_t)n_vocab) return (int64_t)v;
    if (rc == 0) aha_err("%s = %" PRIu64 " is not a token id (vocab %d)", key, v, n_vocab);
    return -2;
}

const aha_tok_key_info aha_tok_gguf_info[] = {
    {"tokenizer.chat_template", "chat formatting: aha tokenizes the text as given", 0},
    {"tokenizer.chat_template.", "chat formatting: aha tokenizes the text as given", 0},
    {"tokenizer.chat_templates", "chat formatting: aha tokenizes the text as given", 0},
    {"tokenizer.ggml.padding_token_id", "aha never pads", 0},
    {"tokenizer.ggml.eot_token_id", "the end of a chat turn: aha generate stops at eos", 0},
    {"tokenizer.ggml.eom_token_id", "the end of a chat message: aha generate stops at eos", 0},
    {"tokenizer.ggml.fim_", "fill-in-the-middle prompts: aha builds none", 0},
    {"tokenizer.ggml.prefix_token_id", "fill-in-the-middle prompts: aha builds none", 0},
    {"tokenizer.ggml.suffix_token_id", "fill-in-the-middle prompts: aha builds none", 0},
    {"tokenizer.ggml.middle_token_id", "fill-in-the-middle prompts: aha builds none", 0},
    {"tokenizer.ggml.seperator_token_id", "a separator that is never inserted (add_sep_token is false)", 0},
    {"tokenizer.ggml.mask_token_id", "a masked-language-model marker: never inserted", 0},
    {"tokenizer.huggingface.json", "a copy of tokenizer.json, which llama.cpp does not read either", 0},
    {"tokenizer.ggml.unknown_token_id", "byte-level BPE covers every byte", 1},
    {"tokenizer.ggml.add_space_prefix", "llama.cpp prefixes a space for SentencePiece only", 1},
    {"tokenizer.ggml.pre", "SentencePiece has no pre-tokenizer: llama.cpp ignores the key", 2},
};
const int aha_n_tok_gguf_info = sizeof aha_tok_gguf_info / sizeof *aha_tok_gguf_info;

static int info_key(const char *key, const void *ctx) {
    const int byte_level = *(const int *)ctx;
    for (int i = 0; i < aha_n_tok_gguf_info; i++) {
        const aha_tok_key_info *r = &aha_tok_gguf_info[i];
        size_t n = strlen(r->key);
        int prefix = r->key[n - 1] == '.' || r->key[n - 1] == '_';
        if ((prefix ? !strncmp(key, r->key, n) : !strcmp(key, r->key)) && (!r->only || r->only == 2 - byte_level))
            return 1;
    }
    return 0;
}

int aha_tok_gguf_check_keys(const aha_gguf *g, int byte_level) {
    static const char *const off[] = {"tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_sep_token",
                                      "tokenizer.ggml.remove_extra_whitespaces"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        uint64_t on = 0;
        if (aha_gguf_get_u64(g, off[i], &on) < 0) return -1;
        if (on) {
            aha_err("%s is true: not implemented", off[i]);
            return -1;
        }
    }
    const char *key = aha_gguf_unread(g, "tokenizer.", info_key, &byte_level);
    if (key) aha_err("key '%s' is not implemented: refused rather than ignored", key);
    return key ? -1 : 0;
}
