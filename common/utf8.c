#include "utf8.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

size_t aha_utf8_valid_prefix(const char *s, size_t n, int allow_nul) {
    for (size_t i = 0; i < n;) {
        if ((uint8_t)s[i] < 0x80 && (s[i] || allow_nul)) {
            i++;
            continue;
        }
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
        if (k <= 0 || (c == 0 && !allow_nul)) return i;
        i += (size_t)k;
    }
    return n;
}

size_t aha_utf8_sanitize(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t ok = aha_utf8_valid_prefix(s + i, n - i, 0);
        memcpy(out + o, s + i, ok);
        o += ok, i += ok;
        if (i < n) { // one bad byte (or a NUL) -> U+FFFD
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i++;
        }
    }
    out[o] = '\0';
    return o + 1;
}
