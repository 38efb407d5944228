// libFuzzer: bytes as a GGUF holding a tokenizer (tokenizer.ggml.*: byte-level
// or SentencePiece-style, whose merges are derived from the vocab). Whatever
// loads must encode a few texts, and every id it gives must decode.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gguf.h"
#include "fuzz_tok.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const texts[] = {
        "Hello, world! It's 1234 <s> </s> don'T",
        "  \n\t x\xc2\xb2\xc2\xbd \xf0\x9f\x98\x80 \xe6\x97\xa5 cafe\xcc\x81 \xe2\x96\x81 <0x41>",
        "",
    };
    aha_gguf g;
    if (aha_gguf_parse(&g, "fuzz.gguf", data, size) != 0) return 0;
    aha_tokenizer *t;
    if (aha_tok_load_gguf(&t, &g) != 0) {
        if (strchr(aha_errmsg(), '\n')) abort();
        aha_gguf_close(&g);
        return 0;
    }
    fuzz_tok_texts(t, texts, sizeof texts / sizeof *texts);
    aha_tok_free(t);
    aha_gguf_close(&g);
    return 0;
}
