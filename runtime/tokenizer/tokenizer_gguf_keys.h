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
