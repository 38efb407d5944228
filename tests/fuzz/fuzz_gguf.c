// libFuzzer target for the GGUF reader: on any input aha_gguf_parse either
// fails with a one-line message or returns tables that stay inside the input;
// every tensor is then dequantized and every kv read, so ASan sees each byte
// the parser promised.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gguf.h"

static int inside(const void *p, size_t n, const uint8_t *data, size_t size) {
    const uint8_t *q = p;
    return q >= data && n <= size && q - data <= (ptrdiff_t)(size - n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    aha_gguf g;
    if (aha_gguf_parse(&g, "fuzz.gguf", data, size) != 0) {
        if (strchr(aha_errmsg(), '\n')) abort();
        return 0;
    }
    for (uint64_t i = 0; i < g.n_kv; i++) {
        const aha_gguf_kv *kv = &g.kv[i];
        uint64_t u;
        double f;
        aha_gguf_str s;
        aha_gguf_get_u64(&g, kv->key, &u);
        aha_gguf_get_f64(&g, kv->key, &f);
        aha_gguf_get_str(&g, kv->key, &s);
        if (kv->type == GGUF_STRING && !inside(kv->v.s.s, kv->v.s.len, data, size)) abort();
        for (uint64_t j = 0; kv->type == GGUF_ARRAY && kv->v.arr.strs && j < kv->v.arr.n; j++)
            if (!inside(kv->v.arr.strs[j].s, kv->v.arr.strs[j].len, data, size)) abort();
    }
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        const aha_tensor *t = &g.tensors[i];
        int64_t n = aha_tensor_numel(t);
        if (n <= 0 || !inside(t->data, t->nbytes, data, size) ||
            aha_dtype_bytes(t->dtype, n, t->shape[t->ndim - 1]) != t->nbytes)
            abort();
        if (aha_gguf_find(&g, t->name) != t) abort(); // names are unique
        float *out = malloc((size_t)n * sizeof *out); // under 2 values per input byte
        if (out) aha_dequant(t, out);
        free(out);
    }
    aha_gguf_close(&g);
    return 0;
}
