#include "trace_read.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_chunks.h"
#include "err.h"

static int fail(const aha_tr *tr, const char *what) {
    aha_err("%s: %s", tr->path, what);
    return -1;
}

// ---- attributes ----

static int attr_exists(hid_t loc, const char *name) { return H5Aexists(loc, name) > 0; }

// A scalar string attribute into buf; "" when absent.
static void attr_str(hid_t loc, const char *name, char *buf, size_t size) {
    buf[0] = '\0';
    if (!attr_exists(loc, name)) return;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), ty = a < 0 ? -1 : H5Aget_type(a);
    if (ty >= 0 && H5Tget_class(ty) == H5T_STRING) {
        if (H5Tis_variable_str(ty) > 0) {
            char *s = NULL;
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, H5T_VARIABLE);
            H5Tset_cset(mt, H5Tget_cset(ty));
            if (H5Aread(a, mt, &s) >= 0 && s) snprintf(buf, size, "%s", s);
            H5free_memory(s);
            H5Tclose(mt);
        } else {
            size_t n = H5Tget_size(ty);
            char *s = calloc(n + 1, 1);
            if (s && H5Aread(a, ty, s) >= 0) snprintf(buf, size, "%s", s);
            free(s);
        }
    }
    if (ty >= 0) H5Tclose(ty);
    if (a >= 0) H5Aclose(a);
}

// A numeric attribute (scalar or 1-D) as doubles: up to max values into out;
// returns the count, or -1 when absent or not numeric.
static int attr_num(hid_t loc, const char *name, double *out, int max) {
    if (!attr_exists(loc, name)) return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), sp = a < 0 ? -1 : H5Aget_space(a);
    hid_t ty = a < 0 ? -1 : H5Aget_type(a);
    int n = -1;
    H5T_class_t c = ty < 0 ? H5T_NO_CLASS : H5Tget_class(ty);
    hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    if ((c == H5T_INTEGER || c == H5T_FLOAT) && np >= 0 && np <= max &&
        H5Aread(a, H5T_NATIVE_DOUBLE, out) >= 0)
        n = (int)np;
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
    return n;
}

static int attr_int(hid_t loc, const char *name, int def) {
    double v;
    return attr_num(loc, name, &v, 1) == 1 ? (int)v : def;
}

// ---- datasets ----

// Length along dimension dim of a dataset, or -1 when it is absent.
static int64_t dset_dim(hid_t f, const char *name, int rank, int dim) {
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[3] = {0};
    int64_t n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == rank && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0)
        n = (int64_t)dims[dim];
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return n;
}

// An [L, T, H] dataset of the trace's shape, or an error naming it.
static int check_lth(const aha_tr *tr, hid_t f, const char *name) {
    if (dset_dim(f, name, 3, 1) == tr->n_tokens && dset_dim(f, name, 3, 0) == tr->n_layers &&
        dset_dim(f, name, 3, 2) == tr->n_heads)
        return 0;
    aha_err("%s: dataset %s is missing or not [%d, %lld, %d]", tr->path, name, tr->n_layers,
            (long long)tr->n_tokens, tr->n_heads);
    return -1;
}

static int chunk_len(hid_t f, const char *name) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), p = d < 0 ? -1 : H5Dget_create_plist(d);
    hsize_t c[1] = {0};
    int n = p >= 0 && H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 1, c) == 1 ? (int)c[0] : 0;
    if (p >= 0) H5Pclose(p);
    if (d >= 0) H5Dclose(d);
    return n > 0 ? n : 4096;
}

static herr_t run_visit(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    aha_tr *tr = arg;
    if (tr->n_runs == AHA_TR_MAX_RUNS) return 0;
    hid_t r = H5Gopen2(g, name, H5P_DEFAULT);
    if (r < 0) return 0;
    aha_tr_run *run = &tr->runs[tr->n_runs++];
    snprintf(run->name, sizeof run->name, "%s", name);
    attr_str(r, "policy", run->policy, sizeof run->policy);
    run->window = attr_int(r, "window", 0);
    if (attr_num(r, "flops_executed", &run->flops_executed, 1) != 1) run->flops_executed = 0;
    if (attr_num(r, "flops_full", &run->flops_full, 1) != 1) run->flops_full = 0;
    run->has_gate = H5Lexists(r, "gate", H5P_DEFAULT) > 0;
    H5Gclose(r);
    return 0;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

// Attributes, shapes and runs of an open file.
static int read_meta(aha_tr *tr) {
    hid_t f = (hid_t)tr->file;
    char fmt[64];
    attr_str(f, "format", fmt, sizeof fmt);
    if (strcmp(fmt, "aha-trace") != 0)
        return fail(tr, "not an aha trace (root attribute format is not \"aha-trace\")");
    tr->format_version = attr_int(f, "format_version", -1);
    if (tr->format_version < 1) return fail(tr, "root attribute format_version is missing");
    if (tr->format_version > AHA_TR_VERSION) {
        aha_err("%s: format_version %d is newer than this aha reads (%d); update aha", tr->path,
                tr->format_version, AHA_TR_VERSION);
        return -1;
    }
    attr_str(f, "model", tr->model, sizeof tr->model);
    attr_str(f, "architecture", tr->arch, sizeof tr->arch);
    attr_str(f, "router", tr->router, sizeof tr->router);
    attr_str(f, "mode", tr->mode, sizeof tr->mode);
    attr_str(f, "dataset", tr->dataset, sizeof tr->dataset);
    attr_str(f, "device", tr->device, sizeof tr->device);
    if (!tr->device[0]) snprintf(tr->device, sizeof tr->device, "cpu"); // traces before the attribute
    tr->n_layers = attr_int(f, "n_layers", 0);
    tr->n_heads = attr_int(f, "n_heads", 0);
    tr->n_kv_heads = attr_int(f, "n_kv_heads", 0);
    tr->head_dim = attr_int(f, "head_dim", 0);
    tr->vocab = attr_int(f, "vocab", 0);
    tr->complete = attr_int(f, "complete", 0);
    tr->sinks = attr_int(f, "sinks", 0);
    if (attr_num(f, "tau", &tr->tau, 1) != 1) tr->tau = 0;
    tr->n_eps = attr_num(f, "eps", tr->eps, AHA_TR_MAX_EPS);
    double w[AHA_TR_MAX_WINDOWS];
    int nw = attr_num(f, "windows", w, AHA_TR_MAX_WINDOWS);
    if (tr->n_layers < 1 || tr->n_heads < 1 || tr->n_eps < 1 || nw < 1)
        return fail(tr, "root attributes n_layers, n_heads, eps, windows are missing or bad");
    tr->n_windows = 0;
    for (int i = 0; i < nw; i++) tr->windows[tr->n_windows++] = (int)w[i];
    qsort(tr->windows, (size_t)nw, sizeof(int), cmp_int);
    int k = 0; // drop duplicates
    for (int i = 0; i < nw; i++)
        if (tr->windows[i] >= 1 && (k == 0 || tr->windows[i] != tr->windows[k - 1])) tr->windows[k++] = tr->windows[i];
    tr->n_windows = k;
    int64_t nd = dset_dim(f, "doc_offsets", 1, 0);
    tr->n_tokens = dset_dim(f, "tokens", 1, 0);
    if (nd < 1 || tr->n_tokens < 0 || dset_dim(f, "position", 1, 0) != tr->n_tokens)
        return fail(tr, "datasets tokens, position, doc_offsets are missing or bad");
    tr->n_docs = nd - 1;
    if (tr->n_docs == 0 || tr->n_tokens == 0) return fail(tr, "empty trace: it holds no documents");
    char name[64];
    for (int e = 0; e < tr->n_eps; e++)
        if (check_lth(tr, f, aha_tr_dep_name(tr, e, name, sizeof name)) != 0) return -1;
    tr->has_gate = dset_dim(f, "gate", 3, 1) == tr->n_tokens;
    tr->has_werr = tr->n_windows > 0 && H5Lexists(f, "window_error", H5P_DEFAULT) > 0;
    for (int i = 0; tr->has_werr && i < tr->n_windows; i++)
        if (check_lth(tr, f, aha_tr_werr_name(tr, i, name, sizeof name)) != 0) return -1;
    tr->chunk_tokens = chunk_len(f, "position");
    tr->n_runs = 0;
    if (H5Lexists(f, "runs", H5P_DEFAULT) > 0) {
        hid_t g = H5Gopen2(f, "runs", H5P_DEFAULT);
        hsize_t idx = 0;
        // creation order when tracked (the order runs were declared), else by name
        H5_index_t by = H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, run_visit, tr) < 0
                            ? H5_INDEX_NAME : H5_INDEX_CRT_ORDER;
        if (by == H5_INDEX_NAME) {
            tr->n_runs = 0, idx = 0;
            H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, run_visit, tr);
        }
        H5Gclose(g);
    }
    return 0;
}

int aha_tr_open(aha_tr *tr, const char *path) {
    memset(tr, 0, sizeof *tr);
    tr->path = path;
    tr->file = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    struct stat st;
    if (stat(path, &st) != 0) return fail(tr, strerror(errno));
    if (!S_ISREG(st.st_mode) || H5Fis_hdf5(path) <= 0) return fail(tr, "not an HDF5 file");
    // No file locking: a trace being written is an index that is never
    // modified in place, so reading it beside the writer is safe.
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0) return fail(tr, "cannot open as HDF5 (truncated or damaged?)");
    tr->file = f;
    if (read_meta(tr) != 0) {
        aha_tr_close(tr);
        return -1;
    }
    return 0;
}

void aha_tr_close(aha_tr *tr) {
    if (tr->file >= 0) H5Fclose((hid_t)tr->file);
    tr->file = -1;
}

const char *aha_tr_dep_name(const aha_tr *tr, int e, char *buf, int size) {
    snprintf(buf, (size_t)size, "dependency/eps_%g", tr->eps[e]);
    return buf;
}

const char *aha_tr_werr_name(const aha_tr *tr, int i, char *buf, int size) {
    snprintf(buf, (size_t)size, "window_error/w_%d", tr->windows[i]);
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
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    if (!ok) {
        aha_err("%s: reading %s failed (a part file of an unfinished trace missing?)", tr->path, name);
        return -1;
    }
    return 0;
}

int aha_tr_read_lth(const aha_tr *tr, const char *name, int64_t t0, int64_t n, int u8, void *buf) {
    hid_t d = H5Dopen2((hid_t)tr->file, name, H5P_DEFAULT);
    int done = d >= 0 && aha_chunks_read(d, tr->n_layers, tr->n_heads, t0, n, u8 ? 1 : 4, buf) == 0;
    if (d >= 0) H5Dclose(d);
    if (done) return 0;
    hsize_t start[3] = {0, (hsize_t)t0, 0};
    hsize_t count[3] = {(hsize_t)tr->n_layers, (hsize_t)n, (hsize_t)tr->n_heads};
    return read_slab(tr, name, 3, start, count, u8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_UINT32, buf);
}

int aha_tr_read_lth_f32(const aha_tr *tr, const char *name, int64_t t0, int64_t n, float *buf) {
    hsize_t start[3] = {0, (hsize_t)t0, 0};
    hsize_t count[3] = {(hsize_t)tr->n_layers, (hsize_t)n, (hsize_t)tr->n_heads};
    return read_slab(tr, name, 3, start, count, H5T_NATIVE_FLOAT, buf);
}

int aha_tr_read_1d(const aha_tr *tr, const char *name, int64_t t0, int64_t n, char kind, void *buf) {
    hsize_t start[1] = {(hsize_t)t0}, count[1] = {(hsize_t)n};
    hid_t mem = kind == 'i' ? H5T_NATIVE_INT32 : kind == 'l' ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT;
    return read_slab(tr, name, 1, start, count, mem, buf);
}

int aha_tr_read_text(const aha_tr *tr, int64_t t0, int64_t n, char **out) {
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5T_CSET_UTF8);
    hsize_t start[1] = {(hsize_t)t0}, count[1] = {(hsize_t)n};
    int rc = read_slab(tr, "token_text", 1, start, count, mt, out);
    H5Tclose(mt);
    return rc;
}

void aha_tr_free_text(const aha_tr *tr, int64_t n, char **text) {
    (void)tr;
    for (int64_t i = 0; i < n; i++) H5free_memory(text[i]);
}

int aha_tr_check_same(const aha_tr *a, const aha_tr *b) {
    const char *field = NULL;
    char va[600] = "", vb[600] = "";
#define DIFF_S(x)                                                       \
    if (!field && strcmp(a->x, b->x) != 0) field = #x, snprintf(va, sizeof va, "%s", a->x), snprintf(vb, sizeof vb, "%s", b->x)
#define DIFF_I(x)                                                       \
    if (!field && a->x != b->x) field = #x, snprintf(va, sizeof va, "%g", (double)a->x), snprintf(vb, sizeof vb, "%g", (double)b->x)
    DIFF_I(format_version);
    DIFF_S(model);
    DIFF_S(arch);
    DIFF_I(n_layers);
    DIFF_I(n_heads);
    DIFF_S(router);
    DIFF_S(mode);
    DIFF_I(tau);
    DIFF_I(sinks);
    DIFF_I(n_eps);
    for (int e = 0; !field && e < a->n_eps; e++) DIFF_I(eps[e]);
    DIFF_I(n_windows);
    for (int i = 0; !field && i < a->n_windows; i++) DIFF_I(windows[i]);
    DIFF_I(has_gate);
    DIFF_I(has_werr);
    DIFF_I(n_runs);
    for (int i = 0; !field && i < a->n_runs; i++) DIFF_S(runs[i].name);
#undef DIFF_S
#undef DIFF_I
    if (!field) return 0;
    if (strcmp(field, "arch") == 0) field = "architecture";
    aha_err("%s and %s differ in %.*s (%s vs %s): they cannot be combined (--compare puts them side by side)",
            a->path, b->path, (int)strcspn(field, "["), field, va, vb); // "eps[e]" -> "eps"
    return -1;
}
