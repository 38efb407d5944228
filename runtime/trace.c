// The trace writer's API. An append writes its document (with the unfinished
// chunk before it) as a new part file; parts are merged into blocks as the
// trace grows; each append ends by atomically replacing the index, the one
// file that names the parts. See "Crash safety" in docs/trace-format.md.
#include "trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "trace_impl.h"
#include "version.h"

static char *str_dup(const char *s) { return strdup(s ? s : ""); }

// ---- meta ----

static void meta_free(aha_trace_meta *m) {
    free((char *)m->model_path);
    free((char *)m->arch);
    free((char *)m->router);
    free((char *)m->mode);
    free((char *)m->dataset);
    free((char *)m->command_line);
    free((float *)m->eps);
    free((int *)m->windows);
    memset(m, 0, sizeof *m);
}

static int meta_copy(aha_trace_meta *d, const aha_trace_meta *s) {
    *d = *s;
    d->model_path = str_dup(s->model_path), d->arch = str_dup(s->arch),
    d->router = str_dup(s->router);
    d->mode = str_dup(s->mode), d->dataset = str_dup(s->dataset),
    d->command_line = str_dup(s->command_line);
    float *eps = malloc((size_t)s->n_eps * sizeof *eps + 1);
    int *win = malloc((size_t)s->n_windows * sizeof *win + 1);
    if (eps) memcpy(eps, s->eps, (size_t)s->n_eps * sizeof *eps);
    if (win) memcpy(win, s->windows, (size_t)s->n_windows * sizeof *win);
    d->eps = eps, d->windows = win;
    return d->model_path && d->arch && d->router && d->mode && d->dataset && d->command_line &&
                   eps && win
               ? 0
               : -1;
}

static int meta_check(const aha_trace_meta *m, const char *path) {
    const char *bad = NULL;
    if (!m->model_path || !m->arch || !m->router || !m->mode)
        bad = "model_path, arch, router and mode are required";
    else if (m->n_layers < 1 || m->n_heads < 1)
        bad = "n_layers and n_heads must be >= 1";
    else if (m->n_eps < 0 || (m->n_eps > 0 && !m->eps))
        bad = "bad eps list";
    else if (m->n_windows < 0 || (m->n_windows > 0 && !m->windows))
        bad = "bad windows list";
    else if (m->werr && m->n_windows < 1)
        bad = "window errors need windows";
    else if (m->chunk_tokens < 0)
        bad = "chunk_tokens < 0";
    for (int i = 0; !bad && i < m->n_eps; i++) {
        char a[32], b[32];
        if (!(m->eps[i] >= 0 && m->eps[i] <= 1)) bad = "eps must be in [0, 1]";
        snprintf(a, sizeof a, "%g", m->eps[i]);
        for (int j = 0; !bad && j < i; j++)
            if (snprintf(b, sizeof b, "%g", m->eps[j]), strcmp(a, b) == 0)
                bad = "eps values repeat";
    }
    for (int i = 0; !bad && i < m->n_windows; i++) {
        if (m->windows[i] < 1) bad = "windows must be >= 1";
        for (int j = 0; !bad && j < i; j++)
            if (m->windows[j] == m->windows[i]) bad = "windows repeat";
    }
    if (bad) aha_err("%s: cannot write a trace: %s", path, bad);
    return bad ? -1 : 0;
}

static void list_fmt(char *out, size_t size, const float *f, const int *w, int n) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)(f ? snprintf(out + k, size - k, "%s%g", i ? "," : "", f[i])
                        : snprintf(out + k, size - k, "%s%d", i ? "," : "", w[i]));
}

// The first field in which what the trace recorded (f) and what this run
// records (m) differ, as an error.
static int meta_diff(const char *path, const aha_trace_meta *f, const aha_trace_meta *m) {
    char a[512] = "", b[512] = "";
    const char *field = NULL;
#define STR(name, x)                                                                               \
    if (!field && strcmp(f->x, m->x ? m->x : "") != 0)                                             \
        field = name, snprintf(a, sizeof a, "%s", f->x),                                           \
        snprintf(b, sizeof b, "%s", m->x ? m->x : "");
#define INT(name, x)                                                                               \
    if (!field && f->x != m->x)                                                                    \
        field = name, snprintf(a, sizeof a, "%d", f->x), snprintf(b, sizeof b, "%d", m->x);
    STR("model", model_path)
    STR("architecture", arch)
    INT("n_layers", n_layers)
    INT("n_heads", n_heads)
    INT("n_kv_heads", n_kv_heads)
    INT("head_dim", head_dim)
    INT("vocab", vocab)
    INT("aha", aha)
    STR("router", router)
    if (!field && f->tau != m->tau)
        field = "tau", snprintf(a, sizeof a, "%g", f->tau), snprintf(b, sizeof b, "%g", m->tau);
    if (!field &&
        (f->n_eps != m->n_eps || memcmp(f->eps, m->eps, (size_t)m->n_eps * sizeof *m->eps) != 0)) {
        field = "eps";
        list_fmt(a, sizeof a, f->eps, NULL, f->n_eps);
        list_fmt(b, sizeof b, m->eps, NULL, m->n_eps);
    }
    if (!field &&
        (f->n_windows != m->n_windows ||
         memcmp(f->windows, m->windows, (size_t)m->n_windows * sizeof *m->windows) != 0)) {
        field = "windows";
        list_fmt(a, sizeof a, NULL, f->windows, f->n_windows);
        list_fmt(b, sizeof b, NULL, m->windows, m->n_windows);
    }
    INT("sinks", sinks)
    INT("werr", werr)
    STR("mode", mode)
    STR("dataset", dataset)
#undef STR
#undef INT
    if (field) aha_err("%s: cannot resume: %s differs (trace: %s; now: %s)", path, field, a, b);
    return field ? -1 : 0;
}

// ---- columns and runs ----

static int cols_push(aha_trace *t, const char *path, int rank, int type, int src, int idx,
                     const char *attr, double attr_value, const char *fmt, ...) {
    trace_col *c = realloc(t->cols, (size_t)(t->n_cols + 1) * sizeof *c);
    if (!c) {
        aha_err("%s: out of memory", t->path);
        return -1;
    }
    t->cols = c;
    c = &t->cols[t->n_cols++];
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->rank = rank, c->type = type, c->src = src, c->idx = idx;
    c->attr = attr, c->attr_value = attr_value;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->desc, sizeof c->desc, fmt, ap);
    va_end(ap);
    return 0;
}

static int cols_base(aha_trace *t) {
    const aha_trace_meta *m = &t->m;
    char path[96];
    int rc = 0;
    rc |= cols_push(t, "tokens", 1, TY_I32, SRC_TOKENS, 0, NULL, 0,
                    "Token ids of every document, concatenated (int32 [T]).");
    rc |= cols_push(t, "position", 1, TY_I32, SRC_POSITION, 0, NULL, 0,
                    "Position of each token in its document, from 0 (int32 [T]).");
    rc |= cols_push(t, "token_text", 1, TY_STR, SRC_TEXT, 0, NULL, 0,
                    "Text of each token: its UTF-8 piece (variable-length string [T]).");
    if (m->aha) {
        rc |=
            cols_push(t, "gate", 3, TY_U8, SRC_GATE, 0, NULL, 0,
                      "Learned AHA router decision, sigmoid(router_logit) > tau: 1 = global (full "
                      "attention), 0 = local (window) (uint8 [L, T, H]).");
        rc |= cols_push(t, "router_logit", 3, TY_F16, SRC_LOGIT, 0, NULL, 0,
                        "Learned AHA router logit (float16 [L, T, H]).");
    }
    for (int i = 0; i < m->n_eps; i++) {
        snprintf(path, sizeof path, "dependency/eps_%g", m->eps[i]);
        rc |= cols_push(
            t, path, 3, TY_U32, SRC_DEP, i, "eps", m->eps[i],
            "Dependency distance d_eps for eps = %g: the smallest window w >= 1 whose "
            "attention mass outside the last w keys is <= eps; 1..position+1 (uint32 [L, T, H]).",
            m->eps[i]);
    }
    for (int i = 0; m->werr && i < m->n_windows; i++) {
        snprintf(path, sizeof path, "window_error/w_%d", m->windows[i]);
        rc |= cols_push(
            t, path, 3, TY_F16, SRC_WERR, i, "window", m->windows[i],
            "Relative error ||o_w - o|| / ||o|| of the head's attention output o_w with a "
            "window of %d keys (and %d sink tokens) against full attention (float16 [L, T, H]).",
            m->windows[i], m->sinks);
    }
    return rc;
}

int trace_run_push(aha_trace *t, const char *name, const char *policy, int window) {
    const char *bad = NULL;
    if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strlen(name) > 48)
        bad = "a run name is 1-48 characters without '/'";
    else if (!policy || !policy[0])
        bad = "a run needs a policy";
    else if (window < 0)
        bad = "a run's window is >= 0";
    for (int i = 0; !bad && i < t->n_runs; i++)
        if (strcmp(t->runs[i].name, name) == 0) bad = "run names repeat";
    if (bad) {
        aha_err("%s: run '%s': %s", t->path, name ? name : "", bad);
        return -1;
    }
    trace_run *r = realloc(t->runs, (size_t)(t->n_runs + 1) * sizeof *r);
    if (!r) {
        aha_err("%s: out of memory", t->path);
        return -1;
    }
    t->runs = r;
    r = &t->runs[t->n_runs];
    memset(r, 0, sizeof *r);
    r->name = str_dup(name), r->policy = str_dup(policy), r->window = window;
    r->has_gate = strcmp(policy, "global") != 0;
    if (!r->name || !r->policy) {
        free(r->name);
        free(r->policy);
        aha_err("%s: out of memory", t->path);
        return -1;
    }
    int i = t->n_runs++, rc = 0;
    char path[96];
    snprintf(path, sizeof path, "runs/%s/nll", name);
    rc |= cols_push(
        t, path, 1, TY_F32, SRC_NLL, i, NULL, 0,
        "Next-token negative log-likelihood in nats under this run; NaN for each document's "
        "last token (float32 [T]).");
    snprintf(path, sizeof path, "runs/%s/kl", name);
    rc |= cols_push(
        t, path, 1, TY_F32, SRC_KL, i, NULL, 0,
        "KL(full attention || this run) of the next-token distribution in nats; 0 under full "
        "attention (float32 [T]).");
    if (r->has_gate) {
        snprintf(path, sizeof path, "runs/%s/gate", name);
        rc |= cols_push(t, path, 3, TY_U8, SRC_RUN_GATE, i, NULL, 0,
                        "Decision attention used in this run: 1 = global (full), 0 = local window "
                        "(uint8 [L, T, H]).");
    }
    return rc;
}

// ---- the handle ----

// Tokens per chunk: the power of two that makes a [L, Tc, H] chunk of
// 4-byte values 0.5-1 MiB (a size HDF5 reads and deflates efficiently).
static int64_t chunk_auto(const aha_trace_meta *m) {
    int64_t cells = (int64_t)m->n_layers * m->n_heads, tc = 1;
    while (tc < 65536 && tc * 2 * cells * 4 <= (1 << 20)) tc *= 2;
    return tc;
}

static aha_trace *trace_new(const char *path, const aha_trace_meta *m) {
    aha_trace *t = aha_calloc(1, sizeof *t, "trace");
    if (!t) return NULL;
    t->f16 = t->str = -1;
    t->n_redeclared = -1;
    t->lock_fd = -1;
    const char *base = strrchr(path, '/');
    t->path = str_dup(path);
    t->dir = base ? strndup(path, (size_t)(base - path + (base == path))) : str_dup(".");
    t->parts_dir = malloc(strlen(path) + 7);
    t->parts_rel = malloc(strlen(path) + 7);
    if (!t->path || !t->dir || !t->parts_dir || !t->parts_rel || meta_copy(&t->m, m) < 0) {
        aha_err("%s: out of memory", path);
        aha_trace_free(t);
        return NULL;
    }
    sprintf(t->parts_dir, "%s.parts", path);
    sprintf(t->parts_rel, "%s.parts", base ? base + 1 : path);
    t->tc = m->chunk_tokens ? m->chunk_tokens : chunk_auto(m);
    if (trace_types_init(t) < 0 || cols_base(t) < 0) {
        aha_trace_free(t);
        return NULL;
    }
    return t;
}

static int prov_init(aha_trace *t) {
    trace_prov *p = &t->prov;
    struct utsname u;
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5[32], created[32];
    time_t now = time(NULL);
    struct tm tm;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    p->version = str_dup(aha_version()), p->git_revision = str_dup(aha_git_rev());
    p->compiler = str_dup(aha_compiler()), p->cflags = str_dup(aha_cflags());
    p->host = str_dup(uname(&u) == 0 ? u.nodename : "unknown"), p->hdf5 = str_dup(hdf5);
    p->created = str_dup(created), p->command_line = str_dup(t->m.command_line);
    if (p->version && p->git_revision && p->compiler && p->cflags && p->host && p->hdf5 &&
        p->created && p->command_line)
        return 0;
    aha_err("%s: out of memory", t->path);
    return -1;
}

void aha_trace_free(aha_trace *t) {
    if (!t) return;
    trace_prov *p = &t->prov;
    meta_free(&t->m);
    free(p->version), free(p->git_revision), free(p->compiler), free(p->cflags);
    free(p->host), free(p->hdf5), free(p->created), free(p->command_line);
    for (int i = 0; i < t->n_runs; i++) free(t->runs[i].name), free(t->runs[i].policy);
    if (t->f16 >= 0) H5Tclose(t->f16);
    if (t->str >= 0) H5Tclose(t->str);
    if (t->lock_fd >= 0) close(t->lock_fd);
    free(t->runs), free(t->cols), free(t->parts), free(t->drop), free(t->buf);
    free(t->path), free(t->dir), free(t->parts_dir), free(t->parts_rel);
    free(t);
}

// ---- files ----

static void part_paths(const aha_trace *t, const char *name, char *path, char *tmp, size_t size) {
    snprintf(path, size, "%s/%s", t->parts_dir, name);
    snprintf(tmp, size, "%s/%s.tmp", t->parts_dir, name);
}

// A finished temporary file takes its name: on disk first, then renamed, so
// the name never shows a partial file.
static int publish(const char *tmp, const char *path) {
    if (trace_fsync(tmp, 0) < 0) return -1;
    if (rename(tmp, path) != 0) {
        aha_err("%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        return -1;
    }
    return 0;
}

static int part_named(const aha_trace *t, const char *name) {
    for (int i = 0; i < t->n_parts; i++)
        if (strcmp(t->parts[i].name, name) == 0) return 1;
    return 0;
}

enum { CLEAN_COUNT, CLEAN_ORPHANS, CLEAN_ALL };

// The part files in dir (p*.h5, b*.h5 and their .tmp): count the .h5 ones
// (CLEAN_COUNT), delete those the index does not name (CLEAN_ORPHANS), or
// delete all and dir (CLEAN_ALL). Returns the count of .h5 parts seen, or
// -1. No dir: 0.
static int parts_clean(const aha_trace *t, const char *dir, int mode) {
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
        if (mode == CLEAN_ALL || (mode == CLEAN_ORPHANS && !part_named(t, s)))
            unlinkat(dirfd(dp), s, 0);
    }
    closedir(dp);
    if (mode == CLEAN_ALL && rmdir(dir) != 0) {
        aha_err("%s: cannot remove (%s)", dir, strerror(errno));
        return -1;
    }
    return n;
}

static int drop_push(aha_trace *t, const char *name) {
    if (t->n_drop == t->cap_drop) {
        int cap = t->cap_drop ? 2 * t->cap_drop : 16;
        void *p = realloc(t->drop, (size_t)cap * sizeof *t->drop);
        if (!p) {
            aha_err("%s: out of memory", t->path);
            return -1;
        }
        t->drop = p, t->cap_drop = cap;
    }
    snprintf(t->drop[t->n_drop++], sizeof *t->drop, "%s", name);
    return 0;
}

// One writer per trace: an exclusive lock on the parts folder, held until
// aha_trace_free (the kernel drops it when a process dies).
static int parts_lock(aha_trace *t) {
    t->lock_fd = open(t->parts_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (t->lock_fd >= 0 && flock(t->lock_fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno == EWOULDBLOCK) aha_err("%s: another process is writing this trace", t->path);
    else aha_err("%s: cannot lock (%s)", t->parts_dir, strerror(errno));
    return -1;
}

// Make the new state durable: the parts reach the disk before the index
// that names them replaces the old one; then the files only the old index
// named are deleted (an undeleted one is only wasted space: resume removes it).
static int commit(aha_trace *t) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    if (trace_fsync(t->parts_dir, 1) < 0 || trace_write_index(t, tmp, 0) < 0 ||
        publish(tmp, t->path) < 0) {
        unlink(tmp);
        return -1;
    }
    if (trace_fsync(t->dir, 1) < 0) return -1;
    for (int i = 0; i < t->n_drop; i++) {
        snprintf(path, sizeof path, "%s/%s", t->parts_dir, t->drop[i]);
        unlink(path);
    }
    t->n_drop = 0;
    return 0;
}

// ---- parts ----

static int parts_insert(aha_trace *t, int at, const trace_part *p) {
    if (t->n_parts == t->cap_parts) {
        int cap = t->cap_parts ? 2 * t->cap_parts : 16;
        trace_part *q = realloc(t->parts, (size_t)cap * sizeof *q);
        if (!q) {
            aha_err("%s: out of memory", t->path);
            return -1;
        }
        t->parts = q, t->cap_parts = cap;
    }
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
    part_paths(t, b.name, path, tmp, sizeof path);
    if (trace_write_block(t, tmp, b0, b1, &taken) < 0 || publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    int i = 0, j;
    while (t->parts[i].v1 <= b0) i++;
    b.d0 = b.dv0 = t->parts[i].dv0;
    for (j = i; j < t->n_parts && t->parts[j].v1 <= b1; j++)
        if (drop_push(t, t->parts[j].name) < 0) return -1;
    if (j < t->n_parts && t->parts[j].v0 < b1) t->parts[j].v0 = b1, t->parts[j].dv0 += taken;
    b.dv1 = j < t->n_parts ? t->parts[j].dv0 : t->n_docs + 1;
    b.n_doc = b.dv1 - b.dv0;
    memmove(t->parts + i, t->parts + j, (size_t)(t->n_parts - j) * sizeof *t->parts);
    t->n_parts -= j - i;
    return parts_insert(t, i, &b);
}

// Keep the part count logarithmic in T: the full chunks after the blocks
// become a level-0 block once there are TRACE_BLOCK_CHUNKS of them, and
// FANOUT blocks of one level become one of the next. Blocks copy compressed
// chunks as stored: a chunk is compressed once and copied O(log T) times.
static int merge(aha_trace *t) {
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

// ---- the API ----

int aha_trace_create(aha_trace **out, const char *path, const aha_trace_meta *m, int force) {
    *out = NULL;
    if (meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    char tmp[4096];
    if (!t || prov_init(t) < 0) goto fail;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!force && access(path, F_OK) == 0) {
        aha_err("%s: exists (use --force to overwrite)", path);
        goto fail;
    }
    if (access(t->parts_dir, F_OK) == 0 && parts_lock(t) < 0) goto fail; // not while in use
    if (force && unlink(path) != 0 && errno != ENOENT) {
        aha_err("%s: cannot remove the old trace (%s)", path, strerror(errno));
        goto fail;
    }
    // A parts folder without its index: debris of a create killed early
    // (only .tmp files) goes; parts of a trace whose index was renamed stay.
    int n = force ? 0 : parts_clean(t, t->parts_dir, CLEAN_COUNT);
    if (n > 0) aha_err("%s: holds parts of another trace (use --force to remove them)", t->parts_dir);
    if (n != 0 || parts_clean(t, t->parts_dir, CLEAN_ALL) < 0) goto fail;
    if (t->lock_fd >= 0) close(t->lock_fd), t->lock_fd = -1; // that folder is gone
    if (mkdir(t->parts_dir, 0777) != 0) {
        aha_err("%s: cannot create (%s)", t->parts_dir, strerror(errno));
        goto fail;
    }
    if (parts_lock(t) < 0) goto fail_dir;
    // link() publishes the index without replacing a file created meanwhile.
    if (trace_write_index(t, tmp, 0) < 0 || trace_fsync(tmp, 0) < 0) goto fail_dir;
    if (link(tmp, path) != 0) {
        if (errno == EEXIST) {
            aha_err("%s: exists (use --force to overwrite)", path);
            goto fail_dir;
        }
        if (rename(tmp, path) != 0) { // no hard links on this file system
            aha_err("%s: cannot create (%s)", path, strerror(errno));
            goto fail_dir;
        }
    }
    unlink(tmp);
    if (trace_fsync(t->dir, 1) < 0) goto fail;
    *out = t;
    return 0;
fail_dir:
    unlink(tmp);
    rmdir(t->parts_dir);
fail:
    aha_trace_free(t);
    return -1;
}

int aha_trace_add_run(aha_trace *t, const char *name, const char *policy, int window) {
    if (t->n_redeclared >= 0) { // resumed: the runs are the trace's, in its order
        const trace_run *r = t->n_redeclared < t->n_runs ? &t->runs[t->n_redeclared] : NULL;
        if (!r || strcmp(r->name, name) || strcmp(r->policy, policy) || r->window != window) {
            aha_err("%s: cannot resume: run %d differs (trace: %s%s%s, window %d; now: %s %s, "
                    "window %d)",
                    t->path, t->n_redeclared + 1, r ? r->name : "none", r ? " " : "",
                    r ? r->policy : "", r ? r->window : 0, name, policy, window);
            return -1;
        }
        t->n_redeclared++;
        return 0;
    }
    if (t->n_docs > 0) {
        aha_err("%s: run '%s' declared after the first document", t->path, name);
        return -1;
    }
    if (trace_run_push(t, name, policy, window) < 0) return -1;
    return commit(t); // the index shows the run from now on
}

static int doc_check(const aha_trace *t, const aha_trace_doc *d) {
    const aha_trace_meta *m = &t->m;
    char what[128] = "";
    if (d->n < 1)
        snprintf(what, sizeof what, "n = %d (< 1)", d->n);
    else if (!d->tokens)
        snprintf(what, sizeof what, "no tokens");
    else if (!d->token_text)
        snprintf(what, sizeof what, "no token_text");
    else if (m->aha && (!d->gate || !d->router_logit))
        snprintf(what, sizeof what, "no gate / router_logit");
    else if (m->n_eps && !d->dep)
        snprintf(what, sizeof what, "no dep");
    else if (m->werr && !d->werr)
        snprintf(what, sizeof what, "no werr");
    else if (t->n_runs && !d->runs)
        snprintf(what, sizeof what, "no runs");
    for (int i = 0; !what[0] && i < t->n_runs; i++)
        if (!d->runs[i].nll || !d->runs[i].kl || (t->runs[i].has_gate && !d->runs[i].gate))
            snprintf(what, sizeof what, "run '%s': no nll, kl or gate", t->runs[i].name);
    for (int i = 0; !what[0] && i < d->n; i++)
        if (!d->token_text[i]) snprintf(what, sizeof what, "token_text[%d] is NULL", i);
    if (!what[0] && t->n_redeclared >= 0 && t->n_redeclared < t->n_runs)
        snprintf(what, sizeof what, "run '%s' not declared again after resume",
                 t->runs[t->n_redeclared].name);
    if (what[0]) aha_err("%s: document %" PRId64 ": %s", t->path, t->n_docs, what);
    return what[0] ? -1 : 0;
}

int aha_trace_append(aha_trace *t, const aha_trace_doc *d) {
    if (t->failed) {
        aha_err("%s: an earlier write failed; resume the trace to go on", t->path);
        return -1;
    }
    if (doc_check(t, d) < 0) return -1;
    int64_t T = t->n_tok, a = T / t->tc * t->tc, end = T + d->n, back = 0;
    trace_part p = {
        .level = -1, .t0 = a, .n_tok = end - a, .v0 = a, .v1 = end, .dv1 = t->n_docs + 2};
    char path[4096], tmp[4096];
    snprintf(p.name, sizeof p.name, "p%012" PRId64 "-%012" PRId64 ".h5", a, end);
    part_paths(t, p.name, path, tmp, sizeof path);
    t->failed = 1; // until the append is committed
    if (trace_write_piece(t, d, a, tmp, &back) < 0 || publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    // The new piece holds the unfinished chunk [a, T) and its documents' ends.
    trace_part *last = t->n_parts ? &t->parts[t->n_parts - 1] : NULL;
    if (a < T) {
        last->v1 = a, last->dv1 -= back;
        if (last->v0 == a) { // it held only that chunk
            if (drop_push(t, last->name) < 0) return -1;
            t->n_parts--;
        }
    }
    p.d0 = p.dv0 = t->n_docs + 1 - back, p.n_doc = back + 1;
    if (parts_insert(t, t->n_parts, &p) < 0) return -1;
    t->n_tok = end, t->n_docs++;
    for (int i = 0; i < t->n_runs; i++) {
        t->runs[i].flops_executed += d->runs[i].flops_executed;
        t->runs[i].flops_full += d->runs[i].flops_full;
    }
    if (merge(t) < 0 || commit(t) < 0) return -1;
    t->failed = 0;
    return 0;
}

// The index's parts, checked: token ranges tile [0, T), entry ranges tile
// [1, n_docs + 1) (a part may hold no entry: a block inside a long document).
static int parts_check(aha_trace *t) {
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

int aha_trace_resume(aha_trace **out, const char *path, const aha_trace_meta *m, int64_t *docs_done,
                     int64_t *tokens_done) {
    *out = NULL;
    if (meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    aha_trace_meta fm = {0};
    int64_t complete = 0;
    char tmp[4096];
    if (!t || trace_read_meta(t, &fm, &complete) < 0) goto fail;
    if (complete) {
        aha_err("%s: the trace is complete; nothing to resume", path);
        goto fail;
    }
    if (meta_diff(path, &fm, m) < 0 || trace_read_index(t) < 0 || parts_check(t) < 0) goto fail;
    free(t->parts_dir);
    if (!(t->parts_dir = malloc(strlen(t->dir) + strlen(t->parts_rel) + 2))) goto fail;
    sprintf(t->parts_dir, "%s/%s", t->dir, t->parts_rel);
    if (mkdir(t->parts_dir, 0777) != 0 && errno != EEXIST) {
        aha_err("%s: cannot create (%s)", t->parts_dir, strerror(errno));
        goto fail;
    }
    if (parts_lock(t) < 0) goto fail;
    for (int i = 0; i < t->n_parts; i++) {
        char part[4096];
        snprintf(part, sizeof part, "%s/%s", t->parts_dir, t->parts[i].name);
        if (access(part, R_OK) != 0) {
            aha_err("%s: part file %s is missing (%s)", path, part, strerror(errno));
            goto fail;
        }
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp); // left by a run killed while writing the index
    if (parts_clean(t, t->parts_dir, CLEAN_ORPHANS) < 0) goto fail;
    t->n_redeclared = t->n_docs > 0 ? 0 : -1;
    *docs_done = t->n_docs, *tokens_done = t->n_tok;
    meta_free(&fm);
    *out = t;
    return 0;
fail:
    meta_free(&fm);
    aha_trace_free(t);
    return -1;
}

int aha_trace_close(aha_trace *t) {
    if (!t) return 0;
    char tmp[4096];
    int rc = -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    if (t->failed) {
        aha_err("%s: not completed: an earlier write failed (resume the trace to finish it)",
                t->path);
    } else if (trace_write_index(t, tmp, 1) < 0 || publish(tmp, t->path) < 0 ||
               trace_fsync(t->dir, 1) < 0) {
        unlink(tmp);
    } else {
        rc = parts_clean(t, t->parts_dir, CLEAN_ALL) < 0 ? -1 : 0; // nothing names them now
    }
    aha_trace_free(t);
    return rc;
}
