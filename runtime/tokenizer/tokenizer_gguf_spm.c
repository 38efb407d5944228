// SentencePiece-style BPE from GGUF metadata (tokenizer.ggml.model "llama":
// Llama-2, Gemma), read as transformers reads it (its GGUF tokenizer
// conversion is the reference): every token in the BPE vocab as spelled
// (spaces as U+2581), byte fallback to the <0xNN> tokens, control tokens as
// special added tokens and user-defined ones as plain added tokens, both
// matched in the raw text. A file without merges gets them the way
// transformers' generate_merges derives them: every split of a token into two
// tokens is a merge, best first by the merged token's score. That is
// llama.cpp's rule (merge the adjacent pair whose join is the best-scored
// token) spelled as BPE ranks, with transformers' tie-breaks.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "buf.h"
#include "err.h"
#include "tokenizer_gguf_keys.h"
#include "tokenizer_gguf_spm.h"
#include "tokenizer_impl.h"

// llama.cpp's token types (tokenizer.ggml.token_type).
enum { TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4, TYPE_BYTE = 6 };

typedef struct {
    double score;      // the merged token's score (higher merges first)
    uint32_t llen;     // left piece in chars (longer first on equal scores)
    uint32_t rlen;     // right piece in chars
    uint32_t seq;      // order generated: by merged id, then (left id, right id)
    int32_t a, b, ab;  // left, right, merged ids
} spm_merge;

static int merge_cmp(const void *pa, const void *pb) {
    const spm_merge *x = pa, *y = pb;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->llen != y->llen) return x->llen > y->llen ? -1 : 1;
    if (x->rlen != y->rlen) return x->rlen > y->rlen ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int pair_cmp(const void *pa, const void *pb) {
    const spm_merge *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    return (x->b > y->b) - (x->b < y->b);
}

static uint32_t n_chars(const char *s, size_t len) {
    uint32_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((uint8_t)s[i] & 0xC0) != 0x80;
    return n;
}

// score(id) of the token a merge makes: the file's scores, or (Gemma) minus
// its position, since Gemma's scores do not follow its merge order.
static double merge_score(const float *scores, int32_t id) {
    if (!scores) return -(double)id;
    float f;
    memcpy(&f, scores + id, sizeof f);
    return f;
}

// transformers' generate_merges over the vocab, added as ranked merges.
static int derive_merges(aha_tokenizer *t, const float *scores) {
    size_t cap = 1024, n = 0;
    spm_merge *m = aha_malloc(cap, sizeof *m, "merges");
    if (!m) return -1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const tok_entry *e = &t->tok[id];
        const char *s = t->bytes + e->off;
        size_t first = n;
        for (uint32_t i = 1; i < e->len; i++) {
            if (((uint8_t)s[i] & 0xC0) == 0x80) continue; // split between chars only
            int32_t a = aha_strmap_get(&t->vocab, s, i), b = aha_strmap_get(&t->vocab, s + i, e->len - i);
            if (a < 0 || b < 0) continue;
            if (aha_grow(&m, &cap, n + 1, sizeof *m, "merges") != 0) {
                free(m);
                return -1;
            }
            m[n++] = (spm_merge){merge_score(scores, id), n_chars(s, i), n_chars(s + i, e->len - i), 0, a, b, id};
        }
        qsort(m + first, n - first, sizeof *m, pair_cmp);
        for (size_t k = first; k < n; k++) m[k].seq = (uint32_t)k;
    }
    qsort(m, n, sizeof *m, merge_cmp);
    int rc = aha_tok_reserve_merges(t, n);
    for (size_t k = 0; rc == 0 && k < n; k++) rc = aha_tok_add_merge_ids(t, m[k].a, m[k].b, m[k].ab);
    free(m);
    return rc;
}

// Python's str.isspace for one char (what transformers tests a token with).
static int py_space(utf8proc_int32_t c) {
    utf8proc_category_t cat = utf8proc_category(c);
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || cat == UTF8PROC_CATEGORY_ZS ||
           cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

// Gemma files store a token of spaces as real spaces; transformers respells a
// whitespace-only token holding a space as that many U+2581. Returns its
// length in chars, 0 when s is not such a token.
static size_t gemma_respell(const char *s, size_t len) {
    size_t n = 0;
    int space = 0;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0 || !py_space(c)) return 0;
        space |= c == ' ';
        i += (size_t)k, n++;
    }
    return space ? n : 0;
}

static int arch_is(const aha_gguf_str *arch, const char *name) {
    return arch->len == strlen(name) && memcmp(arch->s, name, arch->len) == 0;
}

int aha_tok_gguf_spm(aha_tokenizer **out, const aha_gguf *g) {
    aha_gguf_str arch = {"llama", 5};
    if (aha_gguf_get_str(g, "general.architecture", &arch) < 0) return -1;
    // transformers' builders by architecture: Gemma 1-3 (file order, respelled
    // spaces), Gemma (Replace(' ') normalizer, no prefix), Phi-3 (Prepend +
    // Replace normalizer), else Llama (Metaspace, prefix on the first piece).
    const int gemma_order = arch_is(&arch, "gemma") || arch_is(&arch, "gemma2") || arch_is(&arch, "gemma3");
    const int gemma = gemma_order || arch_is(&arch, "gemma4"), phi3 = arch_is(&arch, "phi3");

    const aha_gguf_kv *tokens = aha_tok_gguf_array(g, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!tokens) return -1;
    uint64_t n = tokens->v.arr.n;
    const aha_gguf_kv *types = aha_gguf_get(g, "tokenizer.ggml.token_type");
    if (types && (types->type != GGUF_ARRAY || types->v.arr.type != GGUF_INT32 || types->v.arr.n != n)) {
        aha_err("tokenizer.ggml.token_type is not an int32 array as long as the tokens");
        return -1;
    }
    const aha_gguf_kv *merges = aha_gguf_get(g, "tokenizer.ggml.merges");
    if (merges && (merges->type != GGUF_ARRAY || merges->v.arr.type != GGUF_STRING)) {
        aha_err("tokenizer.ggml.merges is not a string array");
        return -1;
    }
    const aha_gguf_kv *scores = NULL;
    if (merges || gemma_order) { // the merges are given, or in the file's order (transformers' Gemma):
        (void)aha_gguf_get(g, "tokenizer.ggml.scores"); // the scores change no id, read and left
    } else { // the merges come from the scores
        if (!(scores = aha_tok_gguf_array(g, "tokenizer.ggml.scores", GGUF_FLOAT32))) return -1;
        if (scores->v.arr.n != n) {
            aha_err("tokenizer.ggml.scores has %" PRIu64 " entries for %" PRIu64 " tokens", scores->v.arr.n, n);
            return -1;
        }
    }
    if (n > INT32_MAX) {
        aha_err("too many tokens (%" PRIu64 ")", n);
        return -1;
    }
    size_t bytes = 0;
    for (uint64_t i = 0; i < n; i++) {
        const aha_gguf_str *s = &tokens->v.arr.strs[i];
        size_t r = gemma_order ? gemma_respell(s->s, s->len) : 0;
        bytes += r ? 3 * r : s->len;
    }
    aha_tokenizer *t = *out = aha_tok_new((int)n, bytes);
    if (!t) return -1;
    t->spm = t->byte_fallback = 1;
    char *spelled = aha_malloc(bytes + 1, 1, "tokens");
    if (!spelled) return -1;
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        const aha_gguf_str *s = &tokens->v.arr.strs[i];
        size_t r = gemma_order ? gemma_respell(s->s, s->len) : 0;
        for (size_t k = 0; k < r; k++) memcpy(spelled + 3 * k, "\xe2\x96\x81", 3);
        rc = aha_tok_set(t, (int64_t)i, r ? spelled : s->s, r ? 3 * r : s->len, 1);
        int32_t type = 1;
        if (types) memcpy(&type, types->v.arr.data + 4 * i, 4);
        if (rc == 0 && type == TYPE_BYTE && aha_tok_byte_spelling(s->s, s->len) < 0) {
            aha_err("token %" PRIu64 " '%.*s' has the byte type but is not <0xNN>", i, SHOW(s->s, s->len));
            rc = -1;
        }
        // Added tokens match in the raw text; a respelled one is not in the
        // vocab under its own spelling, so transformers does not add it.
        if (rc == 0 && (type == TYPE_CONTROL || (type == TYPE_USER_DEFINED && !r)))
            rc = aha_tok_add_added(t, (int32_t)i, s->s, s->len, 0, 0, 0);
    }
    free(spelled);
    if (rc != 0 || aha_tok_index(t, merges ? merges->v.arr.n : 0) != 0) return -1;
    if (merges ? aha_tok_gguf_merges(t, merges) != 0
               : derive_merges(t, scores ? (const float *)scores->v.arr.data : NULL) != 0)
        return -1;

    uint64_t prefix = 1, add_bos = 1; // llama.cpp's and transformers' defaults
    int64_t bos = aha_tok_gguf_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab);
    int64_t eos = aha_tok_gguf_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab);
    int64_t unk = aha_tok_gguf_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab);
    if (bos < -1 || eos < -1 || unk < -1 || aha_gguf_get_u64(g, "tokenizer.ggml.add_bos_token", &add_bos) < 0 ||
        aha_gguf_get_u64(g, "tokenizer.ggml.add_space_prefix", &prefix) < 0)
        return -1;
    t->bos = (int32_t)bos;
    t->eos = (int32_t)eos;
    t->unk = (int32_t)unk;
    t->fuse_unk = 1;
    t->add_bos = add_bos && bos >= 0;
    if (gemma && prefix && aha_gguf_get(g, "tokenizer.ggml.add_space_prefix")) {
        aha_err("tokenizer.ggml.add_space_prefix is true: not implemented for gemma's vocabulary");
        return -1;
    }
    if (gemma) {
        t->replace_space = 1;
    } else if (phi3) {
        t->replace_space = t->prepend = 1;
    } else if (aha_pretok_add_metaspace(&t->pre, prefix ? AHA_PREPEND_FIRST : AHA_PREPEND_NEVER, 0) != 0) {
        return -1;
    }
    t->decoder = (tok_decoder){1, 1, !gemma && (prefix || phi3)};
    snprintf(t->kind, sizeof t->kind, "spm/%.20s (%d tokens)", aha_tok_escape(arch.s, arch.len < 20 ? arch.len : 20,
             (char[AHA_TOK_SHOW_CAP]){0}), t->n_vocab);
    return aha_tok_decoder(t);
}
