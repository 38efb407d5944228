// Internals of the BPE tokenizer, shared by tokenizer.c (building, encoding,
// decoding) and its loaders tokenizer_json.c and tokenizer_gguf.c. Two kinds:
// byte-level (GPT-2 family: BPE on bytes, the vocab in GPT-2's byte alphabet)
// and SentencePiece-style (`spm`: BPE on UTF-8 chars, spaces as U+2581,
// <0xNN> byte-fallback tokens for chars the vocab lacks; Llama-2, Gemma).
#pragma once
#include "pretok.h"
#include "strmap.h"
#include "tokenizer.h"

typedef struct {
    uint32_t off;    // the token's bytes are bytes[off .. off+len): byte-level: what it
    uint32_t len;    // decodes to; spm: its spelling (what BPE matches)
    uint32_t doff;   // spm: what it decodes to is dec[doff .. doff+dlen) (aha_tok_decoder)
    uint32_t dlen;
    uint8_t set;     // some token has this id
    uint8_t model;   // in the BPE model's vocab, not only an added token
    uint8_t spelled; // BPE can produce it (byte-level: written in GPT-2's byte alphabet)
} tok_entry;

// What an spm decoder does to a token's spelling (tokenizers' Replace,
// ByteFallback, Strip decoders; Fuse only joins, which decoding does anyway).
typedef struct {
    int replace;       // U+2581 -> ' '
    int byte_fallback; // a token spelled <0xNN> is that byte
    int strip;         // leading ' ' cut from the decoded text (at most this many)
} tok_decoder;

typedef struct {
    char *text;         // [len] literal text matched in the input (owned)
    uint32_t len;       // > 0
    int32_t id;
    uint8_t normalized; // matched in normalized text rather than the raw input
    uint8_t lstrip;     // the match swallows the whitespace before it
    uint8_t rstrip;     // ... and after it
} tok_added;

struct aha_tokenizer {
    tok_entry *tok;             // [n_slots] by id
    int n_slots;                // ids a loader may use
    int n_vocab;                // ids 0..n_vocab-1, all set (after aha_tok_index)
    char *bytes;                // [cap] the decoded bytes of every token, packed
    size_t n_bytes, cap;
    aha_strmap vocab;           // decoded bytes -> id, tokens BPE can produce
    int32_t byte_id[256];       // id of each one-byte token, -1 when absent
    int32_t (*merge_pair)[2];   // [n_merges] (left, right) ids, the keys of `merges`
    int32_t *merge_id;          // [n_merges] the id each pair merges into
    int n_merges, merge_cap;    // merges added, room reserved by aha_tok_index
    aha_strmap merges;          // (left, right) as 8 bytes -> rank (index)
    tok_added *added;           // [n_added] by (normalized, first byte, longest first)
    int n_added;
    size_t cap_added;           // added allocated
    uint32_t added_at[2][257];  // [normalized][c]: added[at[c] .. at[c+1]) start with byte c
    aha_pretok pre;
    int spm;                    // SentencePiece-style BPE (set before any aha_tok_set)
    int byte_fallback;          // spm: a char the vocab lacks becomes its <0xNN> tokens
    int32_t byte_tok[256];      // spm: id of the token spelled <0xNN>, -1 when absent
    char *dec;                  // spm: [n_dec] the decoded bytes of every token, packed
    size_t n_dec;
    tok_decoder decoder;        // spm
    int nfc;                    // NFC normalizer
    int replace_space;          // normalizer Replace(' ' -> U+2581)
    int prepend;                // normalizer Prepend(U+2581) to non-empty text
    int ignore_merges;          // a piece that is a whole token skips BPE (Llama-3)
    int32_t unk;                // stands for bytes missing from the vocab; -1: drop them
    int fuse_unk;               // consecutive missing bytes make one unk
    int32_t bos, eos;           // -1 when none
    int add_bos;
    char kind[64];              // "bpe/<pre-tokenizer> (N tokens)", "spm/<source> (N tokens)"
};

// At most 40 bytes of s with control bytes escaped (\n, \xNN), so an error
// naming a token stays one line; out has room for AHA_TOK_SHOW_CAP bytes.
#define AHA_TOK_SHOW_CAP 164
const char *aha_tok_escape(const char *s, size_t n, char *out);
// "%.*s" arguments showing token s of n bytes that way in an error message.
#define SHOW(s, n) AHA_TOK_SHOW_CAP, aha_tok_escape((const char *)(s), (n), (char[AHA_TOK_SHOW_CAP]){0})
// ... and a NUL-terminated string (NULL shows as '?').
#define SHOWS(s) SHOW((s) ? (s) : "?", (s) ? strlen(s) : 1)

// Loading, in this order: aha_tok_new, aha_tok_set / aha_tok_add_added for
// every token, aha_tok_index, aha_tok_add_merge in rank order; the loader sets
// the pre-tokenizer and options directly. Errors carry no file name: the
// loader prefixes it.

// Room for ids 0..n_slots-1 and cap bytes of decoded tokens (the total length
// of their spellings is enough). NULL when out of memory.
aha_tokenizer *aha_tok_new(int n_slots, size_t cap);
// Token `id` is s. model: s is a BPE vocab entry, spelled in GPT-2's byte
// alphabet (as in tokenizer.json or GGUF; spm: as BPE matches it, in
// UTF-8, which is also what added tokens are); else s is an added token's text,
// which is also what it decodes to (tokenizers would run it through the
// ByteLevel decoder, which garbles any Latin-1 char in it). Setting an id
// again must give the same bytes.
int aha_tok_set(aha_tokenizer *t, int64_t id, const char *s, size_t len, int model);
// The literal text of added token `id` (already set), matched before
// pre-tokenization (normalized: in the normalized text, so it must be
// normalized itself).
int aha_tok_add_added(aha_tokenizer *t, int32_t id, const char *text, size_t len,
                      int normalized, int lstrip, int rstrip);
// Check the ids leave no gap, index the tokens BPE can produce (model tokens
// spelled in the byte alphabet), order the added tokens, make room for
// n_merges merges.
int aha_tok_index(aha_tokenizer *t, size_t n_merges);
// Room for n_merges merges (again), dropping those added.
int aha_tok_reserve_merges(aha_tokenizer *t, size_t n_merges);
// The next merge by rank; a and b spelled as in the vocab.
int aha_tok_add_merge(aha_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);
// The next merge by rank, as ids (a and b make ab, all BPE tokens).
int aha_tok_add_merge_ids(aha_tokenizer *t, int32_t a, int32_t b, int32_t ab);
// A spelling <0xNN> (N uppercase hex, as tokenizers' ByteFallback decoder
// reads it): the byte, else -1.
int aha_tok_byte_spelling(const char *s, size_t len);
// spm, after aha_tok_index and setting t->decoder: every token's decoded bytes.
int aha_tok_decoder(aha_tokenizer *t);
// Id of a token by spelling (added tokens first, then BPE tokens); -1 when absent.
int32_t aha_tok_find(const aha_tokenizer *t, const char *s);

// aha_tok_load_json on bytes in memory; name is used in error messages.
int aha_tok_parse_json(aha_tokenizer **out, const char *name, const char *json, size_t len);
// aha_tok_load_config on bytes in memory.
int aha_tok_parse_config(aha_tokenizer *t, const char *name, const char *json, size_t len);
