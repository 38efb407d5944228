// The trace writer's API. An append writes its document (with the unfinished
// chunk before it) as a new part file; parts are merged into blocks as the
// trace grows; each append ends by atomically replacing the index, the one
// file that names the parts. See "Crash safety" in docs/trace-format.md.
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "publish.h"
#include "trace_impl.h"
#include "version.h"

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
    t->f16 = -1;
    for (int id = 0; id < TD_COUNT; id++) t->str[id] = -1;
    t->n_redeclared = -1;
    t->lock_fd = -1;
    const char *base = strrchr(path, '/');
    t->path = strdup(path);
    t->dir = base ? strndup(path, (size_t)(base - path + (base == path))) : strdup(".");
    t->parts_dir = malloc(strlen(path) + 7);
    t->parts_rel = malloc(strlen(path) + 7);
    if (!t->path || !t->dir || !t->parts_dir || !t->parts_rel || aha_trace_meta_copy(&t->m, m) < 0) {
        aha_err("%s: out of memory", path);
        aha_trace_free(t);
        return NULL;
    }
    sprintf(t->parts_dir, "%s.parts", path);
    sprintf(t->parts_rel, "%s.parts", base ? base + 1 : path);
    t->tc = m->chunk_tokens ? m->chunk_tokens : chunk_auto(m);
    // No HDF5 exit hook: after a failed write (a full disk) HDF5 1.10 cannot
    // close that file, and the hook would crash retrying. Every file the
    // writer opens it closes. (A no-op once HDF5 has been used.)
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    int ok = (t->f16 = trace_h5_f16()) >= 0;
    for (int id = 0; ok && id < TD_COUNT; id++)
        if (trace_dsets[id].type == TY_STR) ok = (t->str[id] = trace_h5_str((size_t)aha_trace_str_width(&t->m, id))) >= 0;
    if (!ok) {
        trace_h5_fail(path, "making HDF5 types");
        aha_trace_free(t);
        return NULL;
    }
    if (trace_cols_init(t) < 0) {
        aha_trace_free(t);
        return NULL;
    }
    return t;
}

// A new trace's id: random, so that no two traces' part files share names.
static int64_t id_new(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v)
        v = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid();
    return (int64_t)(v >> 1); // non-negative: it prints the same in every tool
}

// The provenance of this build and machine, for a new trace.
static int prov_init(aha_trace *t) {
    aha_trace_prov *p = &t->prov;
    struct utsname u;
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5[32], created[32];
    time_t now = time(NULL);
    struct tm tm;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    // none is NULL: version.c's literals, and t->m is aha_trace_meta_copy's
    p->version = strdup(aha_version()), p->git_revision = strdup(aha_git_rev());
    p->compiler = strdup(aha_compiler()), p->cflags = strdup(aha_cflags());
    p->host = strdup(uname(&u) == 0 ? u.nodename : "unknown"), p->hdf5 = strdup(hdf5);
    p->created = strdup(created), p->command_line = strdup(t->m.command_line);
    if (p->version && p->git_revision && p->compiler && p->cflags && p->host && p->hdf5 &&
        p->created && p->command_line)
        return 0;
    aha_err("%s: out of memory", t->path);
    return -1;
}

void aha_trace_free(aha_trace *t) {
    if (!t) return;
    aha_trace_meta_free(&t->m);
    aha_trace_prov_free(&t->prov);
    for (int i = 0; i < t->n_runs; i++) aha_trace_run_free(&t->runs[i]);
    trace_h5_drop(t->f16);
    for (int id = 0; id < TD_COUNT; id++) trace_h5_drop(t->str[id]);
    aha_lock_drop(t->path, t->lock_fd);
    free(t->runs), free(t->cols), free(t->parts), free(t->drop), free(t->buf);
    free(t->path), free(t->dir), free(t->parts_dir), free(t->parts_rel);
    free(t);
}

void aha_trace_discard(aha_trace *t) {
    if (!t) return;
    char tmp[4096], why[1024];
    snprintf(why, sizeof why, "%s", aha_errmsg()); // the error that stopped the writer stays the one said
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    unlink(tmp);
    unlink(t->path);
    trace_parts_clean(t, t->parts_dir, CLEAN_ALL);
    aha_trace_free(t);
    aha_err("%s", why);
}

// ---- the API ----

int aha_trace_create(aha_trace **out, const char *path, const aha_trace_meta *m, int force) {
    *out = NULL;
    if (aha_trace_meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    char tmp[4096];
    if (!t || prov_init(t) < 0) goto fail;
    t->id = id_new();
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (trace_parts_lock(t) < 0) goto fail; // before anything is removed: not while another writes it
    if (!force && access(path, F_OK) == 0) {
        aha_err("%s: exists (use --force to overwrite)", path);
        goto fail;
    }
    if (force && unlink(path) != 0 && errno != ENOENT) {
        aha_err("%s: cannot remove the old trace (%s)", path, strerror(errno));
        goto fail;
    }
    // A parts folder without its index: debris of a create killed early
    // (only .tmp files) goes; parts of a trace whose index was renamed stay.
    int n = force ? 0 : trace_parts_clean(t, t->parts_dir, CLEAN_COUNT);
    if (n > 0) aha_err("%s: holds parts of another trace (use --force to remove them)", t->parts_dir);
    if (n != 0 || trace_parts_clean(t, t->parts_dir, CLEAN_ALL) < 0) goto fail;
    if (mkdir(t->parts_dir, 0777) != 0) {
        aha_err("%s: cannot create (%s)", t->parts_dir, strerror(errno));
        goto fail;
    }
    // link() publishes the index without replacing a file created meanwhile.
    if (trace_write_index(t, tmp, 0) < 0 || aha_fsync(tmp, 0) < 0) goto fail_dir;
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
    if (aha_fsync(t->dir, 1) < 0) goto fail;
    *out = t;
    return 0;
fail_dir:
    unlink(tmp);
    rmdir(t->parts_dir);
fail:
    aha_trace_free(t);
    return -1;
}

int64_t aha_trace_peak_bytes(const aha_trace_meta *m, const aha_trace_run *runs, int n_runs, int64_t final_bytes) {
    aha_trace *t = trace_new("(an estimate)", m); // its columns; nothing is written
    const int ok = t != NULL;
    int64_t chunk = 0;
    for (int i = 0; t && i < n_runs; i++)
        if (trace_run_push(t, runs[i].name, runs[i].policy, runs[i].window, runs[i].param) < 0) {
            aha_trace_free(t);
            return -1;
        }
    for (int i = 0; t && i < t->n_cols; i++) {
        const trace_col *c = &t->cols[i];
        chunk +=
            (int64_t)trace_col_size(t, c) * t->tc * (trace_col_rank(c) == 3 ? (int64_t)m->n_layers * m->n_heads : 1);
    }
    aha_trace_free(t);
    return ok ? 2 * final_bytes + (TRACE_BLOCK_CHUNKS + 1) * chunk : -1;
}

int aha_trace_add_run(aha_trace *t, const char *name, const char *policy, int window) {
    return aha_trace_add_run_param(t, name, policy, window, NAN);
}

int aha_trace_add_run_param(aha_trace *t, const char *name, const char *policy, int window, double param) {
    if (t->n_redeclared >= 0) { // resumed: the runs are the trace's, in its order
        const aha_trace_run *r = t->n_redeclared < t->n_runs ? &t->runs[t->n_redeclared] : NULL;
        int same_param = r && (r->param == param || (isnan(r->param) && isnan(param)));
        if (!r || strcmp(r->name, name) || strcmp(r->policy, policy) || r->window != window || !same_param) {
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
    if (trace_run_push(t, name, policy, window, param) < 0) return -1;
    return trace_commit(t); // the index shows the run from now on
}

static int doc_check(const aha_trace *t, const aha_trace_doc *d) {
    const aha_trace_meta *m = &t->m;
    char what[128] = "";
    if (d->n < 1)
        snprintf(what, sizeof what, "n = %d (< 1)", d->n);
    else if (d->doc_index < -1)
        snprintf(what, sizeof what, "doc_index = %" PRId64 " (< -1)", d->doc_index);
    else if (!d->source || !d->sha256)
        snprintf(what, sizeof what, "no source or sha256");
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
    else if (m->mass && (!d->mass_far || !d->mass_sink))
        snprintf(what, sizeof what, "no mass_far / mass_sink");
    else if (t->n_runs && !d->runs)
        snprintf(what, sizeof what, "no runs");
    for (int i = 0; !what[0] && i < t->n_runs; i++)
        if (!d->runs[i].nll || !d->runs[i].kl || (t->runs[i].has_gate && !d->runs[i].gate))
            snprintf(what, sizeof what, "run '%s': no nll, kl or gate", t->runs[i].name);
    const size_t width = (size_t)aha_trace_str_width(m, TD_TOKEN_TEXT);
    for (int i = 0; !what[0] && i < d->n; i++)
        if (!d->token_text[i]) snprintf(what, sizeof what, "token_text[%d] is NULL", i);
        else if (strnlen(d->token_text[i], width + 1) > width) // never cut: a width is a promise
            snprintf(what, sizeof what, "token_text[%d] is %zu bytes, longer than text_width %zu", i,
                     strlen(d->token_text[i]), width);
    if (!what[0] && t->n_redeclared >= 0 && t->n_redeclared < t->n_runs)
        snprintf(what, sizeof what, "run '%s' not declared again after resume",
                 t->runs[t->n_redeclared].name);
    if (what[0]) aha_err("%s: document %" PRId64 ": %s", t->path, t->n_docs, what);
    return what[0] ? -1 : 0;
}

int aha_trace_append(aha_trace *t, const aha_trace_doc *d) {
    if (t->complete) {
        aha_err("%s: the trace is complete", t->path);
        return -1;
    }
    if (t->failed) {
        aha_err("%s: an earlier write failed; resume the trace to go on", t->path);
        return -1;
    }
    if (doc_check(t, d) < 0) return -1;
    // HDF5's error printing is per thread, and aha record appends from its
    // writer thread: errors come back as messages there too.
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int64_t T = t->n_tok, a = T / t->tc * t->tc, end = T + d->n, back = 0;
    trace_part p = {
        .level = -1, .t0 = a, .n_tok = end - a, .v0 = a, .v1 = end, .dv1 = t->n_docs + 2};
    char path[4096], tmp[4096];
    trace_part_name(t, p.name, 'p', a, end);
    trace_part_paths(t, p.name, path, tmp, sizeof path);
    t->failed = 1; // until the append is committed
    if (trace_write_piece(t, d, a, tmp, &back) < 0 || trace_publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    // The new piece holds the unfinished chunk [a, T) and its documents' ends.
    trace_part *last = t->n_parts ? &t->parts[t->n_parts - 1] : NULL;
    if (a < T) {
        last->v1 = a, last->dv1 -= back;
        if (last->v0 == a) { // it held only that chunk
            if (trace_drop_push(t, last->name) < 0) return -1;
            t->n_parts--;
        }
    }
    p.d0 = p.dv0 = t->n_docs + 1 - back, p.n_doc = back + 1;
    if (trace_parts_insert(t, t->n_parts, &p) < 0) return -1;
    t->n_tok = end, t->n_docs++;
    for (int i = 0; i < t->n_runs; i++) {
        t->runs[i].flops_executed += d->runs[i].flops_executed;
        t->runs[i].flops_full += d->runs[i].flops_full;
    }
    if (trace_compact(t) < 0 || trace_commit(t) < 0) return -1;
    t->failed = 0;
    return 0;
}

int aha_trace_resume(aha_trace **out, const char *path, const aha_trace_meta *m, int64_t *docs_done,
                     int64_t *tokens_done) {
    *out = NULL;
    if (aha_trace_meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    aha_trace_meta fm = {0};
    int64_t complete = 0;
    char tmp[4096];
    aha_trace_diff diff;
    if (!t || trace_parts_lock(t) < 0 || trace_read_back(t, &fm, &complete) < 0) goto fail;
    if (aha_trace_meta_diff(&fm, m, A_RESUME, &diff)) {
        aha_err("%s: cannot resume: %s differs (trace: %s; now: %s)", path, diff.what, diff.a, diff.b);
        goto fail;
    }
    if (complete) { // the same run, finished: only its runs are left to compare
        t->complete = 1, t->n_redeclared = 0;
        *docs_done = t->n_docs, *tokens_done = t->n_tok;
        aha_trace_meta_free(&fm);
        *out = t;
        return 1;
    }
    if (trace_parts_check(t) < 0) goto fail;
    free(t->parts_dir);
    if (!(t->parts_dir = malloc(strlen(t->dir) + strlen(t->parts_rel) + 2))) goto fail;
    sprintf(t->parts_dir, "%s/%s", t->dir, t->parts_rel);
    if (mkdir(t->parts_dir, 0777) != 0 && errno != EEXIST) {
        aha_err("%s: cannot create (%s)", t->parts_dir, strerror(errno));
        goto fail;
    }
    for (int i = 0; i < t->n_parts; i++) {
        char part[4096];
        trace_part_paths(t, t->parts[i].name, part, NULL, sizeof part);
        if (access(part, R_OK) != 0) {
            aha_err("%s: part file %s is missing (%s)", path, part, strerror(errno));
            goto fail;
        }
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp); // left by a run killed while writing the index
    if (trace_parts_clean(t, t->parts_dir, CLEAN_ORPHANS) < 0) goto fail;
    t->n_redeclared = t->n_docs > 0 ? 0 : -1;
    *docs_done = t->n_docs, *tokens_done = t->n_tok;
    aha_trace_meta_free(&fm);
    *out = t;
    return 0;
fail:
    aha_trace_meta_free(&fm);
    aha_trace_free(t);
    return -1;
}

int aha_trace_runs_check(const aha_trace *t) {
    if (t->n_redeclared < 0 || t->n_redeclared == t->n_runs) return 0;
    aha_err("%s: cannot resume: the trace has %d runs, this run declares %d (the first missing: %s)", t->path,
            t->n_runs, t->n_redeclared, t->runs[t->n_redeclared].name);
    return -1;
}

int aha_trace_set_read_as(aha_trace *t, const char *read_as) {
    char *s = strdup(read_as);
    if (!s) return aha_err("out of memory"), -1;
    free((char *)t->m.read_as);
    t->m.read_as = s;
    return 0;
}

int aha_trace_close(aha_trace *t) {
    if (!t) return 0;
    char tmp[4096];
    int rc = -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    if (t->failed || t->complete) {
        aha_err(t->complete ? "%s: the trace is complete" : "%s: not completed: an earlier write failed (resume the trace to finish it)",
                t->path);
    } else if (trace_write_index(t, tmp, 1) < 0 || trace_publish(tmp, t->path) < 0 || aha_fsync(t->dir, 1) < 0) {
        unlink(tmp);
    } else {
        rc = trace_parts_clean(t, t->parts_dir, CLEAN_ALL) < 0 ? -1 : 0; // nothing names them now
    }
    aha_trace_free(t);
    return rc;
}
