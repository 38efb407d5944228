// A complete trace's coordinates as verify checks them (trace_read.h,
// aha_tr_check_scales): each a dimension scale holding its axis's values in
// checksummed chunks. Which scale each axis is attached to is not read:
// DIMENSION_LIST keeps it in HDF5's global heap, which has no checksum, and
// HDF5 1.10 can hang on a damaged one; no aha reader needs it.
#include <hdf5_hl.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "trace_files.h"
#include "trace_h5.h"
#include "trace_read.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The values coordinate id holds in tr (n of them, as double) into v (the
// windows: ascending, as the reader keeps them).
static void coord_want(const aha_tr *tr, trace_coord_id id, int64_t n, double *v) {
    for (int64_t i = 0; i < n; i++)
        v[i] = id == TC_EPS ? tr->m.eps[i] : id == TC_WINDOW ? tr->m.windows[i] : (double)i;
}

static int64_t coord_len(const aha_tr *tr, trace_coord_id id) {
    const int64_t n[TC_COUNT] = {tr->n_tokens, tr->n_docs, tr->m.n_layers, tr->m.n_heads, tr->m.n_eps,
                                 tr->m.n_windows};
    return n[id];
}

// Coordinate id: checksummed like the datasets, a scale, and its values.
static int coord_check(const aha_tr *tr, hid_t f, trace_coord_id id, int64_t *chunks) {
    const char *name = trace_coords[id].path;
    const int64_t n = coord_len(tr, id);
    aha_tr_dset info;
    if (aha_tr_dset_info(tr, name, &info) != 0) return -1;
    if (info.rank != 1 || info.dims[0] != n || strcmp(info.layout, "chunked") || info.chunks != info.chunks_want ||
        !info.checksum) {
        aha_err("%s: %s (a coordinate) is not %lld values in checksummed chunks", tr->path, name, (long long)n);
        return -1;
    }
    *chunks += info.chunks;
    double *got = malloc((size_t)(n + 1) * sizeof *got), *want = malloc((size_t)(n + 1) * sizeof *want);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    int rc = -1;
    if (!got || !want) aha_err("%s: out of memory", tr->path);
    else if (d < 0 || (n > 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) < 0)) {
        char cause[256];
        trace_h5_cause(cause);
        aha_err("%s: %s (a coordinate) cannot be read: %s", tr->path, name, cause);
    } else if (H5DSis_scale(d) <= 0) {
        aha_err("%s: %s (a coordinate) is not a dimension scale", tr->path, name);
    } else {
        coord_want(tr, id, n, want);
        if (id == TC_WINDOW) qsort(got, (size_t)n, sizeof *got, cmp_double); // as given: in any order
        rc = 0;
        for (int64_t i = 0; rc == 0 && i < n; i++)
            if (got[i] != want[i]) {
                aha_err("%s: %s (a coordinate) holds %g at %lld, not %g", tr->path, name, got[i], (long long)i,
                        want[i]);
                rc = -1;
            }
    }
    trace_h5_drop(d);
    free(got);
    free(want);
    return rc;
}

int aha_tr_check_scales(const aha_tr *tr, int64_t *chunks) {
    hid_t f = trace_files_get(tr);
    if (f < 0) return -1;
    htri_t has = H5Lexists(f, trace_coords[TC_TOKEN].path, H5P_DEFAULT);
    if (has <= 0) return has < 0 ? trace_h5_fail(tr->path, "looking for its coordinates") : 0; // the older form
    for (int id = 0; id < TC_COUNT; id++)
        if (coord_check(tr, f, id, chunks) != 0) return -1;
    return 0;
}
