// The trace's storage as verify checks it (trace_read.h, aha_tr_check_storage):
// every chunk stored, and in format 2 every chunk checksummed and no string
// in HDF5's global heap; the coordinates and the axes' attachments.
#include <string.h>

#include "err.h"
#include "trace_files.h"
#include "trace_h5.h"
#include "trace_read.h"

typedef struct {       // a walk over every object's attributes
    const aha_tr *tr;
    const char *obj;   // the object being walked
    int bad;           // a variable-length string was found
} attr_walk;

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
    (void)info;
    attr_walk *w = data;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), ty = a < 0 ? -1 : H5Aget_type(a);
    int vlen = ty < 0 ? -1 : H5Tget_class(ty) == H5T_STRING ? H5Tis_variable_str(ty) : 0;
    trace_h5_drop(ty);
    trace_h5_drop(a);
    if (vlen == 0) return 0;
    aha_err("%s: %s attribute %s %s", w->tr->path, w->obj,
            name, vlen < 0 ? "cannot be read" : "is a variable-length string (HDF5's global heap: no checksum)");
    w->bad = 1;
    return 1; // stop
}

static herr_t obj_cb(hid_t f, const char *name, const H5O_info_t *info, void *data) {
    (void)info;
    attr_walk *w = data;
    w->obj = name;
    if (H5Aiterate_by_name(f, name, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, attr_cb, w, H5P_DEFAULT) < 0 && !w->bad) {
        char what[300];
        snprintf(what, sizeof what, "reading the attributes of %s", name);
        trace_h5_fail(w->tr->path, what);
        w->bad = 1;
    }
    return w->bad;
}

// Dataset name as stored: every chunk there; in format 2, each one
// checksummed and no string variable-length. *chunks gets its chunks.
static int check_dset(const aha_tr *tr, const char *name, int64_t *chunks) {
    aha_tr_dset d;
    if (aha_tr_dset_info(tr, name, &d) != 0) return -1;
    const int v2 = tr->format_version >= 2, chunked = !strcmp(d.layout, "chunked");
    *chunks = d.chunks;
    if (d.rank == 0) aha_err("%s: dataset %s is missing", tr->path, name);
    else if (!strcmp(d.layout, "virtual")) return 0; // an unfinished trace's index: HDF5 checks its parts' chunks
    else if (chunked && d.chunks != d.chunks_want)
        aha_err("%s: dataset %s stores %lld of its %lld chunks", tr->path, name, (long long)d.chunks,
                (long long)d.chunks_want);
    else if (v2 && (!chunked || d.checksum != 1))
        aha_err("%s: dataset %s carries no checksums (not as aha writes format 2)", tr->path, name);
    else if (v2 && !strcmp(d.dtype, "vlen str"))
        aha_err("%s: dataset %s holds variable-length strings (HDF5's global heap: no checksum)", tr->path, name);
    else
        return 0;
    return -1;
}

int aha_tr_check_storage(const aha_tr *tr, int64_t *chunks) {
    *chunks = 0;
    for (int id = 0; id < TD_COUNT; id++)
        for (int i = 0; i < aha_tr_n_instances(tr, id); i++) {
            char name[160];
            int64_t n = 0;
            if (!aha_tr_has(tr, id, i)) continue;
            if (check_dset(tr, aha_tr_name(tr, id, i, name, sizeof name), &n) != 0) return -1;
            *chunks += n;
        }
    if (tr->complete && aha_tr_check_scales(tr, chunks) != 0) return -1;
    attr_walk w = {tr, "/", 0};
    if (tr->format_version >= 2 && H5Ovisit(trace_files_get(tr), H5_INDEX_NAME, H5_ITER_NATIVE, obj_cb, &w) < 0 &&
        !w.bad) {
        trace_h5_fail(tr->path, "listing its objects");
        w.bad = 1;
    }
    return w.bad ? -1 : 0;
}
