// The parts folder and the part list: paths, durable publishing (fsync,
// then rename), the one-writer lock, cleaning; and the handle's scratch
// buffer. See "Crash safety" in docs/trace-format.md.
#include "trace_impl.h"

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

void *trace_scratch(aha_trace *t, size_t bytes) {
    return aha_grow(&t->buf, &t->buf_size, bytes, 1, t->path) == 0 ? t->buf : NULL;
}

// A part file's path, and (tmp not NULL) the temporary name it is written under.
void trace_part_paths(const aha_trace *t, const char *name, char *path, char *tmp, size_t size) {
    snprintf(path, size, "%s/%s", t->parts_dir, name);
    if (tmp) snprintf(tmp, size, "%s/%s.tmp", t->parts_dir, name);
}

// The name of a part holding tokens [t0, t1): kind 'p' (a piece) or 'b' (a block).
void trace_part_name(const aha_trace *t, char name[48], char kind, int64_t t0, int64_t t1) {
    snprintf(name, 48, "%c%016" PRIx64 "-%012" PRId64 "-%012" PRId64 ".h5", kind, (uint64_t)t->id, t0, t1);
}

// Part file p of the parts folder, read-only.
hid_t trace_part_open(const aha_trace *t, const trace_part *p) {
    char path[4096];
    trace_part_paths(t, p->name, path, NULL, sizeof path);
    hid_t f = trace_file_open(path, 1);
    if (f < 0) trace_h5_fail(path, "opening");
    return f;
}

// A finished temporary file takes its name: on disk first, then renamed, so
// the name never shows a partial file.
int trace_publish(const char *tmp, const char *path) {
    if (aha_fsync(tmp, 0) < 0) return -1;
    if (rename(tmp, path) != 0) {
        aha_err("%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        return -1;
    }
    return 0;
}

// The index of the part named name in the part list, or -1.
int trace_part_find(const aha_trace *t, const char *name) {
    for (int i = 0; i < t->n_parts; i++)
        if (strcmp(t->parts[i].name, name) == 0) return i;
    return -1;
}

// The part files in dir (p*.h5, b*.h5 and their .tmp): count the .h5 ones
// (CLEAN_COUNT), delete those the index does not name (CLEAN_ORPHANS), or
// delete all and dir (CLEAN_ALL). Returns the count of .h5 parts seen, or
// -1. No dir: 0.
int trace_parts_clean(const aha_trace *t, const char *dir, int mode) {
    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT) return 0;
        aha_err("%s: cannot read (%s)", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *s = e->d_name;
        size_t len = strlen(s);
        int h5 = len > 3 && strcmp(s + len - 3, ".h5") == 0;
        if ((s[0] != 'p' && s[0] != 'b') || !(h5 || (len > 4 && strcmp(s + len - 4, ".tmp") == 0)))
            continue;
        n += h5;
        if (mode == CLEAN_ALL || (mode == CLEAN_ORPHANS && trace_part_find(t, s) < 0))
            unlinkat(dirfd(dp), s, 0);
    }
    closedir(dp);
    if (mode == CLEAN_ALL && rmdir(dir) != 0) {
        aha_err("%s: cannot remove (%s)", dir, strerror(errno));
        return -1;
    }
    return n;
}

int trace_drop_push(aha_trace *t, const char *name) {
    if (aha_grow(&t->drop, &t->cap_drop, (size_t)t->n_drop + 1, sizeof *t->drop, t->path) != 0) return -1;
    snprintf(t->drop[t->n_drop++], sizeof *t->drop, "%s", name);
    return 0;
}

// One writer per trace: the lock of its path (common/publish.h), held until
// aha_trace_free (the kernel drops it when a process dies); one another
// process holds is refused, naming that process.
int trace_parts_lock(aha_trace *t) { return aha_lock_take(t->path, "this trace", &t->lock_fd); }

// ---- the part list ----

int trace_parts_insert(aha_trace *t, int at, const trace_part *p) {
    if (aha_grow(&t->parts, &t->cap_parts, (size_t)t->n_parts + 1, sizeof *t->parts, t->path) != 0) return -1;
    memmove(t->parts + at + 1, t->parts + at, (size_t)(t->n_parts - at) * sizeof *p);
    t->parts[at] = *p;
    t->n_parts++;
    return 0;
}

// The level of a block of n_tok tokens: k for TRACE_BLOCK_CHUNKS * FANOUT^k chunks.
int trace_block_level(const aha_trace *t, int64_t n_tok) {
    int level = 0;
    for (int64_t chunks = TRACE_BLOCK_CHUNKS; chunks * t->tc < n_tok; chunks *= TRACE_FANOUT)
        level++;
    return level;
}

// The index's parts, checked: token ranges tile [0, T), entry ranges tile
// [1, n_docs + 1) (a part may hold no entry: a block inside a long document).
int trace_parts_check(aha_trace *t) {
    int64_t v = 0, dv = 1;
    for (int i = 0; i < t->n_parts; i++) {
        trace_part *p = &t->parts[i];
        p->level = p->name[0] == 'b' ? trace_block_level(t, p->n_tok) : -1;
        if (p->dv1 == 0) p->d0 = p->dv0 = p->dv1 = dv;
        if (p->v0 != v || p->v1 <= p->v0 || p->dv0 != dv || p->dv1 < p->dv0) break;
        v = p->v1, dv = p->dv1;
    }
    if (v == t->n_tok && dv == t->n_docs + 1) return 0;
    aha_err("%s: the trace index is inconsistent (its parts do not cover tokens [0, %" PRId64 "))",
            t->path, t->n_tok);
    return -1;
}
