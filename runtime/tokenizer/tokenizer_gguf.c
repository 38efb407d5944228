// Tokenizer from GGUF metadata (llama.cpp's tokenizer.ggml.* keys): byte-level
// BPE (model gpt2) here, SentencePiece-style BPE (model llama) in
// tokenizer_gguf_spm.c. GGUF names its pre-tokenizer rather than describing
// it, so each name known here maps to what that family's tokenizer.json does.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "tokenizer_gguf_keys.h"
#include "tokenizer_gguf_spm.h"
#include "tokenizer_impl.h"

// The token types llama.cpp writes that make added tokens.
enum { GGUF_TOKEN_CONTROL = 3, GGUF_TOKEN_USER_DEFINED = 4 };

static const struct gguf_pre {
    const char *name;  // tokenizer.ggml.pre
    const char *split; // Split(split, Isolated) + ByteLevel(use_regex=false); NULL: ByteLevel's regex
    int digits;        // Digits(individual_digits=true) first
    int nfc;           // NFC normalizer (Qwen2's tokenizer.json has one; llama.cpp skips it)
    int ignore_merges; // whole-token pieces skip BPE
    int add_bos;       // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
} gguf_pres[] = {
    {"gpt-2", NULL, 0, 0, 0, 0},
    {"olmo", NULL, 0, 0, 0, 0}, // OLMo-1 (GPT-NeoX's tokenizer)
    {"smollm", NULL, 1, 0, 0, 0},
    {"starcoder", NULL, 1, 0, 0, 0},
    {"llama-bpe", aha_re_llama3, 0, 0, 1, 1},
    {"llama3", aha_re_llama3, 0, 0, 1, 1},
    {"llama-v3", aha_re_llama3, 0, 0, 1, 1},
    {"dbrx", aha_re_llama3, 0, 0, 0, 0}, // cl100k's regex (OLMo-2's tokenizer.json has it too)
    {"smaug-bpe", aha_re_llama3, 0, 0, 0, 0},
    {"qwen2", aha_re_qwen2, 0, 1, 0, 0},
    {"deepseek-r1-qwen", aha_re_qwen2, 0, 1, 0, 0},
};

static int gguf_build(aha_tokenizer **out, const aha_gguf *g) {
    aha_gguf_str model, pre;
    int rc = aha_gguf_get_str(g, "tokenizer.ggml.model", &model);
    // SentencePiece files need no pre-tokenizer name (older ones have none)
    if (rc == 0 && model.len == 5 && memcmp(model.s, "llama", 5) == 0) return aha_tok_gguf_spm(out, g);
    if (rc == 0) rc = aha_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (rc == 1) aha_err("no tokenizer.ggml.model or tokenizer.ggml.pre");
    if (rc != 0) return -1;
    if (model.len != 4 || memcmp(model.s, "gpt2", 4) != 0) {
        aha_err("tokenizer.ggml.model is '%.*s': only 'gpt2' (byte-level BPE) and 'llama' "
                "(SentencePiece-style BPE) are supported",
                SHOW(model.s, model.len));
        return -1;
    }
    const struct gguf_pre *p = NULL;
    for (size_t i = 0; i < sizeof gguf_pres / sizeof *gguf_pres; i++)
        if (strlen(gguf_pres[i].name) == pre.len && memcmp(gguf_pres[i].name, pre.s, pre.len) == 0)
            p = &gguf_pres[i];
    if (!p) {
        aha_err("tokenizer.ggml.pre '%.*s' unknown (known: gpt-2, olmo, smollm, starcoder, llama-bpe, "
                "llama3, dbrx, smaug-bpe, qwen2, deepseek-r1-qwen)",
                SHOW(pre.s, pre.len));
        return -1;
    }

    const aha_gguf_kv *tokens = aha_tok_gguf_array(g, "tokenizer.ggml.tokens", GGUF_STRING);
    const aha_gguf_kv *merges = aha_tok_gguf_array(g, "tokenizer.ggml.merges", GGUF_STRING);
    if (!tokens || !merges) return -1;
    const aha_gguf_kv *types = aha_gguf_get(g, "tokenizer.ggml.token_type");
    if (types && (types->type != GGUF_ARRAY || types->v.arr.type != GGUF_INT32 ||
                  types->v.arr.n != tokens->v.arr.n)) {
        aha_err("tokenizer.ggml.token_type is not an int32 array as long as the tokens");
        return -1;
    }
    uint64_t n = tokens->v.arr.n;
    size_t bytes = 0;
    for (uint64_t i = 0; i < n; i++) bytes += tokens->v.arr.strs[i].len;
    if (n > INT32_MAX) {
        aha_err("too many tokens (%" PRIu64 ")", n);
        return -1;
    }
    aha_tokenizer *t = *out = aha_tok_new((int)n, bytes);
    if (!t) return -1;
    for (uint64_t i = 0; i < n; i++) {
        const aha_gguf_str *s = &tokens->v.arr.strs[i];
        if (aha_tok_set(t, (int64_t)i, s->s, s->len, 1) != 0) return -1;
    }
    // As transformers reads a GGUF: control tokens spelled in the byte
    // alphabet are special added tokens, user-defined ones plain added tokens;
    // neither is normalized.
    for (uint64_t i = 0; types && i < n; i++) {
        int32_t type;
        memcpy(&type, types->v.arr.data + 4 * i, 4);
        const aha_gguf_str *s = &tokens->v.arr.strs[i];
        if (((type == GGUF_TOKEN_CONTROL && t->tok[i].spelled) || type == GGUF_TOKEN_USER_DEFINED) &&
            aha_tok_add_added(t, (int32_t)i, s->s, s->len, 0, 0, 0) != 0)
            return -1;
    }
    if (aha_tok_index(t, merges->v.arr.n) != 0 || aha_tok_gguf_merges(t, merges) != 0) return -1;

    t->nfc = p->nfc;
    t->ignore_merges = p->ignore_merges;
    if ((p->digits && aha_pretok_add_digits(&t->pre, 1) != 0) ||
        (p->split && aha_pretok_add_split(&t->pre, p->split, strlen(p->split), 0,
                                          AHA_SPLIT_ISOLATED, 0) != 0) ||
        aha_pretok_add_byte_level(&t->pre, 0, !p->split) != 0)
        return -1;
    int64_t bos = aha_tok_gguf_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab);
    int64_t eos = aha_tok_gguf_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab);
    uint64_t add_bos = (uint64_t)p->add_bos;
    if (bos < -1 || eos < -1 || aha_gguf_get_u64(g, "tokenizer.ggml.add_bos_token", &add_bos) < 0)
        return -1;
    t->bos = (int32_t)bos;
    t->eos = (int32_t)eos;
    t->add_bos = add_bos && bos >= 0;
    snprintf(t->kind, sizeof t->kind, "bpe/%s (%d tokens)", p->name, t->n_vocab);
    return 0;
}

int aha_tok_load_gguf(aha_tokenizer **out, const aha_gguf *g) {
    aha_tokenizer *t = NULL;
    aha_gguf_str model = {"", 0};
    *out = NULL;
    aha_gguf_get_str(g, "tokenizer.ggml.model", &model); // gguf_build checked it
    if (gguf_build(&t, g) != 0 || aha_tok_gguf_check_keys(g, model.len == 4 && !memcmp(model.s, "gpt2", 4)) != 0) {
        aha_err_prefix(g->path);
        aha_tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
