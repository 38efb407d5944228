#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

int aha_grow(void *arr, size_t *cap, size_t n, size_t size, const char *what) {
    if (n <= *cap) return 0;
    size_t max = size ? (size_t)-1 / size : (size_t)-1;
    if (n > max) {
        aha_err("%s: size overflow (%zu x %zu bytes)", what, n, size);
        return -1;
    }
    size_t c = *cap <= max / 2 && 2 * *cap > n ? 2 * *cap : n, bytes = c * size;
    void *p;
    memcpy(&p, arr, sizeof p); // arr is a T **: read and write the T * as bytes
    p = realloc(p, bytes ? bytes : 1);
    if (!p) {
        aha_err("%s: out of memory (%zu bytes)", what, bytes);
        return -1;
    }
    memcpy(arr, &p, sizeof p);
    *cap = c;
    return 0;
}

// Room for n more bytes and the NUL: 0, or -1 with the buffer failed.
static int buf_room(aha_buf *b, size_t n) {
    if (b->failed) return -1;
    if (n >= (size_t)-1 - b->len) aha_err("text: size overflow");
    else if (aha_grow(&b->p, &b->cap, b->len + n + 1, 1, "text") == 0) return 0;
    b->failed = 1;
    return -1;
}

void aha_buf_add(aha_buf *b, const void *s, size_t n) {
    if (buf_room(b, n) != 0) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void aha_buf_cat(aha_buf *b, ...) {
    va_list ap;
    va_start(ap, b);
    for (const char *s; (s = va_arg(ap, const char *));) aha_buf_add(b, s, strlen(s));
    va_end(ap);
}

void aha_buf_printf(aha_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && b->p && b->len + (size_t)n < b->cap) { // it fitted
        b->len += (size_t)n;
        return;
    }
    if (b->p) b->p[b->len] = '\0'; // undo what a text too long for the room left wrote
    if (n < 0) {                   // vsnprintf fails only on more than INT_MAX bytes
        aha_err("text: over INT_MAX bytes");
        b->failed = 1;
        return;
    }
    if (buf_room(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void aha_buf_cut(aha_buf *b, size_t len) {
    if (b->failed || len > b->len) return;
    b->len = len;
    b->p[len] = '\0';
}

void aha_buf_clear(aha_buf *b) {
    b->len = 0;
    b->failed = 0;
    if (b->p) b->p[0] = '\0';
}

void aha_buf_free(aha_buf *b) {
    free(b->p);
    *b = (aha_buf){0};
}

char *aha_buf_take(aha_buf *b, const char *what) {
    aha_buf_add(b, "", 0); // an empty text is still a string
    if (b->failed) {
        aha_err("%s: out of memory", what);
        aha_buf_free(b);
        return NULL;
    }
    char *p = b->p;
    *b = (aha_buf){0};
    return p;
}
