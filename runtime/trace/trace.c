// The trace writer's API (trace.h), above its store (store/store.h): the
// store keeps the files crash-safe and knows nothing of what they hold; here
// a trace's settings become the file's header and its datasets the store's
// columns (trace_cols.c), and each document one buffer per column
// (trace_doc.c).
#include "trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "buf.h"
#include "err.h"
#include "store.h"
#include "trace_doc.h"
#include "trace_header.h"
#include "trace_policy.h"
#include "version.h"

struct aha_trace {
    char *path;           // the trace, for messages
    trace_store *s;         // its files; NULL for an estimate (aha_trace_peak_bytes)
    aha_trace_meta m;     // deep copy (strings and arrays owned)
    aha_trace_prov prov;  // provenance attributes
    int64_t tc;           // chunk length along T (tokens)
    aha_trace_run *runs;  // [n_runs] in declaration order
    int n_runs;           // ...
    size_t cap_runs;      // ... allocated
    int n_redeclared;     // resumed with documents: runs declared again so far; else -1
    int complete;         // resumed complete: it takes the runs declared again (compared), no more
    trace_cols cols;      // its datasets, the store's columns in this order (doc_offsets: the store's)
    trace_doc_buf doc;    // a document's record (reused)
};

// ---- the handle ----

// Tokens per chunk: the power of two that makes a [L, Tc, H] chunk of
// 4-byte values 0.5-1 MiB (a size HDF5 reads and deflates efficiently).
static int64_t chunk_auto(const aha_trace_meta *m) {
    const int64_t cells = (int64_t)m->n_layers * m->n_heads;
    int64_t tc = 1;
    while (tc < 65536 && tc * 2 * cells * 4 <= (1 << 20)) tc *= 2;
    return tc;
}

static aha_trace *trace_new(const char *path, const aha_trace_meta *m) {
    aha_trace *t = aha_calloc(1, sizeof *t, "trace");
    if (!t) return NULL;
    t->n_redeclared = -1;
    t->path = strdup(path);
    if (!t->path || aha_trace_meta_copy(&t->m, m) < 0) {
        aha_err("%s: out of memory", path);
        aha_trace_free(t);
        return NULL;
    }
    t->tc = m->chunk_tokens ? m->chunk_tokens : chunk_auto(m);
    return t;
}

// The store's header: the trace's attributes and groups, its state the store's.
static int header(void *ctx, hid_t f, const trace_store_state *st) {
    const aha_trace *t = ctx;
    const aha_trace_state state = {AHA_TRACE_VERSION, st->complete, st->n_rec, st->n, st->chunk, st->id};
    return trace_header_write(f, &t->m, &t->prov, t->runs, t->n_runs, &state);
}

// Column i of the trace into its store.
static int store_add(aha_trace *t, int i) {
    const trace_col *c = &t->cols.c[i];
    const trace_store_col sc = trace_col_store(&t->cols, c, &t->m);
    return trace_col_along_t(c) ? trace_store_add(t->s, &sc) : trace_store_add_rec(t->s, &sc);
}

// t's store at its path (its lock taken), holding the trace's own datasets.
static int store_open(aha_trace *t) {
    trace_store_def def = {.what = "trace", .chunk = t->tc, .header = header, .ctx = t,
                           .axis_t = trace_coords[TC_TOKEN].path, .axis_t_desc = trace_coords[TC_TOKEN].desc,
                           .axis_rec = trace_coords[TC_DOC].path, .axis_rec_desc = trace_coords[TC_DOC].desc};
    for (int id = 0; id < TD_COUNT; id++)
        if (trace_dsets[id].from == FROM_ENDS) { // doc_offsets
            def.ends = trace_dsets[id].path;
            def.ends_desc = trace_dsets[id].desc;
            def.ends_dim = def.ends; // a coordinate of its own: n_docs + 1 boundaries, no other axis's length
        }
    if (trace_store_new(&t->s, t->path, &def) < 0 || trace_cols_init(&t->cols, &t->m, t->path) < 0) return -1;
    for (int i = 0; i < t->cols.n; i++)
        if (store_add(t, i) < 0) return -1;
    return 0;
}

// The provenance of this build and machine, for a new trace.
static int prov_init(aha_trace *t) {
    aha_trace_prov *p = &t->prov;
    struct utsname u;
    unsigned maj = 0;
    unsigned min = 0;
    unsigned rel = 0;
    char hdf5[32], created[32];
    time_t now = time(NULL);
    struct tm tm;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    // none is NULL: version.c's literals, and t->m is aha_trace_meta_copy's
    p->version = strdup(aha_version());
    p->git_revision = strdup(aha_git_rev());
    p->compiler = strdup(aha_compiler());
    p->cflags = strdup(aha_cflags());
    p->host = strdup(uname(&u) == 0 ? u.nodename : "unknown");
    p->hdf5 = strdup(hdf5);
    p->created = strdup(created);
    p->command_line = strdup(t->m.command_line);
    if (p->version && p->git_revision && p->compiler && p->cflags && p->host && p->hdf5 && p->created &&
        p->command_line)
        return 0;
    aha_err("%s: out of memory", t->path);
    return -1;
}

// A run into t (checked), with its datasets, into the store when there is one.
static int run_push(aha_trace *t, const char *name, const char *policy, int window, double param) {
    const char *bad = NULL;
    if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strlen(name) > 48)
        bad = "a run name is 1-48 characters without '/'";
    else if (!policy || !policy[0])
        bad = "a run needs a policy";
    else if (window < 0)
        bad = "a run's window is >= 0";
    else if (t->n_runs == AHA_TRACE_MAX_RUNS)
        bad = "a trace holds at most " TRACE_STR(AHA_TRACE_MAX_RUNS) " runs";
    for (int i = 0; !bad && i < t->n_runs; i++)
        if (strcmp(t->runs[i].name, name) == 0) bad = "run names repeat";
    if (bad) {
        aha_err("%s: run '%s': %s", t->path, name ? name : "", bad);
        return -1;
    }
    if (aha_grow(&t->runs, &t->cap_runs, (size_t)t->n_runs + 1, sizeof *t->runs, t->path) != 0) return -1;
    aha_trace_run *r = &t->runs[t->n_runs];
    memset(r, 0, sizeof *r);
    r->name = strdup(name);
    r->policy = strdup(policy);
    r->window = window;
    r->param = param;
    r->has_gate = strcmp(policy, "global") != 0;
    r->full_pass = aha_policy_full_pass(policy);
    if (!r->name || !r->policy) {
        aha_trace_run_free(r);
        aha_err("%s: out of memory", t->path);
        return -1;
    }
    const int first = t->cols.n;
    if (trace_cols_run(&t->cols, &t->m, t->n_runs++, name, r->has_gate, t->path) < 0) return -1;
    for (int i = first; t->s && i < t->cols.n; i++)
        if (store_add(t, i) < 0) return -1;
    return 0;
}

void aha_trace_free(aha_trace *t) {
    if (!t) return;
    trace_store_free(t->s); // before the types its columns name
    trace_cols_free(&t->cols);
    trace_doc_buf_free(&t->doc);
    aha_trace_meta_free(&t->m);
    aha_trace_prov_free(&t->prov);
    for (int i = 0; i < t->n_runs; i++) aha_trace_run_free(&t->runs[i]);
    free(t->runs);
    free(t->path);
    free(t);
}

void aha_trace_discard(aha_trace *t) {
    if (!t) return;
    trace_store_discard(t->s);
    t->s = NULL;
    aha_trace_free(t);
}

// ---- the API ----

int aha_trace_create(aha_trace **out, const char *path, const aha_trace_meta *m, int force) {
    *out = NULL;
    if (aha_trace_meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    if (!t || store_open(t) < 0 || prov_init(t) < 0 || trace_store_create(t->s, force) < 0) {
        aha_trace_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int64_t aha_trace_peak_bytes(const aha_trace_meta *m, const aha_trace_run *runs, int n_runs, int64_t final_bytes) {
    aha_trace *t = trace_new("(an estimate)", m); // its columns; nothing is written
    int ok = t && trace_cols_init(&t->cols, &t->m, t->path) == 0;
    for (int i = 0; ok && i < n_runs; i++)
        ok = run_push(t, runs[i].name, runs[i].policy, runs[i].window, runs[i].param) == 0;
    trace_store_col *cols = ok ? aha_calloc((size_t)t->cols.n + 1, sizeof *cols, "trace") : NULL;
    int n = 0;
    for (int i = 0; cols && i < t->cols.n; i++)
        if (trace_col_along_t(&t->cols.c[i])) cols[n++] = trace_col_store(&t->cols, &t->cols.c[i], &t->m);
    const int64_t peak = cols ? trace_store_peak_bytes(cols, n, t->tc, final_bytes) : -1;
    free(cols);
    aha_trace_free(t);
    return peak;
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
    if (trace_store_get(t->s).n_rec > 0) {
        aha_err("%s: run '%s' declared after the first document", t->path, name);
        return -1;
    }
    if (run_push(t, name, policy, window, param) < 0) return -1;
    return trace_store_commit(t->s); // the index shows the run from now on
}

int aha_trace_append(aha_trace *t, const aha_trace_doc *d) {
    if (t->complete) {
        aha_err("%s: the trace is complete", t->path);
        return -1;
    }
    char what[128];
    trace_store_rec r;
    if (trace_doc_check(&t->cols, &t->m, t->runs, t->n_runs, d, what, sizeof what) == 0 && t->n_redeclared >= 0 &&
        t->n_redeclared < t->n_runs)
        snprintf(what, sizeof what, "run '%s' not declared again after resume", t->runs[t->n_redeclared].name);
    if (what[0]) {
        aha_err("%s: document %" PRId64 ": %s", t->path, trace_store_get(t->s).n_rec, what);
        return -1;
    }
    if (trace_doc_record(&t->cols, &t->m, d, &t->doc, &r, t->path) < 0) return -1;
    for (int i = 0; i < t->n_runs; i++) { // in the header the append commits
        t->runs[i].flops_executed += d->runs[i].flops_executed;
        t->runs[i].flops_full += d->runs[i].flops_full;
    }
    return trace_store_append(t->s, &r);
}

int aha_trace_resume(aha_trace **out, const char *path, const aha_trace_meta *m, int64_t *docs_done,
                     int64_t *tokens_done) {
    *out = NULL;
    if (aha_trace_meta_check(m, path) < 0) return -1;
    aha_trace *t = trace_new(path, m);
    trace_header h = {0};
    aha_trace_diff diff;
    if (!t || store_open(t) < 0 || trace_header_read(path, &h) < 0) goto fail;
    for (int i = 0; i < h.n_runs; i++) {
        const aha_trace_run *r = &h.runs[i];
        if (run_push(t, r->name, r->policy, r->window, r->param) < 0) goto fail;
        t->runs[i].flops_executed = r->flops_executed;
        t->runs[i].flops_full = r->flops_full;
    }
    if (aha_trace_meta_diff(&h.m, m, A_RESUME, &diff)) {
        aha_err("%s: cannot resume: %s differs (trace: %s; now: %s)", path, diff.what, diff.a, diff.b);
        goto fail;
    }
    *docs_done = h.st.n_docs;
    *tokens_done = h.st.n_tokens;
    aha_trace_prov_free(&t->prov);
    t->prov = h.prov; // the first run's
    memset(&h.prov, 0, sizeof h.prov);
    if (h.st.complete) { // the same run, finished: only its runs are left to compare
        t->complete = 1;
        t->n_redeclared = 0;
        trace_header_free(&h);
        *out = t;
        return 1;
    }
    const trace_store_state st = {0, h.st.n_docs, h.st.n_tokens, h.st.chunk_tokens, h.st.id};
    if (trace_store_resume(t->s, &st) < 0) goto fail;
    t->n_redeclared = h.st.n_docs > 0 ? 0 : -1;
    trace_header_free(&h);
    *out = t;
    return 0;
fail:
    trace_header_free(&h);
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
    if (!s) {
        aha_err("out of memory");
        return -1;
    }
    free((char *)t->m.read_as);
    t->m.read_as = s;
    return 0;
}

int aha_trace_close(aha_trace *t) {
    if (!t) return 0;
    int rc = -1;
    if (t->complete) {
        aha_err("%s: the trace is complete", t->path);
    } else {
        rc = trace_store_close(t->s); // frees the store either way
        t->s = NULL;
    }
    aha_trace_free(t);
    return rc;
}
