// Internals of the byte-level BPE tokenizer, shared by tokenizer.c (building,
// encoding, decoding) and its loaders tokenizer_json.c and tokenizer_gguf.c.
#pragma once
#include "pretok.h"
#include "strmap.h"
#include "tokenizer.h"

typedef struct {
    uint32_t off;    // the token's bytes (what it decodes to) are bytes[off .. off+len)
    uint32_t len;
    uint8_t set;     // some token has this id
    uint8_t model;   // in the BPE model's vocab, not only an added token
    uint8_t spelled; // written in GPT-2's byte alphabet, so BPE can produce it
} tok_entry;

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
    uint32_t added_at[2][257];  // [normalized][c]: added[at[c] .. at[c+1]) start with byte c
    aha_pretok pre;
    int nfc;                    // NFC normalizer
    int ignore_merges;          // a piece that is a whole token skips BPE (Llama-3)
    int32_t unk;                // stands for bytes missing from the vocab; -1: drop them
    int fuse_unk;               // consecutive missing bytes make one unk
    int32_t bos, eos;           // -1 when none
    int add_bos;
    char kind[64];              // "bpe/<pre-tokenizer> (N tokens)"
};

// Loading, in this order: aha_tok_new, aha_tok_set / aha_tok_add_added for
// every token, aha_tok_index, aha_tok_add_merge in rank order; the loader sets
// the pre-tokenizer and options directly. Errors carry no file name: the
// loader prefixes it.

// Room for ids 0..n_slots-1 and cap bytes of decoded tokens (the total length
// of their spellings is enough). NULL when out of memory.
aha_tokenizer *aha_tok_new(int n_slots, size_t cap);
// Token `id` is s. model: s is a BPE vocab entry, spelled in GPT-2's byte
// alphabet (as in tokenizer.json or GGUF); else s is an added token's text,
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
// The next merge by rank; a and b spelled as in the vocab.
int aha_tok_add_merge(aha_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen);
// Id of a token by spelling (added tokens first, then BPE tokens); -1 when absent.
int32_t aha_tok_find(const aha_tokenizer *t, const char *s);

// aha_tok_load_json on bytes in memory; name is used in error messages.
int aha_tok_parse_json(aha_tokenizer **out, const char *name, const char *json, size_t len);
// aha_tok_load_config on bytes in memory.
int aha_tok_parse_config(aha_tokenizer *t, const char *name, const char *json, size_t len);
