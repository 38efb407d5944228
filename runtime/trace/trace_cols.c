// This trace's datasets along the token axis (the columns), instances of
// the schema's rows, and doc_offsets: which there are, their shapes,
// descriptions, and creating them.
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "trace_codec.h"

// Row id's instance idx, named and described from v.
static int cols_push(aha_trace *t, trace_dset_id id, int idx, const trace_vars *v, double attr_value) {
    if (aha_grow(&t->cols, &t->cap_cols, (size_t)t->n_cols + 1, sizeof *t->cols, t->path) != 0) return -1;
    trace_col *c = &t->cols[t->n_cols++];
    memset(c, 0, sizeof *c);
    c->id = id, c->idx = idx, c->attr_value = attr_value;
    if (trace_fill(c->path, sizeof c->path, trace_dsets[id].path, v) == 0 &&
        trace_fill(c->desc, sizeof c->desc, trace_dsets[id].desc, v) == 0)
        return 0;
    aha_err("%s: dataset name too long: %s", t->path, trace_dsets[id].path);
    return -1;
}

int trace_cols_init(aha_trace *t) {
    const aha_trace_meta *m = &t->m;
    char eps[32], win[32], sinks[32];
    snprintf(sinks, sizeof sinks, "%d", m->sinks);
    int rc = 0;
    for (int id = 0; id < TD_COUNT && rc == 0; id++) {
        const trace_dset *ds = &trace_dsets[id];
        if (ds->shape == SH_DOCS || ds->shape == SH_DOC) continue; // per document: apart
        switch (ds->when) {
        case W_ALWAYS: rc = cols_push(t, id, 0, NULL, 0); break;
        case W_AHA: rc = m->aha ? cols_push(t, id, 0, NULL, 0) : 0; break;
        case W_EPS:
            for (int i = 0; i < m->n_eps && rc == 0; i++) {
                snprintf(eps, sizeof eps, "%g", m->eps[i]);
                rc = cols_push(t, id, i, &(trace_vars){.eps = eps, .sinks = sinks}, m->eps[i]);
            }
            break;
        case W_MASS1: rc = m->mass ? cols_push(t, id, 0, &(trace_vars){.sinks = sinks}, 0) : 0; break;
        case W_WERR:
        case W_MASS:
            for (int i = 0; (ds->when == W_WERR ? m->werr : m->mass) && i < m->n_windows && rc == 0; i++) {
                snprintf(win, sizeof win, "%d", m->windows[i]);
                rc = cols_push(t, id, i, &(trace_vars){.window = win, .sinks = sinks}, m->windows[i]);
            }
            break;
        default: break; // a run's: trace_run_push
        }
    }
    return rc;
}

int trace_run_push(aha_trace *t, const char *name, const char *policy, int window, double param) {
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
    r->name = strdup(name), r->policy = strdup(policy), r->window = window, r->param = param;
    r->has_gate = strcmp(policy, "global") != 0;
    if (!r->name || !r->policy) {
        aha_trace_run_free(r);
        aha_err("%s: out of memory", t->path);
        return -1;
    }
    int i = t->n_runs++, rc = 0;
    for (int id = 0; id < TD_COUNT && rc == 0; id++)
        if (trace_dsets[id].when == W_RUN || (trace_dsets[id].when == W_RUN_GATE && r->has_gate))
            rc = cols_push(t, id, i, &(trace_vars){.run = name}, 0);
    return rc;
}

// ---- shapes and datasets ----

trace_type trace_col_type(const trace_col *c) { return trace_dsets[c->id].type; }

int trace_col_rank(const trace_col *c) { return trace_dsets[c->id].shape == SH_T ? 1 : 3; }

// A column over n tokens: dims [n] or [L, n, H]; returns the rank.
int trace_col_dims(const aha_trace *t, const trace_col *c, int64_t n, hsize_t *dims) {
    if (trace_col_rank(c) == 1) {
        dims[0] = (hsize_t)n;
        return 1;
    }
    dims[0] = (hsize_t)t->m.n_layers;
    dims[1] = (hsize_t)n;
    dims[2] = (hsize_t)t->m.n_heads;
    return 3;
}

// Select tokens [start, start + n) of a column's dataspace.
int trace_col_select(const aha_trace *t, const trace_col *c, hid_t space, int64_t start,
                     int64_t n) {
    hsize_t off[3] = {0, (hsize_t)start, 0}, cnt[3];
    int r = trace_col_dims(t, c, n, cnt);
    herr_t e = H5Sselect_hyperslab(space, H5S_SELECT_SET, r == 1 ? off + 1 : off, NULL, cnt, NULL);
    return e < 0 ? -1 : 0;
}

// A chunked dataset through the codec's pipeline (compressed, checksummed);
// the token axis (0 or 1) is unlimited so a chunk may pass the end.
static hid_t dset_create(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims,
                         const hsize_t *chunk) {
    hsize_t maxd[3];
    memcpy(maxd, dims, (size_t)rank * sizeof *dims);
    maxd[rank == 1 ? 0 : 1] = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(rank, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 && trace_codec_pipeline(dcpl) >= 0 &&
        trace_group_parents(f, path) == 0)
        d = H5Dcreate2(f, path, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    trace_h5_drop(sp);
    trace_h5_drop(dcpl);
    return d;
}

size_t trace_col_size(const aha_trace *t, const trace_col *c) {
    trace_type ty = trace_col_type(c);
    return ty == TY_STR ? (size_t)aha_trace_str_width(&t->m, c->id) : trace_types[ty].size;
}

hid_t trace_col_h5type(const aha_trace *t, const trace_col *c, int mem) {
    trace_type ty = trace_col_type(c);
    return ty == TY_STR ? t->str[c->id] : mem ? trace_ty_mem(ty, t->f16) : trace_ty_file(ty, t->f16);
}

hid_t trace_col_create(const aha_trace *t, hid_t f, const trace_col *c, int64_t n) {
    hsize_t dims[3], chunk[3];
    int r = trace_col_dims(t, c, n, dims);
    trace_col_dims(t, c, t->tc, chunk);
    return dset_create(f, c->path, trace_col_h5type(t, c, 0), r, dims, chunk);
}

hid_t trace_doc_create(const aha_trace *t, hid_t f, trace_dset_id id, int64_t n) {
    hsize_t dims[1] = {(hsize_t)n}, chunk[1] = {TRACE_DOC_CHUNK};
    const int str = trace_dsets[id].type == TY_STR;
    return dset_create(f, trace_dsets[id].path, str ? t->str[id] : H5T_STD_I64LE, 1, dims, chunk);
}

int trace_col_describe(hid_t d, const trace_col *c) {
    const char *attr = trace_dsets[c->id].attr;
    if (trace_attr_describe(d, c->desc) < 0) return -1;
    return attr ? trace_attr_f64(d, attr, c->attr_value) : 0;
}

int trace_doc_describe(hid_t d, trace_dset_id id) { return trace_attr_describe(d, trace_dsets[id].desc); }

// Read (write: 0) or write n entries of per-document dataset d (row id:
// doc_offsets, doc_index, doc_source, ...), from entry off. A string row's
// entries are char * in memory and fixed-length strings of its width in the
// file: a longer one is refused, never cut.
static int entries_io(const aha_trace *t, hid_t d, trace_dset_id id, int64_t off, int64_t n, void *v, int write) {
    const int str = trace_dsets[id].type == TY_STR;
    const size_t w = str ? (size_t)aha_trace_str_width(&t->m, id) : 0;
    char **text = v, *fixed = str ? calloc((size_t)n + 1, w) : NULL;
    if (str && !fixed) return aha_err("%s: out of memory", t->path), -1;
    for (int64_t i = 0; write && str && i < n; i++) {
        size_t len = strlen(text[i]);
        if (len > w) {
            aha_err("%s: %s '%s' is %zu bytes, longer than its width %zu", t->path, trace_dsets[id].path, text[i],
                    len, w);
            free(fixed);
            return -1;
        }
        memcpy(fixed + (size_t)i * w, text[i], len);
    }
    hsize_t o = (hsize_t)off, k = (hsize_t)n;
    hid_t fs = d < 0 ? -1 : H5Dget_space(d), mem = H5Screate_simple(1, &k, NULL);
    hid_t ty = str ? t->str[id] : H5T_NATIVE_INT64;
    void *buf = str ? (void *)fixed : v;
    herr_t e = fs < 0 || mem < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &k, NULL) < 0
                   ? -1
               : write ? H5Dwrite(d, ty, mem, fs, H5P_DEFAULT, buf)
                       : H5Dread(d, ty, mem, fs, H5P_DEFAULT, buf);
    for (int64_t i = 0; !write && str && i < n; i++) // the strings, or NULLs for trace_entries_free
        text[i] = e < 0 ? NULL : strndup(fixed + (size_t)i * w, w);
    for (int64_t i = 0; !write && str && e >= 0 && i < n; i++)
        if (!text[i]) e = -1;
    trace_h5_drop(mem);
    trace_h5_drop(fs);
    free(fixed);
    return e < 0 ? -1 : 0;
}

int trace_entries_read(const aha_trace *t, hid_t f, trace_dset_id id, int64_t off, int64_t n, void *v) {
    hid_t d = H5Dopen2(f, trace_dsets[id].path, H5P_DEFAULT);
    int rc = entries_io(t, d, id, off, n, v, 0);
    trace_h5_drop(d);
    return rc;
}

int trace_entries_write(const aha_trace *t, hid_t d, trace_dset_id id, int64_t off, int64_t n, const void *v) {
    return entries_io(t, d, id, off, n, (void *)v, 1); // H5Dwrite only reads v
}

void trace_entries_free(trace_dset_id id, int64_t n, void *v) {
    for (int64_t i = 0; trace_dsets[id].type == TY_STR && i < n; i++) free(((char **)v)[i]), ((char **)v)[i] = NULL;
}
