// One column of a store (store_col.h): the store's copy of its descriptor,
// its shape, its dataset in a file, and the values of a per-record column
// read and written.
#include "store_col.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "trace_codec.h"

int store_col_own(store_col *c, const trace_store_col *d, int rec, const char *who) {
    memset(c, 0, sizeof *c);
    c->c = *d;
    c->c.path = strdup(d->path);
    c->c.desc = strdup(d->desc ? d->desc : "");
    c->c.attr = d->attr ? strdup(d->attr) : NULL;
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        c->c.dims[k] = k < d->rank && d->dims[k] ? strdup(d->dims[k]) : NULL;
        ok = ok && (c->c.dims[k] || k >= d->rank || !d->dims[k]);
    }
    c->c.fill = NULL;
    c->size = H5Tget_size(d->ftype);
    c->str = rec && H5Tget_class(d->ftype) == H5T_STRING;
    const size_t mem = rec ? sizeof(trace_store_val) : H5Tget_size(d->mtype);
    if (d->fill && mem <= sizeof c->fill) {
        memcpy(c->fill, d->fill, mem);
        c->has_fill = 1;
    }
    if (!ok || !c->c.path || !c->c.desc || (d->attr && !c->c.attr)) {
        store_col_drop(c);
        aha_err("%s: out of memory", who);
        return -1;
    }
    if (c->size == 0 || (d->rank != 1 && (d->rank != 3 || rec)) || (d->fill && !c->has_fill)) {
        aha_err("%s: column %s: not a column a store holds", who, d->path);
        store_col_drop(c);
        return -1;
    }
    return 0;
}

void store_col_drop(store_col *c) {
    free((char *)c->c.path);
    free((char *)c->c.desc);
    free((char *)c->c.attr);
    for (int k = 0; k < 3; k++) free((char *)c->c.dims[k]);
    memset(c, 0, sizeof *c);
}

// ---- shapes and datasets ----

int store_col_dims(const store_col *c, int64_t n, hsize_t *dims) {
    if (c->c.rank == 1) {
        dims[0] = (hsize_t)n;
        return 1;
    }
    dims[0] = (hsize_t)c->c.rows;
    dims[1] = (hsize_t)n;
    dims[2] = (hsize_t)c->c.width;
    return 3;
}

// Select [start, start + n) along T of a column's dataspace.
int store_col_select(const store_col *c, hid_t space, int64_t start, int64_t n) {
    hsize_t off[3] = {0, (hsize_t)start, 0}, cnt[3];
    int r = store_col_dims(c, n, cnt);
    herr_t e = H5Sselect_hyperslab(space, H5S_SELECT_SET, r == 1 ? off + 1 : off, NULL, cnt, NULL);
    return e < 0 ? -1 : 0;
}

size_t store_col_bytes(const store_col *c, int64_t n) {
    return (c->c.rank == 3 ? (size_t)c->c.rows * (size_t)c->c.width : 1) * (size_t)n * c->size;
}

// A chunked dataset through the codec's pipeline (compressed, checksummed),
// chunk elements along T; T is unlimited so a chunk may pass the end.
hid_t store_col_create(hid_t f, const store_col *c, int64_t n, int64_t chunk) {
    hsize_t dims[3], cdims[3], maxd[3];
    const int rank = store_col_dims(c, n, dims);
    store_col_dims(c, chunk, cdims);
    memcpy(maxd, dims, (size_t)rank * sizeof *dims);
    maxd[rank == 1 ? 0 : 1] = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(rank, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, cdims) >= 0 && trace_codec_pipeline(dcpl) >= 0 &&
        trace_group_parents(f, c->c.path) == 0)
        d = H5Dcreate2(f, c->c.path, c->c.ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    trace_h5_drop(sp);
    trace_h5_drop(dcpl);
    return d;
}

int store_col_describe(hid_t d, const store_col *c) {
    if (trace_attr_describe(d, c->c.desc) < 0) return -1;
    return c->c.attr ? trace_attr_f64(d, c->c.attr, c->c.attr_value) : 0;
}

// ---- per-record values ----

// Read (write: 0) or write n values of per-record column c, dataset d, from
// value off. A string column's values are char * in memory and fixed-length
// strings of its width in the file: a longer one is refused, never cut.
static int recs_io(hid_t d, const store_col *c, int64_t off, int64_t n, trace_store_val *v, int write,
                   const char *who) {
    const size_t w = c->size;
    char *fixed = c->str ? calloc((size_t)n + 1, w) : NULL;
    if (c->str && !fixed) {
        aha_err("%s: out of memory", who);
        return -1;
    }
    for (int64_t i = 0; write && c->str && i < n; i++) {
        size_t len = strlen(v[i].s);
        if (len > w) {
            aha_err("%s: %s '%s' is %zu bytes, longer than its width %zu", who, c->c.path, v[i].s, len, w);
            free(fixed);
            return -1;
        }
        memcpy(fixed + (size_t)i * w, v[i].s, len);
    }
    hsize_t o = (hsize_t)off;
    hsize_t k = (hsize_t)n;
    hid_t fs = d < 0 ? -1 : H5Dget_space(d);
    hid_t mem = H5Screate_simple(1, &k, NULL);
    void *buf = c->str ? (void *)fixed : (void *)v;
    herr_t e = -1;
    if (fs >= 0 && mem >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &k, NULL) >= 0)
        e = write ? H5Dwrite(d, c->c.mtype, mem, fs, H5P_DEFAULT, buf)
                  : H5Dread(d, c->c.mtype, mem, fs, H5P_DEFAULT, buf);
    for (int64_t i = 0; !write && c->str && i < n; i++) // the strings, or NULLs for store_recs_free
        v[i].s = e < 0 ? NULL : strndup(fixed + (size_t)i * w, w);
    for (int64_t i = 0; !write && c->str && e >= 0 && i < n; i++)
        if (!v[i].s) e = -1;
    trace_h5_drop(mem);
    trace_h5_drop(fs);
    free(fixed);
    return e < 0 ? -1 : 0;
}

int store_recs_read(hid_t f, const store_col *c, int64_t off, int64_t n, trace_store_val *v, const char *who) {
    hid_t d = H5Dopen2(f, c->c.path, H5P_DEFAULT);
    int rc = recs_io(d, c, off, n, v, 0, who);
    trace_h5_drop(d);
    return rc;
}

int store_recs_write(hid_t d, const store_col *c, int64_t off, int64_t n, const trace_store_val *v,
                     const char *who) {
    return recs_io(d, c, off, n, (trace_store_val *)v, 1, who); // H5Dwrite only reads v
}

void store_recs_free(const store_col *c, int64_t n, trace_store_val *v) {
    for (int64_t i = 0; c->str && i < n; i++) {
        free((char *)v[i].s);
        v[i].s = NULL;
    }
}
