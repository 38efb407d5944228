// SentencePiece-style BPE from GGUF metadata, for aha_tok_load_gguf
// (tokenizer_gguf.c), which reads the other GGUF kind itself.
#pragma once
#include "gguf.h"
#include "tokenizer.h"

// tokenizer.ggml.model "llama"; errors without the file name.
int aha_tok_gguf_spm(aha_tokenizer **out, const aha_gguf *g);
