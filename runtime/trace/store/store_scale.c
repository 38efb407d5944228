// The final file's dimension scales (store_scale.h): HDF5's H5DS API
// (libhdf5_hl), which netCDF-4 readers (h5netcdf, xarray) take for named,
// shared axes. The store knows no axis by its meaning: it writes an index
// 0..n-1 of T and of the records where the caller names one, and attaches
// each column's axes to the datasets its descriptor names.
#include "store_scale.h"

#include <hdf5_hl.h>
#include <stdlib.h>
#include <string.h>


// The dataset at path made a dimension scale named by its last component.
static int scale_make(hid_t d, const char *path) {
    const char *name = strrchr(path, '/');
    htri_t is = H5DSis_scale(d);
    return is < 0 ? -1 : is ? 0 : H5DSset_scale(d, name ? name + 1 : path) < 0 ? -1 : 0;
}

// An index dataset of n values 0..n-1 at path, a dimension scale.
static int axis_write(const char *path, const char *desc, hid_t f, int64_t n) {
    int64_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return -1;
    for (int64_t i = 0; i < n; i++) v[i] = i;
    hid_t d = trace_h5_dset_1d(f, path, H5T_STD_I64LE, H5T_NATIVE_INT64, n, v, desc);
    int rc = d < 0 || scale_make(d, path) < 0 ? -1 : 0;
    trace_h5_drop(d);
    free(v);
    return rc;
}

// Column c's axes attached to the datasets its descriptor names.
static int col_attach(hid_t f, const store_col *c) {
    hid_t d = H5Dopen2(f, c->c.path, H5P_DEFAULT);
    int rc = d < 0 ? -1 : 0;
    for (int k = 0; rc == 0 && k < c->c.rank; k++) {
        if (!c->c.dims[k]) continue;
        if (!strcmp(c->c.dims[k], c->c.path)) { // a coordinate: the column is its own axis's scale
            rc = scale_make(d, c->c.path);
            continue;
        }
        hid_t sc = H5Dopen2(f, c->c.dims[k], H5P_DEFAULT);
        rc = sc < 0 || scale_make(sc, c->c.dims[k]) < 0 || H5DSattach_scale(d, sc, (unsigned)k) < 0 ? -1 : 0;
        trace_h5_drop(sc);
    }
    trace_h5_drop(d);
    return rc;
}

int store_scales(const trace_store *s, hid_t f) {
    const int64_t n[2] = {s->n_tok, s->n_rec};
    for (int k = 0; k < 2; k++)
        if (s->axis[k] && axis_write(s->axis[k], s->axis_desc[k], f, n[k]) < 0) return -1;
    for (int i = 0; i < s->n_cols; i++)
        if (col_attach(f, &s->cols[i]) < 0) return -1;
    for (int j = 0; j < s->n_recs; j++)
        if (col_attach(f, &s->recs[j]) < 0) return -1;
    return 0;
}
