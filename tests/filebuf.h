// Crafted model files for the format tests: build bytes in memory, write them
// into a private temp dir, check that a reader refuses them properly.
#pragma once
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "err.h"

#define N(a) (int)(sizeof a / sizeof *a)

static char tmpdir[] = "/tmp/aha_test_XXXXXX"; // made by tmpdir_make()

// A file's bytes are built in an aha_buf (common/buf.h).
static inline void put(aha_buf *b, const void *x, size_t n) { aha_buf_add(b, x, n); }
static inline void put_u32(aha_buf *b, uint32_t v) { put(b, &v, 4); } // little-endian host
static inline void put_u64(aha_buf *b, uint64_t v) { put(b, &v, 8); }
static inline void put_str(aha_buf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static inline void pad_to(aha_buf *b, size_t align) {
    while (b->len % align) put(b, "", 1);
}

// Write b to tmpdir/name and return the path (static storage); frees b.
static inline const char *write_tmp(const char *name, aha_buf *b) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    CHECK(!b->failed, "%s: %s", name, aha_errmsg()); // a file cut short would test the wrong thing
    FILE *f = fopen(path, "wb");
    if (f) {
        if (b->len) fwrite(b->p, 1, b->len, f);
        fclose(f);
    }
    aha_buf_free(b);
    return path;
}

static inline void check_refused(int rc, const char *path, const char *phrase) {
    const char *msg = aha_errmsg();
    CHECK(rc == -1, "opened a bad file");
    CHECK(strstr(msg, path) && strstr(msg, phrase) && !strchr(msg, '\n'),
          "message '%s' lacks '%s' or the path", msg, phrase);
    unlink(path);
}

static inline int tmpdir_make(void) {
    if (mkdtemp(tmpdir)) return 0;
    perror("mkdtemp");
    return -1;
}
