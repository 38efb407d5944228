// The store's handle (store.h). An append writes its record (with the
// unfinished chunk before it) as a new part file; parts are merged into
// blocks as the store grows; each append ends by atomically replacing the
// index, the one file that names the parts. See "Crash safety" in
// docs/trace-format.md.
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "publish.h"
#include "store_block.h"
#include "store_index.h"
#include "store_piece.h"
#include "store_remap.h"

// ---- the handle ----

int trace_store_new(trace_store **out, const char *path, const trace_store_def *def) {
    *out = NULL;
    trace_store *s = aha_calloc(1, sizeof *s, "store");
    if (!s) return -1;
    s->lock_fd = -1;
    const char *base = strrchr(path, '/');
    s->path = strdup(path);
    s->dir = base ? strndup(path, (size_t)(base - path + (base == path))) : strdup(".");
    s->parts_dir = malloc(strlen(path) + 7);
    s->parts_rel = malloc(strlen(path) + 7);
    if (!s->path || !s->dir || !s->parts_dir || !s->parts_rel) {
        aha_err("%s: out of memory", path);
        trace_store_free(s);
        return -1;
    }
    sprintf(s->parts_dir, "%s.parts", path);
    sprintf(s->parts_rel, "%s.parts", base ? base + 1 : path);
    snprintf(s->what, sizeof s->what, "%s", def->what);
    s->header = def->header;
    s->ctx = def->ctx;
    s->tc = def->chunk;
    const char *axes[2][2] = {{def->axis_t, def->axis_t_desc}, {def->axis_rec, def->axis_rec_desc}};
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        s->axis[k] = axes[k][0] ? strdup(axes[k][0]) : NULL;
        s->axis_desc[k] = axes[k][0] ? strdup(axes[k][1] ? axes[k][1] : "") : NULL;
        ok = ok && (!axes[k][0] || (s->axis[k] && s->axis_desc[k]));
    }
    if (!ok) {
        aha_err("%s: out of memory", path);
        trace_store_free(s);
        return -1;
    }
    // No HDF5 exit hook: after a failed write (a full disk) HDF5 1.10 cannot
    // close that file, and the hook would crash retrying. Every file the
    // store opens it closes. (A no-op once HDF5 has been used.)
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    static const int64_t zero = 0; // the ends' value before the first record
    const trace_store_col ends = {.path = def->ends, .rank = 1, .rows = 1, .width = 1, .ftype = H5T_STD_I64LE,
                                  .mtype = H5T_NATIVE_INT64, .fill = &zero, .desc = def->ends_desc,
                                  .dims = {def->ends_dim}};
    char lock_what[64];
    snprintf(lock_what, sizeof lock_what, "this %s", s->what);
    // One writer per store: the lock of its path (common/publish.h), held
    // until trace_store_free (the kernel drops it when a process dies); one
    // another process holds is refused, naming that process.
    if (trace_store_add_rec(s, &ends) < 0 || aha_lock_take(s->path, lock_what, &s->lock_fd) < 0) {
        trace_store_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

static int add(trace_store *s, store_col **cols, int *n, size_t *cap, const trace_store_col *c, int rec) {
    if (aha_grow(cols, cap, (size_t)*n + 1, sizeof **cols, s->path) != 0) return -1;
    if (store_col_own(&(*cols)[*n], c, rec, s->path) < 0) return -1;
    ++*n;
    return 0;
}

int trace_store_add(trace_store *s, const trace_store_col *c) {
    return add(s, &s->cols, &s->n_cols, &s->cap_cols, c, 0);
}

int trace_store_add_rec(trace_store *s, const trace_store_col *c) {
    return add(s, &s->recs, &s->n_recs, &s->cap_recs, c, 1);
}

void trace_store_free(trace_store *s) {
    if (!s) return;
    aha_lock_drop(s->path, s->lock_fd);
    for (int i = 0; i < s->n_cols; i++) store_col_drop(&s->cols[i]);
    for (int j = 0; j < s->n_recs; j++) store_col_drop(&s->recs[j]);
    free(s->cols);
    free(s->recs);
    free(s->parts);
    free(s->drop);
    free(s->buf);
    free(s->path);
    free(s->dir);
    free(s->parts_dir);
    free(s->parts_rel);
    for (int k = 0; k < 2; k++) {
        free(s->axis[k]);
        free(s->axis_desc[k]);
    }
    free(s);
}

void trace_store_discard(trace_store *s) {
    if (!s) return;
    char tmp[4096], why[1024];
    snprintf(why, sizeof why, "%s", aha_errmsg()); // the error that stopped the writer stays the one said
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    unlink(tmp);
    unlink(s->path);
    store_parts_clean(s, s->parts_dir, CLEAN_ALL);
    trace_store_free(s);
    aha_err("%s", why);
}

trace_store_state trace_store_get(const trace_store *s) {
    return (trace_store_state){0, s->n_rec, s->n_tok, s->tc, s->id};
}

// A new store's id: random, so that no two stores' part files share names.
static int64_t id_new(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
        v = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid();
    return (int64_t)(v >> 1); // non-negative: it prints the same in every tool
}

// ---- create, resume ----

int trace_store_create(trace_store *s, int force) {
    char tmp[4096];
    s->id = id_new();
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    if (!force && access(s->path, F_OK) == 0) {
        aha_err("%s: exists (use --force to overwrite)", s->path);
        return -1;
    }
    if (force && unlink(s->path) != 0 && errno != ENOENT) {
        aha_err("%s: cannot remove the old %s (%s)", s->path, s->what, strerror(errno));
        return -1;
    }
    // A parts folder without its index: debris of a create killed early
    // (only .tmp files) goes; parts of a store whose index was renamed stay.
    int n = force ? 0 : store_parts_clean(s, s->parts_dir, CLEAN_COUNT);
    if (n > 0) aha_err("%s: holds parts of another %s (use --force to remove them)", s->parts_dir, s->what);
    if (n != 0 || store_parts_clean(s, s->parts_dir, CLEAN_ALL) < 0) return -1;
    if (mkdir(s->parts_dir, 0777) != 0) {
        aha_err("%s: cannot create (%s)", s->parts_dir, strerror(errno));
        return -1;
    }
    // link() publishes the index without replacing a file created meanwhile.
    if (store_write_index(s, tmp, 0) < 0 || aha_fsync(tmp, 0) < 0) goto fail_dir;
    if (link(tmp, s->path) != 0) {
        if (errno == EEXIST) {
            aha_err("%s: exists (use --force to overwrite)", s->path);
            goto fail_dir;
        }
        if (rename(tmp, s->path) != 0) { // no hard links on this file system
            aha_err("%s: cannot create (%s)", s->path, strerror(errno));
            goto fail_dir;
        }
    }
    unlink(tmp);
    return aha_fsync(s->dir, 1);
fail_dir:
    unlink(tmp);
    rmdir(s->parts_dir);
    return -1;
}

int trace_store_resume(trace_store *s, const trace_store_state *st) {
    char tmp[4096];
    s->n_rec = st->n_rec;
    s->n_tok = st->n;
    s->tc = st->chunk;
    s->id = st->id;
    if (store_remap(s) < 0 || store_parts_check(s) < 0) return -1;
    free(s->parts_dir);
    if (!(s->parts_dir = malloc(strlen(s->dir) + strlen(s->parts_rel) + 2))) {
        aha_err("out of memory");
        return -1;
    }
    sprintf(s->parts_dir, "%s/%s", s->dir, s->parts_rel);
    if (mkdir(s->parts_dir, 0777) != 0 && errno != EEXIST) {
        aha_err("%s: cannot create (%s)", s->parts_dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < s->n_parts; i++) {
        char part[4096];
        store_part_paths(s, s->parts[i].name, part, NULL, sizeof part);
        if (access(part, R_OK) != 0) {
            aha_err("%s: part file %s is missing (%s)", s->path, part, strerror(errno));
            return -1;
        }
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    unlink(tmp); // left by a run killed while writing the index
    return store_parts_clean(s, s->parts_dir, CLEAN_ORPHANS) < 0 ? -1 : 0;
}

// ---- append, commit, close ----

int trace_store_append(trace_store *s, const trace_store_rec *r) {
    if (s->failed) {
        aha_err("%s: an earlier write failed; resume the %s to go on", s->path, s->what);
        return -1;
    }
    // HDF5's error printing is per thread, and a caller may append from its
    // own writer thread: errors come back as messages there too.
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const int64_t T = s->n_tok;
    const int64_t a = T / s->tc * s->tc;
    const int64_t end = T + r->n;
    int64_t back = 0;
    store_part p = {.level = -1, .t0 = a, .n_tok = end - a, .v0 = a, .v1 = end, .dv1 = s->n_rec + 2};
    char path[4096], tmp[4096];
    store_part_name(s, p.name, 'p', a, end);
    store_part_paths(s, p.name, path, tmp, sizeof path);
    s->failed = 1; // until the append is committed
    if (store_write_piece(s, r, a, tmp, &back) < 0 || store_publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    // The new piece holds the unfinished chunk [a, T) and its records' ends.
    store_part *last = s->n_parts ? &s->parts[s->n_parts - 1] : NULL;
    if (a < T) {
        last->v1 = a;
        last->dv1 -= back;
        if (last->v0 == a) { // it held only that chunk
            if (store_drop_push(s, last->name) < 0) return -1;
            s->n_parts--;
        }
    }
    p.d0 = s->n_rec + 1 - back;
    p.dv0 = p.d0;
    p.n_doc = back + 1;
    if (store_parts_insert(s, s->n_parts, &p) < 0) return -1;
    s->n_tok = end;
    s->n_rec++;
    if (store_compact(s) < 0 || store_commit(s) < 0) return -1;
    s->failed = 0;
    return 0;
}

int trace_store_commit(trace_store *s) { return store_commit(s); }

int trace_store_close(trace_store *s) {
    if (!s) return 0;
    char tmp[4096];
    int rc = -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    if (s->failed) {
        aha_err("%s: not completed: an earlier write failed (resume the %s to finish it)", s->path, s->what);
    } else if (store_write_index(s, tmp, 1) < 0 || store_publish(tmp, s->path) < 0 || aha_fsync(s->dir, 1) < 0) {
        unlink(tmp);
    } else {
        rc = store_parts_clean(s, s->parts_dir, CLEAN_ALL) < 0 ? -1 : 0; // nothing names them now
    }
    trace_store_free(s);
    return rc;
}

int64_t trace_store_peak_bytes(const trace_store_col *cols, int n_cols, int64_t chunk, int64_t final_bytes) {
    int64_t bytes = 0; // of one chunk of every column
    for (int i = 0; i < n_cols; i++) {
        const trace_store_col *c = &cols[i];
        bytes += (int64_t)H5Tget_size(c->ftype) * chunk * (c->rank == 3 ? (int64_t)c->rows * c->width : 1);
    }
    return 2 * final_bytes + (STORE_BLOCK_CHUNKS + 1) * bytes;
}
