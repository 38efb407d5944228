// Growing memory: a text buffer built piece by piece (prompt templates,
// notebook cells), and arrays grown an element at a time.
//
// A failed allocation never drops text unnoticed: it sets the buffer's
// sticky `failed` flag, every later append is then dropped, and the owner
// checks the flag once, where it can name what was being built, and reports
// it (aha_buf_take does that check).
#pragma once
#include <stddef.h>

typedef struct {
    char *p;    // [cap] bytes, p[len] == '\0' once anything was added
    size_t len; // bytes used, excluding the NUL
    size_t cap; // bytes allocated
    int failed; // an append failed (out of memory); sticky until aha_buf_clear
} aha_buf;

// Append s[0..n) (n may be 0: the buffer then holds at least "").
void aha_buf_add(aha_buf *b, const void *s, size_t n);
// Append each NUL-terminated string up to the NULL that ends the list.
void aha_buf_cat(aha_buf *b, ...) __attribute__((sentinel));
// Append printf-formatted text.
void aha_buf_printf(aha_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Cut the text to its first len bytes (len <= b->len).
void aha_buf_cut(aha_buf *b, size_t len);
void aha_buf_clear(aha_buf *b); // empty and not failed; keeps the allocation
void aha_buf_free(aha_buf *b);
// The text, NUL-terminated and owned by the caller (the buffer is left
// empty), or NULL with "what: out of memory" in aha_errmsg() when an append
// failed (the buffer freed).
char *aha_buf_take(aha_buf *b, const char *what);

// Room for n elements of size bytes in the array *arr points to (arr is the
// address of the array's pointer), which has *cap elements allocated: it is
// reallocated to max(n, 2 * *cap) elements when n > *cap. 0, or -1 with
// "what: out of memory (N bytes)" in aha_errmsg() and the array as it was.
int aha_grow(void *arr, size_t *cap, size_t n, size_t size, const char *what);
