// UTF-8 checks shared by the tokenizer, the dataset readers and the trace.
#pragma once
#include <stddef.h>

// Offset of the first byte of s[0..n) that is not valid UTF-8 (or, when
// allow_nul is 0, is a NUL), or n when there is none.
size_t aha_utf8_valid_prefix(const char *s, size_t n, int allow_nul);
// Copy s[0..n) to out as valid UTF-8, each invalid byte replaced by U+FFFD,
// NUL-terminated; out holds 3 * n + 1 bytes. Returns the bytes written + 1.
size_t aha_utf8_sanitize(const char *s, size_t n, char *out);
