#include "tokenizer_gguf_keys.h"

#include <inttypes.h>
#include <string.h>

#include "err.h"
#include "tokenizer_impl.h"

const aha_gguf_kv *aha_tok_gguf_array(const aha_gguf *g, const char *key, uint32_t type) {
    const aha_gguf_kv *kv = aha_gguf_get(g, key);
    if (!kv || kv->type != GGUF_ARRAY || kv->v.arr.type != type) {
        aha_err("%s %s", key, kv ? "has the wrong type" : "missing");
        return NULL;
    }
    return kv;
}

int aha_tok_gguf_merges(aha_tokenizer *t, const aha_gguf_kv *merges) {
    for (uint64_t i = 0; i < merges->v.arr.n; i++) {
        const aha_gguf_str *m = &merges->v.arr.strs[i];
        const char *sp = memchr(m->s, ' ', m->len);
        if (!sp || memchr(sp + 1, ' ', m->len - (size_t)(sp - m->s) - 1)) {
            aha_err("merge %" PRIu64 " is not \"a b\"", i + 1);
            return -1;
        }
        if (aha_tok_add_merge(t, m->s, (size_t)(sp - m->s), sp + 1, m->len - (size_t)(sp - m->s) - 1))
            return -1;
    }
    return 0;
}

int64_t aha_tok_gguf_id(const aha_gguf *g, const char *key, int n_vocab) {
    uint64_t v;
    int rc = aha_gguf_get_u64(g, key, &v);
    if (rc == 1) return -1;
    if (rc == 0 && v < (uint64_t)n_vocab) return (int64_t)v;
    if (rc == 0) aha_err("%s = %" PRIu64 " is not a token id (vocab %d)", key, v, n_vocab);
    return -2;
}
