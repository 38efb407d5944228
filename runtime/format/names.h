// Names read from model files (tensor names, metadata keys): checks shared by
// the safetensors and GGUF parsers.
#pragma once
#include <stddef.h>

// 1 when s[0..len) is non-empty and has no NUL or other control byte, so it is
// safe as a C string and inside a one-line error message; else 0.
int aha_name_ok(const char *s, size_t len);
// Sort names[0..n) in place and return a name that occurs twice, NULL if none.
const char *aha_names_dup(const char **names, size_t n);
