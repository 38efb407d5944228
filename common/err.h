// One-line errors. The layer that finds a problem writes a message naming the
// file and what is wrong; callers return -1 up the stack and the CLI prints it.
#pragma once
#include <stddef.h>

void aha_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *aha_errmsg(void);
// Prefix the current message with "path: " (once), for layers that know the
// file only after a lower layer failed.
void aha_err_prefix(const char *path);

// Allocation that reports instead of aborting; n*size is overflow-checked.
void *aha_calloc(size_t n, size_t size, const char *what);
void *aha_malloc(size_t n, size_t size, const char *what);
