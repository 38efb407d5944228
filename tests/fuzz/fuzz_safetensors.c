// libFuzzer target for the safetensors reader: on any input aha_st_parse
// either fails with a one-line message or returns tensors that lie inside the
// input, do not overlap and have unique names; each is then dequantized so
// ASan sees every byte.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    aha_safetensors st;
    if (aha_st_parse(&st, "fuzz.safetensors", data, size) != 0) {
        if (strchr(aha_errmsg(), '\n')) abort();
        return 0;
    }
    for (int i = 0; i < st.n; i++) {
        const aha_tensor *t = &st.tensors[i];
        const uint8_t *p = t->data;
        int64_t n = aha_tensor_numel(t);
        if (n <= 0 || p < data || t->nbytes > size || p - data > (ptrdiff_t)(size - t->nbytes) ||
            aha_dtype_bytes(t->dtype, n, 1) != t->nbytes || aha_st_find(&st, t->name) != t)
            abort();
        float *out = malloc((size_t)n * sizeof *out); // at least 2 input bytes per value
        if (out) aha_dequant(t, out);
        free(out);
    }
    aha_st_close(&st);
    return 0;
}
