// Shared by the tokenizer fuzz targets: whatever loaded must encode a few
// texts, and every id it gives must decode.
#pragma once
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static inline void fuzz_tok_texts(const aha_tokenizer *t, const char *const *texts, size_t n_texts) {
    for (size_t i = 0; i < n_texts; i++) {
        int32_t *ids;
        size_t n, len;
        char *back;
        if (aha_tok_encode(t, texts[i], strlen(texts[i]), &ids, &n) != 0) continue;
        if (aha_tok_decode(t, ids, n, &back, &len) != 0) abort();
        free(back);
        free(ids);
    }
}
