// libFuzzer: bytes as a tokenizer.json. Whatever loads must encode a few
// texts, and every id it gives must decode.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tok.h"
#include "tokenizer_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const texts[] = {
        "Hello, world! It's 1234 <|endoftext|> don'T",
        "  \n\t x\xc2\xb2\xc2\xbd \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xe6\x97\xa5 cafe\xcc\x81",
        "<pad>||split--me|| 123abc456 -x- y|z\r\n\r\n   ",
        "",
    };
    aha_tokenizer *t;
    if (aha_tok_parse_json(&t, "fuzz", (const char *)data, size) != 0) return 0;
    fuzz_tok_texts(t, texts, sizeof texts / sizeof *texts);
    aha_tok_free(t);
    return 0;
}
