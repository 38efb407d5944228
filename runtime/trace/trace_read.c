// The trace reader (trace_read.h): attributes by the schema's tables,
// datasets by its rows.
#include "trace_read.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "trace_codec.h"
#include "trace_h5.h"

static int fail(const aha_tr *tr, const char *what) {
    aha_err("%s: %s", tr->path, what);
    return -1;
}

// Length along dimension dim of a dataset, or -1 when it is absent.
static int64_t dset_dim(hid_t f, const char *name, int rank, int dim) {
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[3] = {0};
    int64_t n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == rank && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0)
        n = (int64_t)dims[dim];
    trace_h5_drop(sp);
    trace_h5_drop(d);
    return n;
}

// Instance i of an [L, T, H] row, of the trace's shape, or an error naming it.
static int check_lth(const aha_tr *tr, hid_t f, trace_dset_id id, int i) {
    char name[160];
    aha_tr_name(tr, id, i, name, sizeof name);
    if (dset_dim(f, name, 3, 1) == tr->n_tokens && dset_dim(f, name, 3, 0) == tr->m.n_layers &&
        dset_dim(f, name, 3, 2) == tr->m.n_heads)
        return 0;
    aha_err("%s: dataset %s is missing or not [%d, %lld, %d]", tr->path, name, tr->m.n_layers,
            (long long)tr->n_tokens, tr->m.n_heads);
    return -1;
}

static int chunk_len(hid_t f, const char *name) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), p = d < 0 ? -1 : H5Dget_create_plist(d);
    hsize_t c[1] = {0};
    int n = p >= 0 && H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 1, c) == 1 ? (int)c[0] : 0;
    trace_h5_drop(p);
    trace_h5_drop(d);
    return n > 0 ? n : 4096;
}

static herr_t run_visit(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    aha_tr *tr = arg;
    if (tr->n_runs == AHA_TRACE_MAX_RUNS) {
        aha_err("%s: more than %d runs", tr->path, AHA_TRACE_MAX_RUNS);
        return -1;
    }
    hid_t r = H5Gopen2(g, name, H5P_DEFAULT);
    if (r < 0) return 0; // not a group: not a run
    aha_trace_run *run = &tr->runs[tr->n_runs++];
    char where[128];
    snprintf(where, sizeof where, "runs/%s", name);
    void *obj[OBJ_COUNT] = {[OBJ_RUN] = run};
    int rc = (run->name = strdup(name)) ? trace_attrs_read(r, tr->path, where, &trace_groups[TG_RUN], obj, 0) : -1;
    trace_h5_drop(r);
    return rc < 0 ? -1 : 0;
}

// Runs in creation order when the file tracks it (the order they were
// declared), else by name.
static int read_runs(aha_tr *tr, hid_t f) {
    const char *runs = trace_groups[TG_RUNS].path;
    if (H5Lexists(f, runs, H5P_DEFAULT) <= 0) return 0;
    hid_t g = H5Gopen2(f, runs, H5P_DEFAULT);
    hsize_t idx = 0;
    herr_t e = H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, run_visit, tr);
    if (e < 0 && tr->n_runs == 0) { // no creation order: by name
        H5Eclear2(H5E_DEFAULT);
        e = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, run_visit, tr);
    }
    trace_h5_drop(g);
    for (int r = 0; e >= 0 && r < tr->n_runs; r++) {
        char gate[160];
        tr->runs[r].has_gate = H5Lexists(f, aha_tr_name(tr, TD_RUN_GATE, r, gate, sizeof gate), H5P_DEFAULT) > 0;
    }
    return e < 0 ? -1 : 0;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// Attributes, shapes and runs of an open file; empty: a trace without
// documents is fine.
static int read_meta(aha_tr *tr, int empty) {
    hid_t f = (hid_t)tr->file;
    aha_trace_prov prov = {0};
    aha_trace_state st = {0};
    void *obj[OBJ_COUNT] = {[OBJ_META] = &tr->m, [OBJ_PROV] = &prov, [OBJ_STATE] = &st};
    int rc = trace_attrs_read(f, tr->path, "root", &trace_groups[TG_ROOT], obj, 0);
    aha_trace_prov_free(&prov);
    tr->format_version = (int)st.format_version, tr->complete = (int)st.complete;
    if (tr->format_version > AHA_TRACE_VERSION) { // read first: it explains what follows
        aha_err("%s: format_version %d is newer than this aha reads (%d); update aha", tr->path,
                tr->format_version, AHA_TRACE_VERSION);
        return -1;
    }
    if (rc < 0) return -1;
    if (tr->format_version < 1) return fail(tr, "root attribute format_version is not >= 1");
    if (tr->m.n_layers < 1 || tr->m.n_heads < 1 || tr->m.n_eps < 1 || tr->m.n_windows < 1)
        return fail(tr, "root attributes n_layers, n_heads, eps, windows are missing or bad");
    int *w = (int *)tr->m.windows, k = 0;
    qsort(w, (size_t)tr->m.n_windows, sizeof *w, cmp_int);
    for (int i = 0; i < tr->m.n_windows; i++) // ascending, distinct
        if (w[i] >= 1 && (k == 0 || w[i] != w[k - 1])) w[k++] = w[i];
    tr->m.n_windows = k;
    int64_t nd = dset_dim(f, trace_dsets[TD_DOC_OFFSETS].path, 1, 0);
    tr->n_tokens = dset_dim(f, trace_dsets[TD_TOKENS].path, 1, 0);
    if (nd < 1 || tr->n_tokens < 0 || dset_dim(f, trace_dsets[TD_POSITION].path, 1, 0) != tr->n_tokens)
        return fail(tr, "datasets tokens, position, doc_offsets are missing or bad");
    tr->n_docs = nd - 1;
    int64_t ni = dset_dim(f, trace_dsets[TD_DOC_INDEX].path, 1, 0);
    tr->doc_index = H5Lexists(f, trace_dsets[TD_DOC_INDEX].path, H5P_DEFAULT) > 0;
    if (tr->doc_index && ni != tr->n_docs) return fail(tr, "dataset doc_index is not [n_docs]");
    tr->doc_source = 1;
    for (int j = TD_DOC_SOURCE; j <= TD_DOC_SHA256; j++) {
        int64_t nj = dset_dim(f, trace_dsets[j].path, 1, 0);
        tr->doc_source &= nj >= 0;
        if (nj >= 0 && nj != tr->n_docs) return fail(tr, "datasets doc_source, doc_sha256 are not [n_docs]");
    }
    // A complete trace without documents is a shard that had none: it holds
    // nothing, and says so. An unfinished one has recorded nothing yet.
    if (!empty && !tr->complete && tr->n_docs == 0)
        return fail(tr, "unfinished trace without documents: nothing is recorded yet (aha record --resume continues it)");
    for (int e = 0; e < tr->m.n_eps; e++)
        if (check_lth(tr, f, TD_DEP, e) != 0) return -1;
    tr->m.aha = dset_dim(f, trace_dsets[TD_GATE].path, 3, 1) == tr->n_tokens;
    tr->m.werr = H5Lexists(f, trace_groups[TG_WINDOW_ERROR].path, H5P_DEFAULT) > 0;
    for (int i = 0; tr->m.werr && i < tr->m.n_windows; i++)
        if (check_lth(tr, f, TD_WERR, i) != 0) return -1;
    tr->m.mass = H5Lexists(f, trace_groups[TG_MASS_FAR].path, H5P_DEFAULT) > 0;
    for (int i = 0; tr->m.mass && i < tr->m.n_windows; i++)
        if (check_lth(tr, f, TD_MASS_FAR, i) != 0) return -1;
    if (tr->m.mass && check_lth(tr, f, TD_MASS_SINKS, 0) != 0) return -1;
    tr->chunk_tokens = chunk_len(f, trace_dsets[TD_POSITION].path);
    return read_runs(tr, f);
}

static int tr_open(aha_tr *tr, const char *path, int empty) {
    memset(tr, 0, sizeof *tr);
    tr->path = path;
    tr->file = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    struct stat st;
    if (stat(path, &st) != 0) return fail(tr, strerror(errno));
    if (!S_ISREG(st.st_mode) || H5Fis_hdf5(path) <= 0) return fail(tr, "not an HDF5 file");
    // No file locking: a trace being written is an index that is never
    // modified in place, so reading it beside the writer is safe.
    hid_t f = trace_file_open(path, 0);
    if (f < 0) return fail(tr, "cannot open as HDF5 (truncated or damaged?)");
    tr->file = f;
    if (read_meta(tr, empty) != 0) {
        aha_tr_close(tr);
        return -1;
    }
    return 0;
}

int aha_tr_open(aha_tr *tr, const char *path) { return tr_open(tr, path, 0); }

int aha_tr_open_empty(aha_tr *tr, const char *path) { return tr_open(tr, path, 1); }

void aha_tr_close(aha_tr *tr) {
    trace_h5_drop((hid_t)tr->file);
    tr->file = -1;
    aha_trace_meta_free(&tr->m);
    for (int r = 0; r < tr->n_runs; r++) aha_trace_run_free(&tr->runs[r]);
    tr->n_runs = 0;
}

int aha_tr_dup(aha_tr *d, const aha_tr *s) {
    *d = *s;
    d->file = -1;
    int ok = aha_trace_meta_copy(&d->m, &s->m) == 0;
    for (int r = 0; r < s->n_runs; r++) {
        d->runs[r].name = strdup(s->runs[r].name), d->runs[r].policy = strdup(s->runs[r].policy);
        ok = ok && d->runs[r].name && d->runs[r].policy;
    }
    if (ok) return 0;
    aha_tr_close(d);
    aha_err("out of memory");
    return -1;
}

const char *aha_tr_name(const aha_tr *tr, trace_dset_id id, int i, char *buf, int size) {
    char eps[32] = "", win[32] = "", sinks[32];
    const trace_dset *ds = &trace_dsets[id];
    if (ds->when == W_EPS) snprintf(eps, sizeof eps, "%g", tr->m.eps[i]);
    if (ds->when == W_WERR || ds->when == W_MASS) snprintf(win, sizeof win, "%d", tr->m.windows[i]);
    snprintf(sinks, sizeof sinks, "%d", tr->m.sinks);
    const char *run = ds->when == W_RUN || ds->when == W_RUN_GATE ? tr->runs[i].name : "";
    if (trace_fill(buf, (size_t)size, ds->path, &(trace_vars){eps, win, sinks, run, ""}) < 0)
        snprintf(buf, (size_t)size, "%s", ds->path); // too long: fails to open, by its template
    return buf;
}

// Read the hyperslab start/count of dataset name into buf as mem type.
static int read_slab(const aha_tr *tr, const char *name, int rank, const hsize_t *start,
                     const hsize_t *count, hid_t mem, void *buf) {
    hid_t d = H5Dopen2((hid_t)tr->file, name, H5P_DEFAULT), fs = d < 0 ? -1 : H5Dget_space(d);
    hid_t ms = H5Screate_simple(rank, count, NULL);
    int ok = fs >= 0 && ms >= 0 &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dread(d, mem, ms, fs, H5P_DEFAULT, buf) >= 0;
    trace_h5_drop(ms);
    trace_h5_drop(fs);
    trace_h5_drop(d);
    if (!ok) {
        aha_err("%s: reading %s failed (a part file of an unfinished trace missing?)", tr->path, name);
        return -1;
    }
    return 0;
}

int aha_tr_read(const aha_tr *tr, trace_dset_id id, int i, int64_t t0, int64_t n, void *buf) {
    const trace_dset *ds = &trace_dsets[id];
    char name[160];
    aha_tr_name(tr, id, i, name, sizeof name);
    if (ds->shape == SH_LTH && (ds->type == TY_U8 || ds->type == TY_U32)) { // decoded on every core
        hid_t d = H5Dopen2((hid_t)tr->file, name, H5P_DEFAULT);
        int done = d >= 0 && trace_codec_read(d, tr->m.n_layers, tr->m.n_heads, t0, n,
                                              (int)trace_types[ds->type].size, buf) == 0;
        trace_h5_drop(d);
        if (done) return 0;
    }
    hid_t str = ds->type == TY_STR ? trace_h5_str() : -1;
    hid_t mem = ds->type == TY_F16 ? H5T_NATIVE_FLOAT : trace_ty_mem(ds->type, -1, str);
    hsize_t start[3] = {0, (hsize_t)t0, 0};
    hsize_t count[3] = {(hsize_t)tr->m.n_layers, (hsize_t)n, (hsize_t)tr->m.n_heads};
    int rc = ds->shape == SH_LTH ? read_slab(tr, name, 3, start, count, mem, buf)
                                 : read_slab(tr, name, 1, start + 1, count + 1, mem, buf);
    trace_h5_drop(str);
    return rc;
}

void aha_tr_free_text(int64_t n, char **text) {
    for (int64_t i = 0; i < n; i++) H5free_memory(text[i]);
}

int aha_tr_doc_index(const aha_tr *tr, int64_t *v) {
    if (tr->doc_index && tr->n_docs && aha_tr_read(tr, TD_DOC_INDEX, 0, 0, tr->n_docs, v) != 0) return -1;
    int known = 1;
    for (int64_t d = 0; d < tr->n_docs; d++) {
        if (!tr->doc_index) v[d] = tr->m.shard[0] ? -1 : d;
        known &= v[d] >= 0;
    }
    return known;
}

// By doc_index; a document longer than ctx is several with one number, which
// keep their order (and one input's).
static int doc_cmp(const void *pa, const void *pb) {
    const aha_tr_doc *a = pa, *b = pb;
    if (a->index != b->index) return a->index < b->index ? -1 : 1;
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    return a->d < b->d ? -1 : a->d > b->d;
}

aha_tr_doc *aha_tr_doc_order(const aha_tr *trs, int n, int64_t *n_all, int *unordered) {
    int64_t total = 0, at = 0;
    for (int k = 0; k < n; k++) total += trs[k].n_docs;
    aha_tr_doc *all = aha_malloc((size_t)total + 1, sizeof *all, "document order");
    int64_t *idx = aha_malloc((size_t)total + 1, sizeof *idx, "doc_index");
    *unordered = 0;
    for (int k = 0; all && idx && k < n; k++) {
        int known = aha_tr_doc_index(&trs[k], idx + at);
        if (known < 0) goto fail;
        *unordered += !known;
        for (int64_t d = 0; d < trs[k].n_docs; d++, at++) all[at] = (aha_tr_doc){idx[at], k, d};
    }
    if (!all || !idx) goto fail;
    if (!*unordered) qsort(all, (size_t)total, sizeof *all, doc_cmp);
    for (int64_t i = 1; !*unordered && i < total; i++)
        if (all[i].index == all[i - 1].index && all[i].k != all[i - 1].k) {
            aha_err("%s and %s both hold document %lld of the dataset (doc_index): not distinct shards of one run",
                    trs[all[i - 1].k].path, trs[all[i].k].path, (long long)all[i].index);
            goto fail;
        }
    free(idx);
    *n_all = total;
    return all;
fail:
    free(all), free(idx);
    return NULL;
}

// A shard attribute: "" (the whole run: *N = 0), "I/N" or "I,J,.../N"
// (indices ascending, distinct, below N) into *N and have[0..N). 0 or -1.
int aha_tr_shard_parse(const char *s, int *N, unsigned char **have) {
    *N = 0, *have = NULL;
    if (!s[0]) return 0;
    const char *slash = strrchr(s, '/');
    char *end;
    long n = slash ? strtol(slash + 1, &end, 10) : 0;
    if (!slash || n < 1 || n > (1 << 24) || *end || !(*have = calloc((size_t)n, 1))) return -1;
    for (const char *p = s; p < slash; p = end + (*end == ',')) {
        long i = strtol(p, &end, 10);
        if (end == p || i < 0 || i >= n || (*have)[i] || (end != slash && *end != ',')) {
            free(*have), *have = NULL;
            return -1;
        }
        (*have)[i] = 1;
    }
    *N = (int)n;
    return 0;
}

int aha_tr_check_shards(const aha_tr *trs, int n, char **shards, int *missing) {
    int N = 0, rc = 0;
    unsigned char *all = NULL;
    *shards = NULL, *missing = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int nk;
        unsigned char *have;
        if (aha_tr_shard_parse(trs[k].m.shard, &nk, &have) != 0) {
            aha_err("%s: shard attribute '%s' is not I/N", trs[k].path, trs[k].m.shard);
            return -1;
        }
        if (n > 1 && nk == 0) {
            aha_err("%s holds a whole run (no shard attribute): it cannot be combined with other traces "
                    "(--compare puts them side by side)", trs[k].path);
            rc = -1;
        } else if (k && nk != N) {
            aha_err("%s and %s are shards of different counts (%d and %d): not one run", trs[0].path, trs[k].path, N,
                    nk);
            rc = -1;
        }
        if (k == 0 && (N = nk) && !(all = calloc((size_t)N, 1))) {
            aha_err("out of memory");
            rc = -1;
        }
        for (int i = 0; rc == 0 && i < nk; i++) {
            if (have[i] && all[i]) {
                aha_err("%s: shard %d/%d is twice among the traces (the same trace, or overlapping merges)",
                        trs[k].path, i, N);
                rc = -1;
            }
            all[i] |= have[i];
        }
        free(have);
    }
    size_t len = 1;
    for (int i = 0; rc == 0 && i < N; i++) *missing += !all[i], len += all[i] ? 12 : 0;
    if (rc == 0 && (*shards = malloc(len + 12))) {
        char *p = *shards;
        *p = '\0';
        for (int i = 0; *missing && i < N; i++)
            if (all[i]) p += sprintf(p, "%s%d", p == *shards ? "" : ",", i);
        if (*missing) sprintf(p, "/%d", N);
    } else if (rc == 0) {
        aha_err("out of memory");
        rc = -1;
    }
    free(all);
    return rc;
}

int aha_tr_check_same(const aha_tr *a, const aha_tr *b) {
    aha_trace_diff d;
    char *va = d.a, *vb = d.b;
    const char *field = NULL;
    int differ = aha_trace_meta_diff(&a->m, &b->m, A_COMBINE, &d);
    if (a->format_version != b->format_version) {
        field = "format_version";
        snprintf(va, sizeof d.a, "%d", a->format_version), snprintf(vb, sizeof d.b, "%d", b->format_version);
    } else if (differ) {
        field = d.what;
    } else if (a->n_runs != b->n_runs) {
        field = "n_runs";
        snprintf(va, sizeof d.a, "%d", a->n_runs), snprintf(vb, sizeof d.b, "%d", b->n_runs);
    }
    for (int i = 0; !field && i < a->n_runs; i++)
        if (strcmp(a->runs[i].name, b->runs[i].name) != 0)
            field = "runs", snprintf(va, sizeof d.a, "%s", a->runs[i].name), snprintf(vb, sizeof d.b, "%s", b->runs[i].name);
    if (!field) return 0;
    aha_err("%s and %s differ in %s (%s vs %s): they cannot be combined (--compare puts them side by side)",
            a->path, b->path, field, va, vb);
    return -1;
}

// ---- what a trace holds (aha info) ----

void aha_tr_attrs_obj(aha_tr_attrs *a, int g, void *obj[OBJ_COUNT]) {
    for (int k = 0; k < OBJ_COUNT; k++) obj[k] = NULL;
    obj[OBJ_META] = &a->m, obj[OBJ_STATE] = &a->state;
    obj[OBJ_PROV] = g == TG_PROVENANCE ? &a->prov : &a->root;
}

int aha_tr_attrs_read(const aha_tr *tr, aha_tr_attrs *a) {
    memset(a, 0, sizeof *a);
    hid_t f = (hid_t)tr->file, g = -1;
    void *obj[OBJ_COUNT];
    aha_tr_attrs_obj(a, TG_ROOT, obj);
    int rc = trace_attrs_read(f, tr->path, "root", &trace_groups[TG_ROOT], obj, 0);
    const char *prov = trace_groups[TG_PROVENANCE].path;
    aha_tr_attrs_obj(a, TG_PROVENANCE, obj);
    if (rc == 0 && H5Lexists(f, prov, H5P_DEFAULT) > 0 && (g = H5Gopen2(f, prov, H5P_DEFAULT)) >= 0)
        rc = trace_attrs_read(g, tr->path, prov, &trace_groups[TG_PROVENANCE], obj, 0);
    trace_h5_drop(g);
    if (rc != 0) aha_tr_attrs_free(a);
    return rc;
}

void aha_tr_attrs_free(aha_tr_attrs *a) {
    aha_trace_meta_free(&a->m);
    aha_trace_prov_free(&a->root);
    aha_trace_prov_free(&a->prov);
}

int aha_tr_n_instances(const aha_tr *tr, trace_dset_id id) {
    switch (trace_dsets[id].when) {
    case W_EPS: return tr->m.n_eps;
    case W_WERR: case W_MASS: return tr->m.n_windows;
    case W_RUN: case W_RUN_GATE: return tr->n_runs;
    default: return 1;
    }
}

int aha_tr_has(const aha_tr *tr, trace_dset_id id, int i) {
    if (i < 0 || i >= aha_tr_n_instances(tr, id)) return 0;
    if (id == TD_DOC_INDEX) return tr->doc_index;
    if (id == TD_DOC_SOURCE || id == TD_DOC_SHA256) return tr->doc_source;
    switch (trace_dsets[id].when) {
    case W_AHA: return tr->m.aha;
    case W_WERR: return tr->m.werr;
    case W_MASS: case W_MASS1: return tr->m.mass;
    case W_RUN_GATE: return tr->runs[i].has_gate;
    default: return 1;
    }
}

// An HDF5 type's name as numpy would say it ("int32", "float16", "str").
static void type_name(hid_t ty, char *out, size_t size) {
    H5T_class_t c = H5Tget_class(ty);
    size_t bits = H5Tget_size(ty) * 8;
    if (c == H5T_INTEGER) snprintf(out, size, "%sint%zu", H5Tget_sign(ty) == H5T_SGN_NONE ? "u" : "", bits);
    else if (c == H5T_FLOAT) snprintf(out, size, "float%zu", bits);
    else snprintf(out, size, "%s", c == H5T_STRING ? "str" : "other");
}

int aha_tr_dset_info(const aha_tr *tr, const char *name, aha_tr_dset *d) {
    static const char *layouts[] = {[H5D_COMPACT] = "compact", [H5D_CONTIGUOUS] = "contiguous",
                                    [H5D_CHUNKED] = "chunked", [H5D_VIRTUAL] = "virtual"};
    memset(d, 0, sizeof *d);
    d->layout = "";
    hid_t f = (hid_t)tr->file;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return 0;
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT), sp = ds < 0 ? -1 : H5Dget_space(ds);
    hid_t ty = ds < 0 ? -1 : H5Dget_type(ds), dcpl = ds < 0 ? -1 : H5Dget_create_plist(ds);
    hsize_t dims[3] = {0};
    int rank = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
    H5D_layout_t lay = dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(dcpl);
    int ok = rank >= 0 && rank <= 3 && ty >= 0 && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0 &&
             lay >= H5D_COMPACT && lay <= H5D_VIRTUAL;
    if (ok) {
        d->rank = rank;
        for (int k = 0; k < rank; k++) d->dims[k] = (int64_t)dims[k];
        type_name(ty, d->dtype, sizeof d->dtype);
        d->layout = layouts[lay];
        d->bytes = lay == H5D_VIRTUAL ? 0 : (int64_t)H5Dget_storage_size(ds);
    }
    trace_h5_drop(dcpl);
    trace_h5_drop(ty);
    trace_h5_drop(sp);
    trace_h5_drop(ds);
    if (!ok) aha_err("%s: dataset %s cannot be read", tr->path, name);
    return ok ? 0 : -1;
}

int aha_tr_parts(const aha_tr *tr, int *n_parts, int *n_missing) {
    *n_parts = *n_missing = 0;
    const char *name = trace_dsets[TD_TOKENS].path; // every part holds tokens
    hid_t d = H5Dopen2((hid_t)tr->file, name, H5P_DEFAULT), dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    size_t n = 0;
    int rc = dcpl < 0 ? -1 : 0;
    if (rc == 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Pget_virtual_count(dcpl, &n) < 0) rc = -1;
    // Part names are relative to the index's folder (docs/trace-format.md).
    const char *slash = strrchr(tr->path, '/');
    int dir = slash ? (int)(slash - tr->path) : 1;
    char prev[4096] = "";
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char file[4096], path[8192];
        struct stat st;
        if (H5Pget_virtual_filename(dcpl, i, file, sizeof file) < 0) {
            rc = -1;
            break;
        }
        if (strcmp(file, prev) == 0) continue; // mappings of one part come together
        snprintf(prev, sizeof prev, "%s", file);
        if (file[0] == '/') snprintf(path, sizeof path, "%s", file);
        else snprintf(path, sizeof path, "%.*s/%s", dir, slash ? tr->path : ".", file);
        ++*n_parts;
        *n_missing += stat(path, &st) != 0;
    }
    trace_h5_drop(dcpl);
    trace_h5_drop(d);
    if (rc) aha_err("%s: reading the index of dataset %s failed", tr->path, name);
    return rc;
}
