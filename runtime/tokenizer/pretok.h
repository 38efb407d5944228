// Pre-tokenization: cutting (normalized) text into the pieces BPE runs on,
// the way Hugging Face tokenizers' Split, Digits, ByteLevel and Metaspace
// pre-tokenizers do. Regexes run on PCRE2 (UTF + UCP), standing in for tokenizers' Oniguruma.
#pragma once
#include <stddef.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

// tokenizers' SplitDelimiterBehavior: what becomes of the delimiters (matches).
typedef enum {
    AHA_SPLIT_REMOVED,     // dropped
    AHA_SPLIT_ISOLATED,    // each a piece of its own
    AHA_SPLIT_MERGED_PREV, // glued to the end of the piece before
    AHA_SPLIT_MERGED_NEXT, // glued to the start of the piece after
    AHA_SPLIT_CONTIGUOUS,  // consecutive delimiters (and non-delimiters) form one piece
} aha_split_behavior;

typedef enum {
    AHA_PRETOK_REGEX,        // Split on a regex or literal (ByteLevel's regex too)
    AHA_PRETOK_DIGITS,       // Digits: split on Unicode numeric chars (Nd, Nl, No)
    AHA_PRETOK_PREFIX_SPACE, // ByteLevel(add_prefix_space): " " before a piece lacking one
    AHA_PRETOK_METASPACE,    // Metaspace: ' ' -> U+2581, and U+2581 before a piece (prepend)
} aha_pretok_kind;

// Metaspace's prepend_scheme: which pieces lacking a leading U+2581 get one.
typedef enum { AHA_PREPEND_NEVER, AHA_PREPEND_FIRST, AHA_PREPEND_ALWAYS } aha_prepend;

typedef struct {
    aha_pretok_kind kind;
    aha_split_behavior how; // REGEX, DIGITS
    int invert;             // REGEX: the non-matches are the delimiters
    aha_prepend prepend;    // METASPACE; FIRST: only a piece at the start of the input
    pcre2_code *re;         // REGEX: compiled pattern (owned)
} aha_pretok_step;

#define AHA_PRETOK_MAX_STEPS 16

typedef struct {
    aha_pretok_step steps[AHA_PRETOK_MAX_STEPS]; // [n] each applied to every piece of the one before
    int n;
} aha_pretok;

// The split regexes of the byte-level families, as their tokenizer.json spell them.
extern const char aha_re_gpt2[];   // GPT-2 (ByteLevel use_regex=true), SmolLM2, OLMo-1
extern const char aha_re_llama3[]; // Llama-3, OLMo-2, DBRX (cl100k)
extern const char aha_re_qwen2[];  // Qwen2/3: Llama-3's with single digits

// Append a Split step on a regex (or on a literal string). 0, or -1 with the
// PCRE2 message for a bad pattern.
int aha_pretok_add_split(aha_pretok *p, const char *pattern, size_t len, int literal,
                         aha_split_behavior how, int invert);
int aha_pretok_add_digits(aha_pretok *p, int individual);
// ByteLevel: optional prefix space, then (use_regex) the GPT-2 split. Its
// byte-to-char mapping needs no step: BPE runs on raw bytes.
int aha_pretok_add_byte_level(aha_pretok *p, int add_prefix_space, int use_regex);
// Metaspace(replacement U+2581, prepend_scheme, split): split cuts before
// each U+2581 (a Split step, MergedWithNext).
int aha_pretok_add_metaspace(aha_pretok *p, aha_prepend prepend, int split);
void aha_pretok_free(aha_pretok *p);

// Receives each final piece (never empty); non-zero stops the run and is returned.
typedef int (*aha_pretok_emit)(void *ctx, const char *s, size_t n);
// Cut valid UTF-8 text into pieces. md: match data of >= 1 pair, one per
// thread. at0: s starts the input text (not after an added token).
int aha_pretok_run(const aha_pretok *p, pcre2_match_data *md, const char *s, size_t n, int at0,
                   aha_pretok_emit emit, void *ctx);
