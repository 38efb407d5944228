#include "pretok.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "err.h"

const char aha_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char aha_re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char aha_re_qwen2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static aha_pretok_step *pretok_push(aha_pretok *p, aha_pretok_kind kind) {
    if (p->n == AHA_PRETOK_MAX_STEPS) {
        aha_err("pre_tokenizer: more than %d steps", AHA_PRETOK_MAX_STEPS);
        return NULL;
    }
    aha_pretok_step *st = &p->steps[p->n++];
    *st = (aha_pretok_step){.kind = kind};
    return st;
}

int aha_pretok_add_split(aha_pretok *p, const char *pattern, size_t len, int literal,
                         aha_split_behavior how, int invert) {
    int code;
    PCRE2_SIZE at;
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        aha_err("pre_tokenizer regex '%.*s': %s at offset %zu", (int)(len < 60 ? len : 60), pattern,
                (char *)msg, (size_t)at);
        return -1;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); // best effort: the interpreter also works
    aha_pretok_step *st = pretok_push(p, AHA_PRETOK_REGEX);
    if (!st) {
        pcre2_code_free(re);
        return -1;
    }
    st->how = how;
    st->invert = invert;
    st->re = re;
    return 0;
}

int aha_pretok_add_digits(aha_pretok *p, int individual) {
    aha_pretok_step *st = pretok_push(p, AHA_PRETOK_DIGITS);
    if (st) st->how = individual ? AHA_SPLIT_ISOLATED : AHA_SPLIT_CONTIGUOUS;
    return st ? 0 : -1;
}

int aha_pretok_add_byte_level(aha_pretok *p, int add_prefix_space, int use_regex) {
    if (add_prefix_space && !pretok_push(p, AHA_PRETOK_PREFIX_SPACE)) return -1;
    if (!use_regex) return 0;
    return aha_pretok_add_split(p, aha_re_gpt2, sizeof aha_re_gpt2 - 1, 0, AHA_SPLIT_ISOLATED, 0);
}

int aha_pretok_add_metaspace(aha_pretok *p, aha_prepend prepend, int split) {
    aha_pretok_step *st = pretok_push(p, AHA_PRETOK_METASPACE);
    if (!st) return -1;
    st->prepend = prepend;
    return split ? aha_pretok_add_split(p, "\xe2\x96\x81", 3, 1, AHA_SPLIT_MERGED_NEXT, 0) : 0;
}

void aha_pretok_free(aha_pretok *p) {
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->steps[i].re);
    p->n = 0;
}

typedef struct {
    const aha_pretok *p;
    pcre2_match_data *md;
    aha_pretok_emit emit;
    void *ctx;
} pretok_run;

static int run_step(const pretok_run *r, int k, const char *s, size_t n, int at0);

// One step's split of one piece, as tokenizers' NormalizedString::split: the
// text is a sequence of items (delimiter or not), grouped into pieces by the
// behavior, then empty pieces are dropped.
typedef struct {
    const pretok_run *r;
    int next;                  // step the pieces go to
    const char *s;             // the piece being split
    int at0;                   // ... starts the input
    aha_split_behavior how;
    int invert;
    size_t a, b;               // pending piece s[a..b)
    int have;                  // a piece is pending
    int prev;                  // the previous item was a delimiter
} splitter;

static int split_flush(splitter *sp) {
    if (!sp->have) return 0;
    sp->have = 0;
    return sp->a == sp->b ? 0 : run_step(sp->r, sp->next, sp->s + sp->a, sp->b - sp->a, sp->at0 && !sp->a);
}

static int split_feed(splitter *sp, size_t a, size_t b, int delim) {
    delim ^= sp->invert;
    int join = 0;
    if (sp->have) {
        switch (sp->how) {
        case AHA_SPLIT_CONTIGUOUS: join = delim == sp->prev; break;
        case AHA_SPLIT_MERGED_PREV: join = delim && !sp->prev; break;
        case AHA_SPLIT_MERGED_NEXT: join = sp->prev && !delim; break;
        default: break;
        }
    }
    sp->prev = delim;
    if (join) {
        sp->b = b;
        return 0;
    }
    if (split_flush(sp)) return -1;
    if (!(delim && sp->how == AHA_SPLIT_REMOVED)) {
        sp->a = a;
        sp->b = b;
        sp->have = 1;
    }
    return 0;
}

static size_t next_char(const char *s, size_t i, size_t n) {
    do i++;
    while (i < n && ((uint8_t)s[i] & 0xC0) == 0x80);
    return i;
}

// Matches found the way tokenizers iterates Oniguruma: left to right, no
// empty match right where the previous match ended.
static int split_regex(splitter *sp, const pcre2_code *re, size_t n) {
    pcre2_match_data *md = sp->r->md;
    size_t pos = 0, prev = 0, last_end = (size_t)-1;
    while (pos <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)sp->s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            aha_err("pre_tokenizer regex failed: %s", (char *)msg);
            return -1;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (a < pos || b < a) { // only \K can do this
            aha_err("pre_tokenizer regex: match outside the searched text");
            return -1;
        }
        if (a == b && b == last_end) {
            pos = pos < n ? next_char(sp->s, pos, n) : n + 1;
            continue;
        }
        if (a > prev && split_feed(sp, prev, a, 0)) return -1;
        if (split_feed(sp, a, b, 1)) return -1;
        prev = pos = last_end = b;
    }
    if (prev < n && split_feed(sp, prev, n, 0)) return -1;
    return split_flush(sp);
}

// Each numeric char is a delimiter; the text between is one item.
static int split_digits(splitter *sp, size_t n) {
    size_t gap = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t len = utf8proc_iterate((const uint8_t *)sp->s + i, (utf8proc_ssize_t)(n - i), &c);
        if (len <= 0) len = 1; // not reached: the text was validated (c is -1, no category)
        utf8proc_category_t cat = utf8proc_category(c);
        if (cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO) {
            if (gap < i && split_feed(sp, gap, i, 0)) return -1;
            if (split_feed(sp, i, i + len, 1)) return -1;
            gap = i + len;
        }
        i += len;
    }
    if (gap < n && split_feed(sp, gap, n, 0)) return -1;
    return split_flush(sp);
}

#define METASPACE "\xe2\x96\x81" // U+2581

// Metaspace on one piece: spaces to U+2581, then U+2581 in front where the
// scheme says and the piece lacks one (tokenizers' Metaspace::pre_tokenize).
static int run_metaspace(const pretok_run *r, int k, const char *s, size_t n, int at0) {
    char *buf = aha_malloc(3 * n + 3, 1, "pre-tokenizer piece");
    if (!buf) return -1;
    size_t m = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(buf + m, METASPACE, 3), m += 3;
        else buf[m++] = s[i];
    }
    const aha_prepend how = r->p->steps[k].prepend;
    int front = how != AHA_PREPEND_NEVER && (how == AHA_PREPEND_ALWAYS || at0) &&
                !(m >= 6 && memcmp(buf + 3, METASPACE, 3) == 0);
    if (front) memcpy(buf, METASPACE, 3);
    int rc = run_step(r, k + 1, buf + (front ? 0 : 3), m - (front ? 0 : 3), at0);
    free(buf);
    return rc;
}

static int run_step(const pretok_run *r, int k, const char *s, size_t n, int at0) {
    if (k == r->p->n) return r->emit(r->ctx, s, n);
    const aha_pretok_step *st = &r->p->steps[k];
    if (st->kind == AHA_PRETOK_METASPACE) return run_metaspace(r, k, s, n, at0);
    if (st->kind == AHA_PRETOK_PREFIX_SPACE) {
        if (s[0] == ' ') return run_step(r, k + 1, s, n, at0);
        char *buf = aha_malloc(n + 1, 1, "pre-tokenizer piece");
        if (!buf) return -1;
        buf[0] = ' ';
        memcpy(buf + 1, s, n);
        int rc = run_step(r, k + 1, buf, n + 1, at0);
        free(buf);
        return rc;
    }
    splitter sp = {.r = r, .next = k + 1, .s = s, .at0 = at0, .how = st->how, .invert = st->invert};
    return st->kind == AHA_PRETOK_DIGITS ? split_digits(&sp, n) : split_regex(&sp, st->re, n);
}

int aha_pretok_run(const aha_pretok *p, pcre2_match_data *md, const char *s, size_t n, int at0,
                   aha_pretok_emit emit, void *ctx) {
    if (!n) return 0;
    pretok_run r = {p, md, emit, ctx};
    return run_step(&r, 0, s, n, at0);
}
