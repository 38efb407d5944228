// The parts folder and the part list: durable publishing (fsync, then
// rename), the one-writer lock, cleaning, merging parts into blocks, and the
// commit that makes a new state visible. See "Crash safety" in
// docs/trace-format.md.
#include "trace_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "err.h"

// ---- the parts folder ----

int trace_fsync(const char *path, int is_dir) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        aha_err("%s: fsync failed: %s", path, strerror(e));
        return -1;
    }
    close(fd);
    return 0;
}

// A part file's path, and (tmp not NULL) the temporary name it is written under.
void trace_part_paths(const aha_trace *t, const char *name, char *path, char *tmp, size_t size) {
    snprintf(path, size, "%s/%s", t->parts_dir, name);
    if (tmp) snprintf(tmp, size, "%s/%s.tmp", t->parts_dir, name);
}

// A finished temporary file takes its name: on disk first, then renamed, so
// the name never shows a partial file.
int trace_publish(const char *tmp, const char *path) {
    if (trace_fsync(tmp, 0) < 0) return -1;
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

// Array a of n elements (capacity *cap) with room for one more: a, a larger
// copy, or NULL.
static void *grow(const aha_trace *t, void *a, int n, int *cap, size_t size) {
    if (n < *cap) return a;
    int c = *cap ? 2 * *cap : 16;
    void *p = realloc(a, (size_t)c * size);
    if (!p) {
        aha_err("%s: out of memory", t->path);
        return NULL;
    }
    *cap = c;
    return p;
}

int trace_drop_push(aha_trace *t, const char *name) {
    char(*d)[48] = grow(t, t->drop, t->n_drop, &t->cap_drop, sizeof *d);
    if (!d) return -1;
    t->drop = d;
    snprintf(t->drop[t->n_drop++], sizeof *t->drop, "%s", name);
    return 0;
}

// One writer per trace: an exclusive lock on the parts folder, held until
// aha_trace_free (the kernel drops it when a process dies).
int trace_parts_lock(aha_trace *t) {
    t->lock_fd = open(t->parts_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t->lock_fd >= 0 && flock(t->lock_fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno == EWOULDBLOCK) aha_err("%s: another process is writing this trace", t->path);
    else aha_err("%s: cannot lock (%s)", t->parts_dir, strerror(errno));
    return -1;
}

// Make the new state durable: the parts reach the disk before the index
// that names them replaces the old one; then the files only the old index
// named are deleted (an undeleted one is only wasted space: resume removes it).
int trace_commit(aha_trace *t) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    if (trace_fsync(t->parts_dir, 1) < 0 || trace_write_index(t, tmp, 0) < 0 ||
        trace_publish(tmp, t->path) < 0) {
        unlink(tmp);
        return -1;
    }
    if (trace_fsync(t->dir, 1) < 0) return -1;
    for (int i = 0; i < t->n_drop; i++) {
        trace_part_paths(t, t->drop[i], path, NULL, sizeof path);
        unlink(path);
    }
    t->n_drop = 0;
    return 0;
}

// ---- the part list ----

int trace_parts_insert(aha_trace *t, int at, const trace_part *p) {
    trace_part *q = grow(t, t->parts, t->n_parts, &t->cap_parts, sizeof *q);
    if (!q) return -1;
    t->parts = q;
    memmove(t->parts + at + 1, t->parts + at, (size_t)(t->n_parts - at) * sizeof *p);
    t->parts[at] = *p;
    t->n_parts++;
    return 0;
}

static int block_level(const aha_trace *t, int64_t n_tok) {
    int level = 0;
    for (int64_t chunks = TRACE_BLOCK_CHUNKS; chunks * t->tc < n_tok; chunks *= TRACE_FANOUT)
        level++;
    return level;
}

// Write tokens [b0, b1) as one block and let it replace the parts it covers.
static int block(aha_trace *t, int64_t b0, int64_t b1) {
    trace_part b = {
        .level = block_level(t, b1 - b0), .t0 = b0, .n_tok = b1 - b0, .v0 = b0, .v1 = b1};
    char path[4096], tmp[4096];
    int64_t taken = 0;
    snprintf(b.name, sizeof b.name, "b%012" PRId64 "-%012" PRId64 ".h5", b0, b1);
    trace_part_paths(t, b.name, path, tmp, sizeof path);
    if (trace_write_block(t, tmp, b0, b1, &taken) < 0 || trace_publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    int i = 0, j;
    while (t->parts[i].v1 <= b0) i++;
    b.d0 = b.dv0 = t->parts[i].dv0;
    for (j = i; j < t->n_parts && t->parts[j].v1 <= b1; j++)
        if (trace_drop_push(t, t->parts[j].name) < 0) return -1;
    if (j < t->n_parts && t->parts[j].v0 < b1) t->parts[j].v0 = b1, t->parts[j].dv0 += taken;
    b.dv1 = j < t->n_parts ? t->parts[j].dv0 : t->n_docs + 1;
    b.n_doc = b.dv1 - b.dv0;
    memmove(t->parts + i, t->parts + j, (size_t)(t->n_parts - j) * sizeof *t->parts);
    t->n_parts -= j - i;
    return trace_parts_insert(t, i, &b);
}

// Keep the part count logarithmic in T: the full chunks after the blocks
// become a level-0 block once there are TRACE_BLOCK_CHUNKS of them, and
// FANOUT blocks of one level become one of the next. Blocks copy compressed
// chunks as stored: a chunk is compressed once and copied O(log T) times.
int trace_merge(aha_trace *t) {
    for (;;) {
        int nb = 0;
        while (nb < t->n_parts && t->parts[nb].level >= 0) nb++;
        int64_t bend = nb ? t->parts[nb - 1].v1 : 0, full = t->n_tok / t->tc * t->tc;
        int same = nb >= TRACE_FANOUT;
        for (int i = nb - TRACE_FANOUT; same && i < nb - 1; i++)
            same = t->parts[i].level == t->parts[nb - 1].level;
        int rc = 0;
        if (same)
            rc = block(t, t->parts[nb - TRACE_FANOUT].v0, bend);
        else if (full - bend >= TRACE_BLOCK_CHUNKS * t->tc)
            rc = block(t, bend, bend + TRACE_BLOCK_CHUNKS * t->tc);
        else
            return 0;
        if (rc < 0) return -1;
    }
}

// The index's parts, checked: token ranges tile [0, T), entry ranges tile
// [1, n_docs + 1) (a part may hold no entry: a block inside a long document).
int trace_parts_check(aha_trace *t) {
    int64_t v = 0, dv = 1;
    for (int i = 0; i < t->n_parts; i++) {
        trace_part *p = &t->parts[i];
        p->level = p->name[0] == 'b' ? block_level(t, p->n_tok) : -1;
        if (p->dv1 == 0) p->d0 = p->dv0 = p->dv1 = dv;
        if (p->v0 != v || p->v1 <= p->v0 || p->dv0 != dv || p->dv1 < p->dv0) break;
        v = p->v1, dv = p->dv1;
    }
    if (v == t->n_tok && dv == t->n_docs + 1) return 0;
    aha_err("%s: the trace index is inconsistent (its parts do not cover tokens [0, %" PRId64 "))",
            t->path, t->n_tok);
    return -1;
}
