// BPE as Hugging Face tokenizers runs it: added tokens are cut out first, the
// rest is normalized, pre-tokenized and merged by rank. Byte-level BPE works
// on raw bytes (the GPT-2 byte alphabet only matters when reading a vocab);
// SentencePiece-style BPE on UTF-8 chars, with byte fallback.
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "buf.h"
#include "err.h"
#include "utf8.h"

const char *aha_tok_escape(const char *s, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n && i < 40; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '\n') memcpy(out + k, "\\n", 2), k += 2;
        else if (c < 0x20 || c == 0x7f) k += (size_t)snprintf(out + k, 5, "\\x%02x", c);
        else out[k++] = (char)c;
    }
    out[k] = 0;
    return out;
}

// GPT-2's bytes_to_unicode, reversed: printable bytes spell themselves; the 68
// others (0x00-0x20, 0x7F-0xA0, 0xAD) are U+0100.. in byte order. -1 when c is
// not in the alphabet.
static int alphabet_byte(int32_t c) {
    if (c < 0x100) return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE ? c : -1;
    c -= 0x100;
    return c <= 0x20 ? c : c <= 0x42 ? 0x7F + (c - 0x21) : c == 0x43 ? 0xAD : -1;
}

// A token's bytes as the ByteLevel decoder gives them: each char of the byte
// alphabet is one byte; a token with any other char (or invalid UTF-8) stands
// for its own text. out has room for len bytes; returns the length written.
static size_t spelled_decode(const char *s, size_t len, char *out, int *spelled) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)(len - i), &c);
        int b = k > 0 ? alphabet_byte(c) : -1;
        if (b < 0) {
            memcpy(out, s, len);
            *spelled = 0;
            return len;
        }
        out[n++] = (char)b;
        i += (size_t)k;
    }
    *spelled = 1;
    return n;
}

// ---- building ----

aha_tokenizer *aha_tok_new(int n_slots, size_t cap) {
    if (n_slots < 0 || cap > UINT32_MAX) {
        aha_err("vocab too large (%d tokens, %zu bytes)", n_slots, cap);
        return NULL;
    }
    aha_tokenizer *t = aha_calloc(1, sizeof *t, "tokenizer");
    if (!t) return NULL;
    t->tok = aha_calloc((size_t)n_slots, sizeof *t->tok, "tokenizer vocab");
    t->bytes = aha_malloc(cap, 1, "tokenizer vocab");
    t->n_slots = n_slots;
    t->cap = cap;
    t->unk = t->bos = t->eos = -1;
    if (!t->tok || !t->bytes) {
        aha_tok_free(t);
        return NULL;
    }
    return t;
}

int aha_tok_set(aha_tokenizer *t, int64_t id, const char *s, size_t len, int model) {
    if (id < 0 || id >= t->n_slots) {
        aha_err("token '%.*s' has id %lld, out of range 0..%d", SHOW(s, len), (long long)id,
                t->n_slots - 1);
        return -1;
    }
    if (len > t->cap - t->n_bytes) {
        aha_err("token '%.*s': more token bytes than reserved", SHOW(s, len));
        return -1;
    }
    tok_entry *e = &t->tok[id];
    char *out = t->bytes + t->n_bytes;
    int spelled = 0;
    size_t n = len;
    // A model token is spelled in the byte alphabet; an added token's bytes
    // are its text. A second spelling of an id is read like the first.
    if (!t->spm && (e->set ? e->model : model))
        n = spelled_decode(s, len, out, &spelled);
    else
        memcpy(out, s, len), spelled = t->spm;
    if (e->set) {
        if (e->len != n || memcmp(t->bytes + e->off, out, n) != 0) {
            aha_err("id %lld is both '%.*s' and '%.*s'", (long long)id,
                    SHOW(t->bytes + e->off, e->len), SHOW(s, len));
            return -1;
        }
        return 0;
    }
    *e = (tok_entry){.off = (uint32_t)t->n_bytes, .len = (uint32_t)n, .set = 1, .model = (uint8_t)(model != 0),
                     .spelled = (uint8_t)spelled};
    t->n_bytes += n;
    return 0;
}

int aha_tok_add_added(aha_tokenizer *t, int32_t id, const char *text, size_t len,
                      int normalized, int lstrip, int rstrip) {
    if (!len || len > UINT32_MAX || aha_utf8_valid_prefix(text, len, 1) < len) {
        aha_err("added token %d: content is empty, too long or not UTF-8", (int)id);
        return -1;
    }
    char *copy = malloc(len);
    if (!copy || aha_grow(&t->added, &t->cap_added, (size_t)t->n_added + 1, sizeof *t->added, "added tokens") != 0) {
        free(copy);
        aha_err("added token %d: out of memory", (int)id);
        return -1;
    }
    memcpy(copy, text, len);
    t->added[t->n_added++] = (tok_added){copy, (uint32_t)len, id, (uint8_t)(normalized != 0),
                                         (uint8_t)(lstrip != 0), (uint8_t)(rstrip != 0)};
    return 0;
}

// Added tokens grouped by (normalized, first byte), longest first, so the
// first one that matches at a position is tokenizers' leftmost-longest match.
static int added_cmp(const void *pa, const void *pb) {
    const tok_added *a = pa, *b = pb;
    if (a->normalized != b->normalized) return a->normalized - b->normalized;
    if (a->text[0] != b->text[0]) return (uint8_t)a->text[0] - (uint8_t)b->text[0];
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return memcmp(a->text, b->text, a->len);
}

int aha_tok_index(aha_tokenizer *t, size_t n_merges) {
    int n = t->n_slots;
    while (n > 0 && !t->tok[n - 1].set) n--;
    if (!n) {
        aha_err("empty vocab");
        return -1;
    }
    for (int id = 0; id < n; id++) {
        if (!t->tok[id].set) {
            aha_err("no token has id %d (ids must run 0..%d without gaps)", id, n - 1);
            return -1;
        }
    }
    t->n_vocab = n;
    if (aha_strmap_init(&t->vocab, (size_t)n) != 0) return -1;
    for (int id = 0; id < n; id++) {
        const tok_entry *e = &t->tok[id];
        if (!e->model || !e->spelled) continue;
        const char *p = t->bytes + e->off;
        int32_t other = aha_strmap_get(&t->vocab, p, e->len);
        if (other >= 0) {
            aha_err("tokens %d and %d are the same: '%.*s'", (int)other, id, SHOW(p, e->len));
            return -1;
        }
        if (aha_strmap_put(&t->vocab, p, e->len, id) != 0) return -1;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b, code[8];
        t->byte_id[b] = t->spm ? -1 : aha_strmap_get(&t->vocab, &c, 1);
        snprintf(code, sizeof code, "<0x%02X>", b); // tokenizers' format!("<{b:#04X}>")
        t->byte_tok[b] = t->spm ? aha_strmap_get(&t->vocab, code, 6) : -1;
    }

    if (t->n_added) qsort(t->added, (size_t)t->n_added, sizeof *t->added, added_cmp);
    for (int i = 1; i < t->n_added; i++) {
        const tok_added *a = &t->added[i - 1], *b = &t->added[i];
        if (!added_cmp(a, b) && a->id != b->id) {
            aha_err("added token '%.*s' has two ids, %d and %d", SHOW(a->text, a->len), (int)a->id,
                    (int)b->id);
            return -1;
        }
    }
    int i = 0;
    for (int k = 0; k < 2; k++) {
        for (int c = 0; c <= 256; c++) {
            while (i < t->n_added && (t->added[i].normalized < k ||
                                      (t->added[i].normalized == k && (uint8_t)t->added[i].text[0] < c)))
                i++;
            t->added_at[k][c] = (uint32_t)i;
        }
    }

    return aha_tok_reserve_merges(t, n_merges);
}

int aha_tok_reserve_merges(aha_tokenizer *t, size_t n_merges) {
    if (n_merges > INT32_MAX) {
        aha_err("too many merges (%zu)", n_merges);
        return -1;
    }
    free(t->merge_pair);
    free(t->merge_id);
    aha_strmap_free(&t->merges);
    t->n_merges = t->merge_cap = 0;
    t->merge_pair = aha_malloc(n_merges + 1, sizeof *t->merge_pair, "merges");
    t->merge_id = aha_malloc(n_merges + 1, sizeof *t->merge_id, "merges");
    if (!t->merge_pair || !t->merge_id || aha_strmap_init(&t->merges, n_merges) != 0) return -1;
    t->merge_cap = (int)n_merges;
    return 0;
}

// A vocab spelling as the vocab map keys it: byte-level: its bytes; spm: itself.
static size_t vocab_key(const aha_tokenizer *t, const char *s, size_t len, char *out, int *ok) {
    if (!t->spm) return spelled_decode(s, len, out, ok);
    memcpy(out, s, len);
    *ok = 1;
    return len;
}

int aha_tok_add_merge(aha_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen) {
    char stack[256], *buf = alen + blen <= sizeof stack ? stack : aha_malloc(alen + blen, 1, "merge");
    if (!buf) return -1;
    int sa, sb, r = t->n_merges;
    size_t na = vocab_key(t, a, alen, buf, &sa);
    size_t nb = vocab_key(t, b, blen, buf + na, &sb);
    int32_t ia = sa ? aha_strmap_get(&t->vocab, buf, na) : -1;
    int32_t ib = sb ? aha_strmap_get(&t->vocab, buf + na, nb) : -1;
    int32_t ij = aha_strmap_get(&t->vocab, buf, na + nb);
    if (buf != stack) free(buf);
    if (ia < 0 || ib < 0) {
        const char *u = ia < 0 ? a : b;
        size_t ulen = ia < 0 ? alen : blen;
        aha_err("merge %d '%.*s %.*s' names unknown token '%.*s'", r + 1, SHOW(a, alen), SHOW(b, blen),
                SHOW(u, ulen));
        return -1;
    }
    if (ij < 0) {
        aha_err("merge %d '%.*s %.*s' makes a token not in the vocab", r + 1, SHOW(a, alen),
                SHOW(b, blen));
        return -1;
    }
    return aha_tok_add_merge_ids(t, ia, ib, ij);
}

int aha_tok_add_merge_ids(aha_tokenizer *t, int32_t a, int32_t b, int32_t ab) {
    int r = t->n_merges;
    if (r == t->merge_cap) {
        aha_err("more merges than reserved");
        return -1;
    }
    t->merge_pair[r][0] = a;
    t->merge_pair[r][1] = b;
    t->merge_id[r] = ab;
    t->n_merges++;
    // A repeated pair takes its last rank, as in tokenizers' merge map.
    return aha_strmap_put(&t->merges, (const char *)t->merge_pair[r], sizeof t->merge_pair[r], r);
}

int32_t aha_tok_find(const aha_tokenizer *t, const char *s) {
    size_t len = strlen(s);
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].len == len && memcmp(t->added[i].text, s, len) == 0) return t->added[i].id;
    char *buf = malloc(len + 1);
    if (!buf) return -1;
    int spelled;
    size_t n = vocab_key(t, s, len, buf, &spelled);
    int32_t id = spelled ? aha_strmap_get(&t->vocab, buf, n) : -1;
    free(buf);
    return id;
}

void aha_tok_free(aha_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->n_added; i++) free(t->added[i].text);
    free(t->added);
    free(t->tok);
    free(t->bytes);
    free(t->dec);
    free(t->merge_pair);
    free(t->merge_id);
    aha_strmap_free(&t->vocab);
    aha_strmap_free(&t->merges);
    aha_pretok_free(&t->pre);
    free(t);
}

// ---- encoding ----

typedef struct {
    int32_t id;         // -1: merged into its left neighbour
    int32_t prev, next; // neighbours still alive; -1 at the ends
} bpe_sym;

typedef struct {
    const aha_tokenizer *t;
    pcre2_match_data *md;
    int32_t *ids;   // [cap] the output
    size_t n, cap;
    bpe_sym *sym;   // [sym_cap] the current piece's symbols
    uint64_t *heap; // [3 * sym_cap] candidate merges, rank << 32 | position
    size_t sym_cap;
    int at0;        // the text being cut starts the input (Metaspace prepend_scheme first)
} enc;

static int enc_push(enc *e, int32_t id) {
    if (e->n == e->cap && aha_grow(&e->ids, &e->cap, e->n + 1, sizeof *e->ids, "encode") != 0) return -1;
    e->ids[e->n++] = id;
    return 0;
}

static int32_t pair_rank(const aha_tokenizer *t, int32_t a, int32_t b) {
    int32_t k[2] = {a, b};
    return aha_strmap_get(&t->merges, (const char *)k, sizeof k);
}

// Min-heap on (rank, position): the lowest rank merges first, the leftmost
// of equal ranks first.
static void heap_push(uint64_t *h, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (size_t c; (c = 2 * i + 1) < *n; i = c) {
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
    }
    h[i] = v;
    return top;
}

static void enc_merge_candidate(const aha_tokenizer *t, uint64_t *h, size_t *n, const bpe_sym *sym,
                                int32_t pos) {
    int32_t r = pair_rank(t, sym[pos].id, sym[sym[pos].next].id);
    if (r >= 0) heap_push(h, n, (uint64_t)r << 32 | (uint32_t)pos);
}

static void sym_add(bpe_sym *sym, int32_t *m, int32_t id) {
    sym[*m] = (bpe_sym){id, *m - 1, *m + 1};
    (*m)++;
}

// An spm piece's first symbols, as tokenizers' BPE::merge_word makes them:
// each char its token, else its <0xNN> tokens (byte_fallback, all present),
// else unk. A pending unk is only written before the next char found in the
// vocab (or at the end), so byte-fallback tokens can come before it, as in
// tokenizers. sym has room for n.
static int32_t spm_symbols(const aha_tokenizer *t, const char *s, size_t n, bpe_sym *sym) {
    int32_t m = 0;
    int unk = 0; // an unk is pending
    for (size_t i = 0, k; i < n; i += k) {
        k = 1;
        while (i + k < n && ((uint8_t)s[i + k] & 0xC0) == 0x80) k++;
        int32_t id = aha_strmap_get(&t->vocab, s + i, k);
        if (id >= 0) {
            if (unk) sym_add(sym, &m, t->unk), unk = 0;
            sym_add(sym, &m, id);
            continue;
        }
        size_t b = 0;
        while (t->byte_fallback && b < k && t->byte_tok[(uint8_t)s[i + b]] >= 0) b++;
        if (t->byte_fallback && b == k) {
            for (b = 0; b < k; b++) sym_add(sym, &m, t->byte_tok[(uint8_t)s[i + b]]);
            continue;
        }
        if (t->unk < 0) continue; // no unk token: the char vanishes
        if (unk && !t->fuse_unk) sym_add(sym, &m, t->unk);
        unk = 1;
    }
    if (unk) sym_add(sym, &m, t->unk);
    return m;
}

// One pre-token through the BPE model (tokenizers' Word::merge_all).
static int enc_bpe(void *ctx, const char *s, size_t n) {
    enc *e = ctx;
    const aha_tokenizer *t = e->t;
    if (t->ignore_merges) {
        int32_t id = aha_strmap_get(&t->vocab, s, n);
        if (id >= 0) return enc_push(e, id);
    }
    if (n > e->sym_cap) {
        free(e->sym);
        free(e->heap);
        e->sym_cap = 0;
        e->sym = n <= INT32_MAX ? aha_malloc(n, sizeof *e->sym, "BPE symbols") : NULL;
        e->heap = e->sym ? aha_malloc(n, 3 * sizeof *e->heap, "BPE queue") : NULL;
        if (!e->heap) {
            if (n > INT32_MAX) aha_err("encode: a pre-token of %zu bytes is too long", n);
            return -1;
        }
        e->sym_cap = n;
    }
    bpe_sym *sym = e->sym;
    int32_t m = t->spm ? spm_symbols(t, s, n, sym) : 0;
    int prev_missing = 0;
    for (size_t i = 0; !t->spm && i < n; i++) {
        int32_t id = t->byte_id[(uint8_t)s[i]];
        int missing = id < 0; // bytes the vocab lacks become unk, or vanish without one
        if (missing) id = t->unk;
        if (id >= 0 && !(missing && prev_missing && t->fuse_unk)) {
            sym[m] = (bpe_sym){id, m - 1, m + 1};
            m++;
        }
        prev_missing = missing;
    }
    if (!m) return 0;
    sym[m - 1].next = -1;

    size_t hn = 0;
    for (int32_t i = 0; i + 1 < m; i++) enc_merge_candidate(t, e->heap, &hn, sym, i);
    while (hn) {
        uint64_t top = heap_pop(e->heap, &hn);
        int32_t rank = (int32_t)(top >> 32), pos = (int32_t)(uint32_t)top;
        bpe_sym *l = &sym[pos];
        if (l->id < 0 || l->next < 0) continue;
        bpe_sym *r = &sym[l->next];
        // A stale candidate still applies when the pair now there merges into
        // the same token: tokenizers checks only that.
        int32_t now = pair_rank(t, l->id, r->id);
        if (now < 0 || t->merge_id[now] != t->merge_id[rank]) continue;
        l->id = t->merge_id[rank];
        r->id = -1;
        l->next = r->next;
        if (l->next >= 0) sym[l->next].prev = pos;
        if (l->prev >= 0) enc_merge_candidate(t, e->heap, &hn, sym, l->prev);
        if (l->next >= 0) enc_merge_candidate(t, e->heap, &hn, sym, pos);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (enc_push(e, sym[i].id) != 0) return -1;
    return 0;
}

static int enc_pretok(enc *e, const char *s, size_t n) {
    return aha_pretok_run(&e->t->pre, e->md, s, n, e->at0, enc_bpe, e);
}

// Rust's char::is_whitespace (Unicode White_Space), for lstrip / rstrip.
static int is_space(utf8proc_int32_t c) {
    utf8proc_category_t cat = utf8proc_category(c);
    return (c >= 9 && c <= 13) || c == 0x85 || cat == UTF8PROC_CATEGORY_ZS ||
           cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

static int char_at(const char *s, size_t i, size_t n, utf8proc_int32_t *c) {
    return (int)utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)(n - i), c);
}

// Cut the added tokens of one kind (normalized or raw) out of s, as
// tokenizers' AddedVocabulary does (leftmost-longest, lstrip/rstrip); the
// text between goes on to `next`.
static int enc_added(enc *e, const char *s, size_t n, int normalized,
                     int (*next)(enc *, const char *, size_t)) {
    const aha_tokenizer *t = e->t;
    const uint32_t *at = t->added_at[normalized];
    const int at0 = e->at0;
    size_t done = 0; // s[done..] is not consumed yet
    for (size_t i = 0; i < n && at[0] < at[256]; i++) {
        uint8_t c = (uint8_t)s[i];
        for (uint32_t k = at[c]; k < at[c + 1]; k++) {
            const tok_added *a = &t->added[k];
            if (a->len > n - i || memcmp(s + i, a->text, a->len) != 0) continue;
            size_t start = i, stop = i + a->len;
            utf8proc_int32_t ch;
            while (a->lstrip && start > done) {
                size_t j = start - 1;
                while (j > done && ((uint8_t)s[j] & 0xC0) == 0x80) j--;
                if (char_at(s, j, n, &ch) <= 0 || !is_space(ch)) break;
                start = j;
            }
            for (int len; a->rstrip && stop < n && (len = char_at(s, stop, n, &ch)) > 0 && is_space(ch);)
                stop += (size_t)len;
            e->at0 = at0 && done == 0;
            if (start > done && next(e, s + done, start - done) != 0) return -1;
            if (enc_push(e, a->id) != 0) return -1;
            done = stop;
            i = stop - 1;
            break;
        }
    }
    e->at0 = at0 && done == 0;
    return done < n ? next(e, s + done, n - done) : 0;
}

#define METASPACE "\xe2\x96\x81" // U+2581, SentencePiece's space

// Replace(' ' -> U+2581) and Prepend(U+2581) into a new buffer (NULL: out of memory).
static char *spaces_marked(const aha_tokenizer *t, const char *s, size_t n, size_t *m) {
    char *out = aha_malloc(3 * n + 4, 1, "normalized text");
    if (!out) return NULL;
    size_t k = 0;
    if (t->prepend && n) memcpy(out, METASPACE, 3), k = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ' && t->replace_space) memcpy(out + k, METASPACE, 3), k += 3;
        else out[k++] = s[i];
    }
    *m = k;
    return out;
}

// Text between raw added tokens: normalize (NFC, then the space marker),
// then cut the normalized ones.
static int enc_normalize(enc *e, const char *s, size_t n) {
    const aha_tokenizer *t = e->t;
    utf8proc_uint8_t *nf = NULL;
    char *marked = NULL;
    if (t->nfc) {
        utf8proc_ssize_t m = utf8proc_map((const uint8_t *)s, (utf8proc_ssize_t)n, &nf,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (m < 0) {
            aha_err("encode: NFC failed: %s", utf8proc_errmsg(m));
            return -1;
        }
        s = (const char *)nf, n = (size_t)m;
    }
    if ((t->replace_space || t->prepend) && !(s = marked = spaces_marked(t, s, n, &n))) {
        free(nf);
        return -1;
    }
    int rc = enc_added(e, s, n, 1, enc_pretok);
    free(nf);
    free(marked);
    return rc;
}

int aha_tok_encode(const aha_tokenizer *t, const char *text, size_t len, int32_t **ids,
                   size_t *n_ids) {
    *ids = NULL;
    *n_ids = 0;
    size_t bad = aha_utf8_valid_prefix(text, len, 1);
    if (bad < len) {
        aha_err("invalid UTF-8 at byte %zu", bad);
        return -1;
    }
    enc e = {.t = t, .cap = 16 + len / 2, .at0 = 1};
    e.ids = aha_malloc(e.cap, sizeof *e.ids, "token ids");
    e.md = pcre2_match_data_create(1, NULL);
    int rc = e.ids && e.md ? enc_added(&e, text, len, 0, enc_normalize) : -1;
    pcre2_match_data_free(e.md);
    free(e.sym);
    free(e.heap);
    if (rc != 0) {
        free(e.ids);
        return -1;
    }
    *ids = e.ids;
    *n_ids = e.n;
    return 0;
}

// ---- decoding and queries ----

int aha_tok_byte_spelling(const char *s, size_t len) {
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        int c = (uint8_t)s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = 16 * v + d;
    }
    return v;
}

int aha_tok_decoder(aha_tokenizer *t) {
    free(t->dec);
    t->dec = aha_malloc(t->n_bytes + 1, 1, "decoded vocab"); // decoding never lengthens a token
    if (!t->dec) return -1;
    size_t k = 0;
    for (int id = 0; id < t->n_vocab; id++) {
        tok_entry *e = &t->tok[id];
        const char *s = t->bytes + e->off;
        int b = t->decoder.byte_fallback ? aha_tok_byte_spelling(s, e->len) : -1;
        e->doff = (uint32_t)k;
        if (b >= 0) {
            t->dec[k++] = (char)b;
        } else {
            for (uint32_t i = 0; i < e->len; i++) {
                if (t->decoder.replace && i + 3 <= e->len && memcmp(s + i, METASPACE, 3) == 0)
                    t->dec[k++] = ' ', i += 2;
                else
                    t->dec[k++] = s[i];
            }
        }
        e->dlen = (uint32_t)k - e->doff;
    }
    t->n_dec = k;
    return 0;
}

const char *aha_tok_piece(const aha_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    const tok_entry *e = &t->tok[id];
    *len = t->dec ? e->dlen : e->len;
    return t->dec ? t->dec + e->doff : t->bytes + e->off;
}

int aha_tok_decode(const aha_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab) {
            aha_err("decode: token id %d out of range 0..%d", (int)ids[i], t->n_vocab - 1);
            return -1;
        }
        total += t->tok[ids[i]].len;
    }
    char *out = aha_malloc(total + 1, 1, "decoded text");
    if (!out) return -1;
    size_t k = 0, len1 = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = aha_tok_piece(t, ids[i], &len1);
        memcpy(out + k, p, len1);
        k += len1;
    }
    // Strip(' ', n, 0) after Fuse: on the whole text
    size_t cut = 0;
    while (cut < k && cut < (size_t)t->decoder.strip && out[cut] == ' ') cut++;
    memmove(out, out + cut, k - cut);
    k -= cut;
    out[k] = 0;
    *text = out;
    *len = k;
    return 0;
}

int aha_tok_vocab_size(const aha_tokenizer *t) { return t->n_vocab; }
int32_t aha_tok_bos(const aha_tokenizer *t) { return t->bos; }
int32_t aha_tok_eos(const aha_tokenizer *t) { return t->eos; }
int aha_tok_add_bos(const aha_tokenizer *t) { return t->add_bos; }
const char *aha_tok_kind(const aha_tokenizer *t) { return t->kind; }
