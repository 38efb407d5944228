// The tokenizer.ggml.* metadata both GGUF loaders read (tokenizer_gguf.c's
// byte-level BPE and tokenizer_gguf_spm.c's SentencePiece-style BPE). Errors
// carry no file name: aha_tok_load_gguf prefixes it.
#pragma once
#include <stdint.h>

#include "gguf.h"
#include "tokenizer.h"

// A metadata array of the given element type, or NULL with an error.
const aha_gguf_kv *aha_tok_gguf_array(const aha_gguf *g, const char *key, uint32_t type);
// tokenizer.ggml.merges ("a b" each, a string array) added in rank order.
int aha_tok_gguf_merges(aha_tokenizer *t, const aha_gguf_kv *merges);
// An optional token id key: -1 when absent, -2 (with an error) when bad.
int64_t aha_tok_gguf_id(const aha_gguf *g, const char *key, int n_vocab);
// Tokenizer keys no token id depends on, each with its reason (a key ending
// in '.' or '_' stands for every key that starts so); docs/runtime.md's table.
typedef struct {
    const char *key, *why;
    int only;  // 0: every vocabulary; 1: byte-level BPE (gpt2) only; 2: SentencePiece (llama) only
} aha_tok_key_info;
extern const aha_tok_key_info aha_tok_gguf_info[];
extern const int aha_n_tok_gguf_info;
// After a load: the switches aha does not implement are off (add_eos_token,
// add_sep_token, remove_extra_whitespaces), and every tokenizer.* key was
// read by the loader or is one no token depends on (a table, each with its
// reason), else one error naming the key. byte_level: the gpt2 vocabulary,
// where the unknown token and the space prefix change nothing.
int aha_tok_gguf_check_keys(const aha_gguf *g, int byte_level);
