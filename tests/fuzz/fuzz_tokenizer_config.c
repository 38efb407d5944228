// libFuzzer: bytes as a tokenizer_config.json over the tiny qwen2
// tokenizer. Whatever is accepted must leave the special tokens valid: ids
// in the vocabulary or -1, and a BOS whenever one is to be added.
#include <stdint.h>
#include <stdlib.h>

#include "tokenizer_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static aha_tokenizer *t;
    if (!t && aha_tok_load_json(&t, "tests/fixtures/tok_tiny/qwen2.json") != 0) abort();
    if (aha_tok_parse_config(t, "fuzz", (const char *)data, size) != 0) return 0;
    const int n = aha_tok_vocab_size(t), bos = aha_tok_bos(t), eos = aha_tok_eos(t);
    if (bos < -1 || bos >= n || eos < -1 || eos >= n || (aha_tok_add_bos(t) && bos < 0)) abort();
    return 0;
}
