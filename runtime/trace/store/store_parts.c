// The parts folder and the part list: paths, durable publishing (fsync,
// then rename), cleaning; and the handle's scratch buffer. See "Crash
// safety" in docs/trace-format.md.
#include "store_parts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "publish.h"

// ---- the parts folder ----

void *store_scratch(trace_store *s, size_t bytes) {
    return aha_grow(&s->buf, &s->buf_size, bytes, 1, s->path) == 0 ? s->buf : NULL;
}

// A part file's path, and (tmp not NULL) the temporary name it is written under.
void store_part_paths(const trace_store *s, const char *name, char *path, char *tmp, size_t size) {
    snprintf(path, size, "%s/%s", s->parts_dir, name);
    if (tmp) snprintf(tmp, size, "%s/%s.tmp", s->parts_dir, name);
}

// The name of a part holding [t0, t1) along T: kind 'p' (a piece) or 'b' (a block).
void store_part_name(const trace_store *s, char name[48], char kind, int64_t t0, int64_t t1) {
    snprintf(name, 48, "%c%016" PRIx64 "-%012" PRId64 "-%012" PRId64 ".h5", kind, (uint64_t)s->id, t0, t1);
}

// Part file p of the parts folder, read-only.
hid_t store_part_open(const trace_store *s, const store_part *p) {
    char path[4096];
    store_part_paths(s, p->name, path, NULL, sizeof path);
    hid_t f = trace_file_open(path, 1);
    if (f < 0) trace_h5_fail(path, "opening");
    return f;
}

// A finished temporary file takes its name: on disk first, then renamed, so
// the name never shows a partial file.
int store_publish(const char *tmp, const char *path) {
    if (aha_fsync(tmp, 0) < 0) return -1;
    if (rename(tmp, path) != 0) {
        aha_err("%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        return -1;
    }
    return 0;
}

// The index of the part named name in the part list, or -1.
int store_part_find(const trace_store *s, const char *name) {
    for (int i = 0; i < s->n_parts; i++)
        if (strcmp(s->parts[i].name, name) == 0) return i;
    return -1;
}

// The part files in dir (p*.h5, b*.h5 and their .tmp): count the .h5 ones
// (CLEAN_COUNT), delete those the index does not name (CLEAN_ORPHANS), or
// delete all and dir (CLEAN_ALL). Returns the count of .h5 parts seen, or
// -1. No dir: 0.
int store_parts_clean(const trace_store *s, const char *dir, int mode) {
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT) return 0;
        aha_err("%s: cannot read (%s)", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        int h5 = len > 3 && strcmp(name + len - 3, ".h5") == 0;
        if ((name[0] != 'p' && name[0] != 'b') || !(h5 || (len > 4 && strcmp(name + len - 4, ".tmp") == 0)))
            continue;
        n += h5;
        if (mode == CLEAN_ALL || (mode == CLEAN_ORPHANS && store_part_find(s, name) < 0))
            unlinkat(dirfd(dp), name, 0);
    }
    closedir(dp);
    if (mode == CLEAN_ALL && rmdir(dir) != 0) {
        aha_err("%s: cannot remove (%s)", dir, strerror(errno));
        return -1;
    }
    return n;
}

int store_drop_push(trace_store *s, const char *name) {
    if (aha_grow(&s->drop, &s->cap_drop, (size_t)s->n_drop + 1, sizeof *s->drop, s->path) != 0) return -1;
    snprintf(s->drop[s->n_drop++], sizeof *s->drop, "%s", name);
    return 0;
}

// ---- the part list ----

int store_parts_insert(trace_store *s, int at, const store_part *p) {
    if (aha_grow(&s->parts, &s->cap_parts, (size_t)s->n_parts + 1, sizeof *s->parts, s->path) != 0) return -1;
    memmove(s->parts + at + 1, s->parts + at, (size_t)(s->n_parts - at) * sizeof *p);
    s->parts[at] = *p;
    s->n_parts++;
    return 0;
}

// The level of a block of n_tok elements along T: k for STORE_BLOCK_CHUNKS * FANOUT^k chunks.
int store_block_level(const trace_store *s, int64_t n_tok) {
    int level = 0;
    for (int64_t chunks = STORE_BLOCK_CHUNKS; chunks * s->tc < n_tok; chunks *= STORE_FANOUT)
        level++;
    return level;
}

// The index's parts, checked: ranges along T tile [0, T), value ranges tile
// [1, n_rec + 1) (a part may hold no value: a block inside a long record).
int store_parts_check(trace_store *s) {
    int64_t v = 0, dv = 1;
    for (int i = 0; i < s->n_parts; i++) {
        store_part *p = &s->parts[i];
        p->level = p->name[0] == 'b' ? store_block_level(s, p->n_tok) : -1;
        if (p->dv1 == 0) { // no value mapped: an empty range where the values stand
            p->d0 = dv;
            p->dv0 = dv;
            p->dv1 = dv;
        }
        if (p->v0 != v || p->v1 <= p->v0 || p->dv0 != dv || p->dv1 < p->dv0) break;
        v = p->v1;
        dv = p->dv1;
    }
    if (v == s->n_tok && dv == s->n_rec + 1) return 0;
    aha_err("%s: the %s index is inconsistent (its parts do not cover tokens [0, %" PRId64 "))", s->path,
            s->what, s->n_tok);
    return -1;
}
