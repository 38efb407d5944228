// The trace's datasets along the token axis (the columns) and doc_offsets:
// which there are, their shapes, descriptions, and creating them.
#include "trace_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

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

int trace_cols_init(aha_trace *t) {
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
    r->name = strdup(name), r->policy = strdup(policy), r->window = window;
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

// ---- shapes and datasets ----

// A column over n tokens: dims [n] or [L, n, H]; returns the rank.
int trace_col_dims(const aha_trace *t, const trace_col *c, int64_t n, hsize_t *dims) {
    if (c->rank == 1) {
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

// A chunked, compressed dataset; the token axis (0 or 1) is unlimited so a
// chunk may pass the end.
static hid_t dset_create(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims,
                         const hsize_t *chunk, int shuffle) {
    hsize_t maxd[3];
    memcpy(maxd, dims, (size_t)rank * sizeof *dims);
    maxd[rank == 1 ? 0 : 1] = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(rank, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), d = -1;
    if (sp >= 0 && dcpl >= 0 && lcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
        (!shuffle || H5Pset_shuffle(dcpl) >= 0) && H5Pset_deflate(dcpl, 4) >= 0 &&
        H5Pset_create_intermediate_group(lcpl, 1) >= 0)
        d = H5Dcreate2(f, path, type, sp, lcpl, dcpl, H5P_DEFAULT);
    trace_h5_drop(sp);
    trace_h5_drop(dcpl);
    trace_h5_drop(lcpl);
    return d;
}

hid_t trace_col_create(const aha_trace *t, hid_t f, const trace_col *c, int64_t n) {
    hsize_t dims[3], chunk[3];
    int r = trace_col_dims(t, c, n, dims);
    trace_col_dims(t, c, t->tc, chunk);
    return dset_create(f, c->path, trace_ty_file(t, c->type), r, dims, chunk, c->type != TY_STR);
}

hid_t trace_doc_create(hid_t f, int64_t n) {
    hsize_t dims[1] = {(hsize_t)n}, chunk[1] = {TRACE_DOC_CHUNK};
    return dset_create(f, "doc_offsets", H5T_STD_I64LE, 1, dims, chunk, 1);
}

const char trace_doc_desc[] =
    "Document boundaries on the token axis: document i is tokens "
    "[doc_offsets[i], doc_offsets[i+1]); doc_offsets[0] = 0, doc_offsets[n_docs] = T "
    "(int64 [n_docs + 1]).";

int trace_col_describe(const aha_trace *t, hid_t d, const trace_col *c) {
    if (trace_attr_str(t, d, "description", c->desc) < 0) return -1;
    return c->attr ? trace_attr_f64(d, c->attr, c->attr_value) : 0;
}

// Read (write: 0) or write n entries of doc_offsets dataset d, from entry off.
static int entries_io(hid_t d, int64_t off, int64_t n, int64_t *v, int write) {
    hsize_t o = (hsize_t)off, k = (hsize_t)n;
    hid_t fs = d < 0 ? -1 : H5Dget_space(d), mem = H5Screate_simple(1, &k, NULL);
    herr_t e = fs < 0 || mem < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &k, NULL) < 0
                   ? -1
               : write ? H5Dwrite(d, H5T_NATIVE_INT64, mem, fs, H5P_DEFAULT, v)
                       : H5Dread(d, H5T_NATIVE_INT64, mem, fs, H5P_DEFAULT, v);
    trace_h5_drop(mem);
    trace_h5_drop(fs);
    return e < 0 ? -1 : 0;
}

// Read n doc_offsets entries from part file f at offset off into v.
int trace_entries_read(hid_t f, int64_t off, int64_t n, int64_t *v) {
    hid_t d = H5Dopen2(f, "doc_offsets", H5P_DEFAULT);
    int rc = entries_io(d, off, n, v, 0);
    trace_h5_drop(d);
    return rc;
}

int trace_entries_write(hid_t d, int64_t off, int64_t n, const int64_t *v) {
    return entries_io(d, off, n, (int64_t *)v, 1); // H5Dwrite only reads v
}

// The entries of the last part's documents that end past a (they end in the
