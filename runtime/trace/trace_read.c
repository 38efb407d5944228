// The trace reader (trace_read.h): attributes by the schema's tables,
// datasets by its rows.
#include "trace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "f16.h"
#include "trace_attrs.h"
#include "trace_check.h"
#include "trace_codec.h"
#include "trace_files.h"
#include "trace_h5.h"
#include "trace_policy.h"

// what is wrong with tr; said as damage where an HDF5 call failed on the
// way to it (trace_h5_keep: metadata that fails its checksum, say).
static int fail(const aha_tr *tr, const char *what) {
    if (!trace_h5_damaged(tr->path, what)) aha_err("%s: %s", tr->path, what);
    return -1;
}

// 1 when the trace has an object at name, 0 when not, -1 (with a message)
// when its links cannot be read: damage, never "absent".
static int exists(const aha_tr *tr, const char *name) {
    hid_t f = trace_files_get(tr);
    htri_t e = f < 0 ? -1 : H5Lexists(f, name, H5P_DEFAULT);
    if (f < 0) return -1;
    if (e < 0) {
        char what[200];
        snprintf(what, sizeof what, "looking up %s", name);
        trace_h5_fail(tr->path, what);
    }
    return e < 0 ? -1 : e > 0;
}

// Length along dimension dim of a dataset, or -1 when it is absent.
// (An HDF5 call that fails keeps its cause: the message says damage.)
static int64_t dset_dim(hid_t f, const char *name, int rank, int dim) {
    htri_t e = H5Lexists(f, name, H5P_DEFAULT);
    if (e < 0) trace_h5_keep();
    if (e <= 0) return -1;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[3] = {0};
    int64_t n = -1;
    if (sp < 0) trace_h5_keep();
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == rank && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0)
        n = (int64_t)dims[dim];
    trace_h5_drop(sp);
    trace_h5_drop(d);
    return n;
}

// Instance i of row id, of the trace's shape ([T], [L, T, H], [n_docs] or
// [n_docs + 1]), or an error naming it.
static int check_shape(const aha_tr *tr, hid_t f, trace_dset_id id, int i) {
    const trace_shape sh = trace_dsets[id].shape;
    char name[160], what[300];
    aha_tr_name(tr, id, i, name, sizeof name);
    if (sh == SH_LTH) {
        if (dset_dim(f, name, 3, 1) == tr->n_tokens && dset_dim(f, name, 3, 0) == tr->m.n_layers &&
            dset_dim(f, name, 3, 2) == tr->m.n_heads)
            return 0;
        snprintf(what, sizeof what, "dataset %s is missing or not [%d, %lld, %d]", name, tr->m.n_layers,
                 (long long)tr->n_tokens, tr->m.n_heads);
        return fail(tr, what);
    }
    if (dset_dim(f, name, 1, 0) == aha_tr_len(tr, id)) return 0;
    snprintf(what, sizeof what, "dataset %s is missing or not [%s]", name,
             sh == SH_T ? "T" : sh == SH_DOC ? "n_docs" : "n_docs + 1");
    return fail(tr, what);
}

static int chunk_len(hid_t f, const char *name) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), p = d < 0 ? -1 : H5Dget_create_plist(d);
    hsize_t c[1] = {0};
    int n = p >= 0 && H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 1, c) == 1 ? (int)c[0] : 0;
    trace_h5_drop(p);
    trace_h5_drop(d);
    return n > 0 ? n : 4096;
}

typedef struct {  // read_runs' walk
    aha_tr *tr;
    int said;     // a run failed with its own message
} run_walk;

static herr_t run_visit(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    run_walk *w = arg;
    aha_tr *tr = w->tr;
    H5O_info_t oi;
    char where[128], what[160];
    snprintf(where, sizeof where, "runs/%s", name);
    snprintf(what, sizeof what, "reading %s", where);
    w->said = 1;
    if (tr->n_runs == AHA_TRACE_MAX_RUNS) {
        aha_err("%s: more than %d runs", tr->path, AHA_TRACE_MAX_RUNS);
        return -1;
    }
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0) return trace_h5_fail(tr->path, what);
    w->said = 0;
    if (oi.type != H5O_TYPE_GROUP) return 0; // not a run
    hid_t r = H5Gopen2(g, name, H5P_DEFAULT);
    if (r < 0) {
        w->said = 1;
        return trace_h5_fail(tr->path, what);
    }
    aha_trace_run *run = &tr->runs[tr->n_runs++];
    void *obj[OBJ_COUNT] = {[OBJ_RUN] = run};
    int rc = (run->name = strdup(name)) ? trace_attrs_read(r, tr->path, where, &trace_groups[TG_RUN], obj, 0) : -1;
    if (rc == 0 && run->full_pass < 0) run->full_pass = aha_policy_full_pass(run->policy); // a trace before it
    trace_h5_drop(r);
    w->said = rc < 0;
    return rc < 0 ? -1 : 0;
}

// Runs in creation order when the file tracks it (the order they were
// declared), else by name.
static int read_runs(aha_tr *tr, hid_t f) {
    const char *runs = trace_groups[TG_RUNS].path;
    int have = exists(tr, runs);
    if (have <= 0) return have;
    hid_t g = H5Gopen2(f, runs, H5P_DEFAULT), p = g < 0 ? -1 : H5Gget_create_plist(g);
    unsigned order = 0;
    hsize_t idx = 0;
    run_walk w = {tr, 0};
    herr_t e = p < 0 || H5Pget_link_creation_order(p, &order) < 0 ? -1
               : H5Literate(g, order & H5P_CRT_ORDER_TRACKED ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME, H5_ITER_INC, &idx,
                            run_visit, &w);
    if (e < 0 && !w.said) trace_h5_fail(tr->path, "reading the runs");
    trace_h5_drop(p);
    trace_h5_drop(g);
    for (int r = 0; e >= 0 && r < tr->n_runs; r++) {
        char gate[160];
        int has = exists(tr, aha_tr_name(tr, TD_RUN_GATE, r, gate, sizeof gate));
        if (has < 0) e = -1;
        tr->runs[r].has_gate = has > 0;
    }
    return e < 0 ? -1 : 0;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// The width of each string row's fixed-length strings, as the file stores
// them, into tr->m (a version-1 trace's variable-length strings: 0).
static int str_widths(aha_tr *tr, hid_t f) {
    for (int id = 0; id < TD_COUNT; id++) {
        int have = trace_dsets[id].type == TY_STR ? exists(tr, trace_dsets[id].path) : 0;
        if (have < 0) return -1;
        if (!have) continue;
        hid_t d = H5Dopen2(f, trace_dsets[id].path, H5P_DEFAULT), ty = d < 0 ? -1 : H5Dget_type(d);
        size_t w = ty >= 0 && H5Tget_class(ty) == H5T_STRING ? H5Tget_size(ty) : 0;
        int vlen = ty >= 0 ? H5Tis_variable_str(ty) : -1;
        trace_h5_drop(ty);
        trace_h5_drop(d);
        if (vlen < 0 || (!vlen && (w < 1 || w > AHA_TRACE_MAX_WIDTH))) {
            aha_err("%s: dataset %s is not strings of 1..%d bytes", tr->path, trace_dsets[id].path,
                    AHA_TRACE_MAX_WIDTH);
            return -1;
        }
        if (!trace_str_width_off[id] && !vlen && (int)w != trace_str_width_fixed[id]) {
            aha_err("%s: dataset %s is not strings of %d bytes", tr->path, trace_dsets[id].path,
                    trace_str_width_fixed[id]);
            return -1;
        }
        if (trace_str_width_off[id]) *aha_trace_str_width_at(&tr->m, id) = vlen ? 0 : (int)w;
    }
    return 0;
}

// Which of the datasets that exist when the model or the run has them
// (gate, window_error, mass_far) this trace has; then every dataset it has,
// of its shape, and the strings' widths.
static int check_shapes(aha_tr *tr, hid_t f) {
    if ((tr->m.aha = exists(tr, trace_dsets[TD_GATE].path)) < 0 ||
        (tr->m.werr = exists(tr, trace_groups[TG_WINDOW_ERROR].path)) < 0 ||
        (tr->m.mass = exists(tr, trace_groups[TG_MASS_FAR].path)) < 0)
        return -1;
    for (int id = 0; id < TD_COUNT; id++)
        for (int i = 0; i < aha_tr_n_instances(tr, id); i++)
            if (aha_tr_has(tr, id, i) && check_shape(tr, f, id, i) != 0) return -1;
    return str_widths(tr, f);
}

// Attributes, shapes and runs of an open file; empty: a trace without
// documents is fine.
static int read_meta(aha_tr *tr, int empty) {
    hid_t f = trace_files_get(tr);
    aha_trace_prov prov = {0};
    aha_trace_state st = {0};
    void *obj[OBJ_COUNT] = {[OBJ_META] = &tr->m, [OBJ_PROV] = &prov, [OBJ_STATE] = &st};
    int rc = trace_attrs_read(f, tr->path, "root", &trace_groups[TG_ROOT], obj, 0);
    aha_trace_prov_free(&prov);
    tr->format_version = (int)st.format_version;
    tr->complete = (int)st.complete;
    if (tr->format_version > AHA_TRACE_VERSION) { // read first: it explains what follows
        aha_err("%s: format_version %d is newer than this aha reads (%d); update aha", tr->path,
                tr->format_version, AHA_TRACE_VERSION);
        return -1;
    }
    if (rc < 0) return -1;
    if (tr->format_version < 1) return fail(tr, "root attribute format_version is not >= 1");
    if (tr->m.n_layers < 1 || tr->m.n_heads < 1 || tr->m.n_eps < 1 || tr->m.n_windows < 1 ||
        tr->m.n_layers > AHA_TRACE_MAX_LAYERS || tr->m.n_heads > AHA_TRACE_MAX_HEADS)
        return fail(tr, "root attributes n_layers, n_heads, eps, windows are missing or bad");
    int *w = (int *)tr->m.windows, k = 0;
    qsort(w, (size_t)tr->m.n_windows, sizeof *w, cmp_int);
    for (int i = 0; i < tr->m.n_windows; i++) // ascending, distinct
        if (w[i] >= 1 && (k == 0 || w[i] != w[k - 1])) w[k++] = w[i];
    tr->m.n_windows = k;
    // T and n_docs, which every other dataset's shape is checked against.
    const int64_t nd = dset_dim(f, trace_dsets[TD_DOC_OFFSETS].path, 1, 0);
    tr->n_tokens = dset_dim(f, trace_dsets[TD_TOKENS].path, 1, 0);
    if (nd < 1 || tr->n_tokens < 0) return fail(tr, "datasets tokens, doc_offsets are missing or bad");
    tr->n_docs = nd - 1;
    if (tr->n_docs > tr->n_tokens) return fail(tr, "dataset doc_offsets has more documents than there are tokens");
    if ((tr->doc_index = exists(tr, trace_dsets[TD_DOC_INDEX].path)) < 0) return -1;
    // Both or neither (traces before them): one that exists but does not open is damage, not absence.
    const int src = exists(tr, trace_dsets[TD_DOC_SOURCE].path);
    const int sha = exists(tr, trace_dsets[TD_DOC_SHA256].path);
    if (src < 0 || sha < 0) return -1;
    if (src != sha) return fail(tr, "datasets doc_source, doc_sha256 are not both there");
    tr->doc_source = src;
    // A complete trace without documents is a shard that had none: it holds
    // nothing, and says so. An unfinished one has recorded nothing yet.
    if (!empty && !tr->complete && tr->n_docs == 0)
        return fail(tr, "unfinished trace without documents: nothing is recorded yet (aha record --resume continues it)");
    tr->chunk_tokens = chunk_len(f, trace_dsets[TD_POSITION].path);
    return read_runs(tr, f) || check_shapes(tr, f) ? -1 : 0;
}

// doc_offsets, read whole (aha_tr_read checks it: trace_check.c), into tr.
static int read_offsets(aha_tr *tr) {
    int64_t *offs = aha_malloc((size_t)tr->n_docs + 1, sizeof *offs, tr->path);
    if (!offs || aha_tr_read(tr, TD_DOC_OFFSETS, 0, 0, tr->n_docs + 1, offs) != 0) {
        free(offs);
        return -1;
    }
    tr->doc_offsets = offs;
    return 0;
}

// Open the file at path (or its image: data[size]) into tr.
static int tr_open(aha_tr *tr, const char *path, const void *data, size_t size, unsigned flags) {
    memset(tr, 0, sizeof *tr);
    trace_h5_forget();
    tr->path = path;
    tr->file = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    struct stat st;
    if (!data && stat(path, &st) != 0) return fail(tr, strerror(errno));
    if (!data && S_ISREG(st.st_mode) && access(path, R_OK) != 0) return fail(tr, strerror(errno));
    int fd = data || !S_ISREG(st.st_mode) ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == EMFILE) // HDF5 would say "not an HDF5 file"
        return fail(tr, "cannot open: the process has as many files open as its limit allows (ulimit -n)");
    if (fd >= 0) close(fd);
    if (data ? size == 0 : !S_ISREG(st.st_mode) || H5Fis_hdf5(path) <= 0) return fail(tr, "not an HDF5 file");
    // No file locking: a trace being written is an index that is never
    // modified in place, so reading it beside the writer is safe.
    hid_t f = data ? trace_file_open_image(path, data, size) : trace_file_open(path, 0);
    if (f < 0) {
        char cause[256];
        trace_h5_cause(cause);
        if (strstr(cause, "checksum"))
            aha_err("%s: the file is damaged: its metadata fails its checksum (opening it)", path);
        else aha_err("%s: cannot open as HDF5 (truncated or damaged?)%s%s", path, cause[0] ? ": " : "", cause);
        return -1;
    }
    if (data) {
        tr->file = f;
    } else {
        tr->dev = (uint64_t)st.st_dev;
        tr->ino = (uint64_t)st.st_ino;
        trace_files_add(tr, f);
    }
    if (read_meta(tr, flags & AHA_TR_EMPTY) != 0 || (!(flags & AHA_TR_LOOK) && read_offsets(tr) != 0)) {
        aha_tr_close(tr);
        return -1;
    }
    return 0;
}

int aha_tr_open(aha_tr *tr, const char *path) { return tr_open(tr, path, NULL, 0, 0); }

int aha_tr_open_flags(aha_tr *tr, const char *path, unsigned flags) { return tr_open(tr, path, NULL, 0, flags); }

int aha_tr_open_empty(aha_tr *tr, const char *path) { return tr_open(tr, path, NULL, 0, AHA_TR_EMPTY | AHA_TR_LOOK); }

int aha_tr_open_image(aha_tr *tr, const char *name, const void *data, size_t size, unsigned flags) {
    return tr_open(tr, name, data, size, flags);
}

void aha_tr_close(aha_tr *tr) {
    trace_h5_drop((hid_t)tr->file);
    trace_files_drop(tr);
    tr->file = -1;
    tr->serial = 0;
    aha_trace_meta_free(&tr->m);
    for (int r = 0; r < tr->n_runs; r++) aha_trace_run_free(&tr->runs[r]);
    tr->n_runs = 0;
    free(tr->doc_offsets);
    tr->doc_offsets = NULL;
}

int aha_tr_dup(aha_tr *d, const aha_tr *s) {
    *d = *s;
    d->file = -1;
    d->serial = 0;
    d->doc_offsets = NULL; // the file's: read through it
    int ok = aha_trace_meta_copy(&d->m, &s->m) == 0;
    for (int r = 0; r < s->n_runs; r++) {
        d->runs[r].name = strdup(s->runs[r].name);
        d->runs[r].policy = strdup(s->runs[r].policy);
        ok = ok && d->runs[r].name && d->runs[r].policy;
    }
    if (ok) return 0;
    aha_tr_close(d);
    aha_err("out of memory");
    return -1;
}

const char *aha_tr_name(const aha_tr *tr, trace_dset_id id, int i, char *buf, int size) {
    const int run = trace_dsets[id].when == W_RUN || trace_dsets[id].when == W_RUN_GATE;
    if (trace_row_name(id, i, &tr->m, run ? tr->runs[i].name : "", buf, (size_t)size, NULL, 0) < 0)
        snprintf(buf, (size_t)size, "%s", trace_dsets[id].path); // too long: fails to open, by its template
    return buf;
}

int64_t aha_tr_len(const aha_tr *tr, trace_dset_id id) {
    switch (trace_dsets[id].shape) {
    case SH_DOC: return tr->n_docs;
    case SH_DOCS: return tr->n_docs + 1;
    default: return tr->n_tokens;
    }
}

// Elements [t0, t0+n) of dataset d (row ds, called name) into buf as mem,
// through HDF5: a virtual dataset (an unfinished trace: HDF5 verifies its
// parts' checksums), a version-1 string, a layout the codec does not read.
static int read_h5(const aha_tr *tr, hid_t d, const char *name, const trace_dset *ds, int64_t t0, int64_t n,
                   hid_t mem, void *buf) {
    hsize_t start[3] = {0, (hsize_t)t0, 0}, count[3] = {(hsize_t)tr->m.n_layers, (hsize_t)n, (hsize_t)tr->m.n_heads};
    const int r3 = ds->shape == SH_LTH;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(r3 ? 3 : 1, r3 ? count : count + 1, NULL);
    int ok = fs >= 0 && ms >= 0 &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, r3 ? start : start + 1, NULL, r3 ? count : count + 1, NULL) >= 0 &&
             H5Dread(d, mem, ms, fs, H5P_DEFAULT, buf) >= 0;
    trace_h5_drop(ms);
    trace_h5_drop(fs);
    if (ok) return 0;
    char what[256];
    snprintf(what, sizeof what, "reading %s [%lld, %lld)", name, (long long)t0, (long long)(t0 + n));
    return trace_h5_fail(tr->path, what);
}

// A version-1 trace's variable-length strings [t0, t0+n) of dataset d (row
// ds, called name, of type ty) into text[n], each malloc'd.
static int read_vlen(const aha_tr *tr, hid_t d, const trace_dset *ds, const char *name, int64_t t0, int64_t n,
                     hid_t ty, char **text) {
    int rc = read_h5(tr, d, name, ds, t0, n, ty, text);
    for (int64_t i = 0; rc == 0 && i < n; i++) { // HDF5's memory: copied, then freed by HDF5
        char *s = strdup(text[i] ? text[i] : "");
        H5free_memory(text[i]);
        text[i] = s;
        rc = s ? 0 : -1;
    }
    if (rc) aha_err("%s: out of memory for strings", tr->path);
    return rc;
}

// Fixed-length strings of w bytes, each NUL-padded, likewise: through the
// codec, or HDF5 where it does not read them.
static int read_fixed(const aha_tr *tr, hid_t d, const trace_dset *ds, const char *name, const char *what,
                      int64_t t0, int64_t n, hid_t ty, size_t w, char **text) {
    char *raw = aha_malloc((size_t)n, w, tr->path);
    int rc = raw ? trace_codec_read(d, what, -1, 1, 1, 1, t0, n, w, raw) : -1;
    if (rc == 1) rc = read_h5(tr, d, name, ds, t0, n, ty, raw);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const char *s = raw + (size_t)i * w;
        if (!trace_str_padded(s, w)) aha_err("%s [%lld]: not a NUL-padded string", what, (long long)(t0 + i));
        else if (!(text[i] = strndup(s, w))) aha_err("%s: out of memory", what);
        else continue;
        aha_tr_free_text(i, text);
        rc = -1;
    }
    free(raw);
    return rc;
}

// Strings [t0, t0+n) of dataset d (row ds) into text[n], each malloc'd.
static int read_text(const aha_tr *tr, hid_t d, const trace_dset *ds, const char *name, const char *what,
                     int64_t t0, int64_t n, char **text) {
    hid_t ty = H5Dget_type(d);
    int vlen = ty >= 0 && H5Tget_class(ty) == H5T_STRING ? H5Tis_variable_str(ty) : -1;
    size_t w = ty >= 0 ? H5Tget_size(ty) : 0;
    int rc = -1;
    if (vlen < 0 || (!vlen && (w < 1 || w > AHA_TRACE_MAX_WIDTH)))
        aha_err("%s: not strings of 1..%d bytes", what, AHA_TRACE_MAX_WIDTH);
    else
        rc = vlen ? read_vlen(tr, d, ds, name, t0, n, ty, text) : read_fixed(tr, d, ds, name, what, t0, n, ty, w, text);
    trace_h5_drop(ty);
    return rc ? -1 : 0;
}

// 0 when dataset d (called name) is of type ftype, what the schema says; else
// -1 with a message. HDF5 converts whatever a file declares, and a damaged
// type has made it write past its own buffers: it reads only this.
static int same_type(const aha_tr *tr, hid_t d, const char *name, hid_t ftype) {
    hid_t ty = H5Dget_type(d);
    int same = ty >= 0 && H5Tequal(ty, ftype) > 0;
    trace_h5_drop(ty);
    if (!same) aha_err("%s: dataset %s is not of the type the schema gives it", tr->path, name);
    return same ? 0 : -1;
}

// Elements [t0, t0+n) of open dataset d (row id, called name) into buf, in
// memory as aha_tr_read gives them.
static int read_values(const aha_tr *tr, hid_t d, trace_dset_id id, const char *name, int64_t t0, int64_t n,
                       void *buf) {
    const trace_dset *ds = &trace_dsets[id];
    const int rank = ds->shape == SH_LTH ? 3 : 1;
    char what[256];
    snprintf(what, sizeof what, "%s: %s, %s", tr->path, name,
             ds->shape == SH_DOCS ? "entries" : ds->shape == SH_DOC ? "documents" : "tokens");
    if (ds->type == TY_STR) return read_text(tr, d, ds, name, what, t0, n, buf);
    hid_t f16 = ds->type == TY_F16 ? trace_h5_f16() : -1;
    size_t es = trace_types[ds->type].size;
    int rc = trace_codec_read(d, what, trace_ty_file(ds->type, f16), rank, tr->m.n_layers, tr->m.n_heads, t0, n, es,
                              buf);
    if (rc == 0 && ds->type == TY_F16) { // float16 bits to floats, in place from the end
        size_t k = (size_t)n * (rank == 3 ? (size_t)tr->m.n_layers * (size_t)tr->m.n_heads : 1);
        for (size_t j = k; j-- > 0;) ((float *)buf)[j] = aha_f16_to_f32(((const uint16_t *)buf)[j]);
    }
    if (rc == 1 && (rc = same_type(tr, d, name, trace_ty_file(ds->type, f16))) == 0)
        rc = read_h5(tr, d, name, ds, t0, n, ds->type == TY_F16 ? H5T_NATIVE_FLOAT : trace_ty_mem(ds->type, f16), buf);
    trace_h5_drop(f16);
    return rc ? -1 : 0;
}

int aha_tr_read(const aha_tr *tr, trace_dset_id id, int i, int64_t t0, int64_t n, void *buf) {
    char name[160];
    aha_tr_name(tr, id, i, name, sizeof name);
    if (t0 < 0 || n < 0 || t0 > aha_tr_len(tr, id) - n) {
        aha_err("%s: reading %s [%lld, %lld): outside the trace's [0, %lld)", tr->path, name, (long long)t0,
                (long long)(t0 + n), (long long)aha_tr_len(tr, id));
        return -1;
    }
    hid_t f = trace_files_get(tr), d = f < 0 ? -1 : H5Dopen2(f, name, H5P_DEFAULT);
    if (f < 0) return -1;
    if (d < 0) {
        char what[200];
        snprintf(what, sizeof what, "opening dataset %s", name);
        return trace_h5_fail(tr->path, what);
    }
    int rc = read_values(tr, d, id, name, t0, n, buf);
    trace_h5_drop(d);
    return rc || trace_check_values(tr, id, name, t0, n, buf) ? -1 : 0;
}

void aha_tr_free_text(int64_t n, char **text) {
    for (int64_t i = 0; i < n; i++) free(text[i]), text[i] = NULL;
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
    free(all);
    free(idx);
    return NULL;
}

// A shard attribute: "" (the whole run: *N = 0), "I/N" or "I,J,.../N"
// (indices ascending, distinct, below N) into *N and have[0..N). 0 or -1.
int aha_tr_shard_parse(const char *s, int *N, unsigned char **have) {
    *N = 0;
    *have = NULL;
    if (!s[0]) return 0;
    const char *slash = strrchr(s, '/');
    char *end;
    long n = slash ? strtol(slash + 1, &end, 10) : 0;
    if (!slash || n < 1 || n > (1 << 24) || *end || !(*have = calloc((size_t)n, 1))) return -1;
    for (const char *p = s; p < slash; p = end + (*end == ',')) {
        long i = strtol(p, &end, 10);
        if (end == p || i < 0 || i >= n || (*have)[i] || (end != slash && *end != ',')) {
            free(*have);
            *have = NULL;
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
    *shards = NULL;
    *missing = 0;
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
        snprintf(va, sizeof d.a, "%d", a->format_version);
        snprintf(vb, sizeof d.b, "%d", b->format_version);
    } else if (differ) {
        field = d.what;
    } else if (a->n_runs != b->n_runs) {
        field = "n_runs";
        snprintf(va, sizeof d.a, "%d", a->n_runs);
        snprintf(vb, sizeof d.b, "%d", b->n_runs);
    }
    for (int i = 0; !field && i < a->n_runs; i++)
        if (strcmp(a->runs[i].name, b->runs[i].name) != 0) {
            field = "runs";
            snprintf(va, sizeof d.a, "%s", a->runs[i].name);
            snprintf(vb, sizeof d.b, "%s", b->runs[i].name);
        }
    if (!field) return 0;
    aha_err("%s and %s differ in %s (%s vs %s): they cannot be combined (--compare puts them side by side)",
            a->path, b->path, field, va, vb);
    return -1;
}

// ---- what a trace holds (aha info) ----

void aha_tr_attrs_obj(aha_tr_attrs *a, int g, void *obj[OBJ_COUNT]) {
    for (int k = 0; k < OBJ_COUNT; k++) obj[k] = NULL;
    obj[OBJ_META] = &a->m;
    obj[OBJ_STATE] = &a->state;
    obj[OBJ_PROV] = g == TG_PROVENANCE ? &a->prov : &a->root;
}

int aha_tr_attrs_read(const aha_tr *tr, aha_tr_attrs *a) {
    memset(a, 0, sizeof *a);
    hid_t f = trace_files_get(tr), g = -1;
    if (f < 0) return -1;
    void *obj[OBJ_COUNT];
    aha_tr_attrs_obj(a, TG_ROOT, obj);
    int rc = trace_attrs_read(f, tr->path, "root", &trace_groups[TG_ROOT], obj, 0);
    const char *prov = trace_groups[TG_PROVENANCE].path;
    aha_tr_attrs_obj(a, TG_PROVENANCE, obj);
    int have = rc == 0 ? exists(tr, prov) : 0;
    if (have < 0) rc = -1;
    if (have > 0 && (g = H5Gopen2(f, prov, H5P_DEFAULT)) >= 0)
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

int aha_tr_n_instances(const aha_tr *tr, trace_dset_id id) { return trace_row_count(id, &tr->m, tr->n_runs); }

int aha_tr_has(const aha_tr *tr, trace_dset_id id, int i) {
    if (id == TD_DOC_INDEX) return tr->doc_index && i == 0; // traces before them lack these
    if (id == TD_DOC_SOURCE || id == TD_DOC_SHA256) return tr->doc_source && i == 0;
    return trace_row_has(id, i, &tr->m, tr->runs, tr->n_runs);
}

// An HDF5 type's name as numpy would say it ("int32", "float16", "str").
static void type_name(hid_t ty, char *out, size_t size) {
    H5T_class_t c = H5Tget_class(ty);
    size_t bits = H5Tget_size(ty) * 8;
    if (c == H5T_INTEGER) snprintf(out, size, "%sint%zu", H5Tget_sign(ty) == H5T_SGN_NONE ? "u" : "", bits);
    else if (c == H5T_FLOAT) snprintf(out, size, "float%zu", bits);
    else if (c == H5T_STRING) snprintf(out, size, "%s", H5Tis_variable_str(ty) > 0 ? "vlen str" : "str");
    else snprintf(out, size, "other");
}

// Chunks dataset ds (space sp, rank dims) stores and needs, and whether they
// carry checksums, into d.
static int chunk_info(hid_t ds, hid_t sp, const hsize_t *dims, aha_tr_dset *d) {
    hid_t p = H5Dget_create_plist(ds);
    hsize_t cd[3] = {0}, n = 0;
    int ok = p >= 0 && H5Pget_chunk(p, 3, cd) == d->rank && H5Dget_num_chunks(ds, sp, &n) >= 0;
    d->chunks = (int64_t)n;
    d->chunks_want = 1;
    for (int k = 0; ok && k < d->rank; k++)
        d->chunks_want *= cd[k] ? (int64_t)((dims[k] + cd[k] - 1) / cd[k]) : 0;
    d->checksum = ok ? trace_codec_has_checksum(ds) : -1;
    trace_h5_drop(p);
    return ok && d->checksum >= 0 ? 0 : -1;
}

int aha_tr_dset_info(const aha_tr *tr, const char *name, aha_tr_dset *d) {
    static const char *layouts[] = {[H5D_COMPACT] = "compact", [H5D_CONTIGUOUS] = "contiguous",
                                    [H5D_CHUNKED] = "chunked", [H5D_VIRTUAL] = "virtual"};
    memset(d, 0, sizeof *d);
    d->layout = "";
    int have = exists(tr, name);
    if (have <= 0) return have;
    hid_t f = trace_files_get(tr), ds = H5Dopen2(f, name, H5P_DEFAULT), sp = ds < 0 ? -1 : H5Dget_space(ds);
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
        if (lay == H5D_CHUNKED) ok = chunk_info(ds, sp, dims, d) == 0;
    }
    trace_h5_drop(dcpl);
    trace_h5_drop(ty);
    trace_h5_drop(sp);
    trace_h5_drop(ds);
    if (!ok) {
        trace_h5_keep();
        char what[200];
        snprintf(what, sizeof what, "dataset %s cannot be read", name);
        fail(tr, what);
    }
    return ok ? 0 : -1;
}

int aha_tr_parts(const aha_tr *tr, int *n_parts, int *n_missing) {
    *n_parts = 0;
    *n_missing = 0;
    const char *name = trace_dsets[TD_TOKENS].path; // every part holds tokens
    hid_t f = trace_files_get(tr), d = f < 0 ? -1 : H5Dopen2(f, name, H5P_DEFAULT);
    hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
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
        trace_vds_unescape(file);
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
