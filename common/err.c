#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char errbuf[1024];

void aha_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
}

const char *aha_errmsg(void) { return errbuf[0] ? errbuf : "unknown error"; }

void aha_err_prefix(const char *path) {
    size_t n = strlen(path);
    if (strncmp(errbuf, path, n) == 0 && errbuf[n] == ':') return;
    char tmp[2 * sizeof errbuf];
    snprintf(tmp, sizeof tmp, "%s: %s", path, errbuf);
    memcpy(errbuf, tmp, sizeof errbuf - 1); // truncation is fine for a message
    errbuf[sizeof errbuf - 1] = '\0';
}

void *aha_malloc(size_t n, size_t size, const char *what) {
    if (size && n > (size_t)-1 / size) {
        aha_err("%s: size overflow (%zu x %zu bytes)", what, n, size);
        return NULL;
    }
    size_t bytes = n * size;
    void *p = malloc(bytes ? bytes : 1);
    if (!p) aha_err("%s: out of memory (%zu bytes)", what, n * size);
    return p;
}

void *aha_calloc(size_t n, size_t size, const char *what) {
    if (size && n > (size_t)-1 / size) {
        aha_err("%s: size overflow (%zu x %zu bytes)", what, n, size);
        return NULL;
    }
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) aha_err("%s: out of memory (%zu bytes)", what, n * size);
    return p;
}
