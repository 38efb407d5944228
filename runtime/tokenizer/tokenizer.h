// BPE tokenizers, loaded from a Hugging Face tokenizer.json or from GGUF
// metadata: byte-level (GPT-2 family: SmolLM2, Llama-3, Qwen2/3, OLMo-2) and
// SentencePiece-style with byte fallback (Llama-2, Gemma).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct aha_tokenizer aha_tokenizer;

int aha_tok_load_json(aha_tokenizer **out, const char *path);
// Special tokens from a Hugging Face tokenizer_config.json (bos_token,
// eos_token, add_bos_token), after aha_tok_load_json; errors name the file.
int aha_tok_load_config(aha_tokenizer *t, const char *path);
int aha_tok_load_gguf(aha_tokenizer **out, const aha_gguf *g);
void aha_tok_free(aha_tokenizer *t);

// Encode UTF-8 text (no BOS/EOS added). Invalid UTF-8 is an error.
// *ids is malloc'd; caller frees.
int aha_tok_encode(const aha_tokenizer *t, const char *text, size_t len,
                   int32_t **ids, size_t *n_ids);
// Decode ids to the exact bytes (special tokens as their text; spm: U+2581
// as a space, byte-fallback tokens as their bytes even where they are not
// UTF-8, which HF shows as U+FFFD, and the decoder's leading-space Strip).
// *text is malloc'd and NUL-terminated; caller frees.
int aha_tok_decode(const aha_tokenizer *t, const int32_t *ids, size_t n,
                   char **text, size_t *len);
// The decoded bytes of one token (for streaming output; no Strip); NULL if out of range.
const char *aha_tok_piece(const aha_tokenizer *t, int32_t id, size_t *len);

int aha_tok_vocab_size(const aha_tokenizer *t);
int32_t aha_tok_bos(const aha_tokenizer *t); // -1 when none
int32_t aha_tok_eos(const aha_tokenizer *t); // -1 when none
int aha_tok_add_bos(const aha_tokenizer *t); // whether prompts get a BOS
const char *aha_tok_kind(const aha_tokenizer *t); // e.g. "bpe/smollm (49152 tokens)", "spm/gemma3 (...)"
