// The index (the caller's header, then virtual datasets over the parts) or,
// on closing, the final file; and the commit that makes a new index visible.
#include "store_index.h"

#include <stdio.h>
#include <unistd.h>

#include "publish.h"
#include "store_block.h"
#include "store_scale.h"

// Part p's name as the index maps it: relative to the index's folder, '%'
// escaped (HDF5 substitutes in source file names: an -o path may hold one).
static int part_vds_name(const trace_store *s, const store_part *p, char *out, size_t size) {
    char name[4096];
    snprintf(name, sizeof name, "%s/%s", s->parts_rel, p->name);
    return trace_vds_escape(name, out, size);
}

typedef struct {         // what the index maps from a part
    int64_t lo, hi;      // the range, along T or of per-record values
    int64_t from0;       // where the part file's own range starts
} mapping;

// A virtual dataset of column c over the parts, of n elements (T, or values
// of a per-record column: recs), each part's range mapped at lo - shift.
static int virtual(const trace_store *s, hid_t f, const store_col *c, int64_t n, int64_t shift, int recs) {
    hsize_t dims[3];
    const int r = store_col_dims(c, n, dims);
    int rc = -1;
    hid_t vs = H5Screate_simple(r, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        (c->has_fill && H5Pset_fill_value(dcpl, c->c.mtype, c->fill) < 0))
        goto done;
    for (int i = 0; i < s->n_parts; i++) {
        const store_part *p = &s->parts[i];
        const mapping m = recs ? (mapping){p->dv0, p->dv1, p->d0} : (mapping){p->v0, p->v1, p->t0};
        if (recs && m.hi == m.lo) continue;
        char name[8192];
        store_col_dims(c, recs ? p->n_doc : p->n_tok, dims);
        hid_t ss = H5Screate_simple(r, dims, NULL);
        int e = ss < 0 || part_vds_name(s, p, name, sizeof name) < 0 ||
                store_col_select(c, vs, m.lo - shift, m.hi - m.lo) < 0 ||
                store_col_select(c, ss, m.lo - m.from0, m.hi - m.lo) < 0 ||
                H5Pset_virtual(dcpl, vs, name, c->c.path, ss) < 0;
        trace_h5_drop(ss);
        if (e) goto done;
    }
    if (H5Sselect_all(vs) >= 0 && trace_group_parents(f, c->c.path) == 0)
        d = H5Dcreate2(f, c->c.path, c->c.ftype, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    rc = d < 0 || store_col_describe(d, c) < 0 ? -1 : 0;
done:
    trace_h5_drop(d);
    trace_h5_drop(dcpl);
    trace_h5_drop(vs);
    return rc;
}

int store_write_index(trace_store *s, const char *tmp, int final) {
    hid_t f = trace_file_create(tmp);
    if (f < 0) return -1;
    const trace_store_state st = {final, s->n_rec, s->n_tok, s->tc, s->id};
    int rc = s->header(s->ctx, f, &st) < 0 ? trace_h5_fail(tmp, "writing attributes") : 0;
    if (rc == 0 && final) {
        rc = store_write_range(s, f, tmp, 0, s->n_tok, 1, NULL);
        if (rc == 0 && store_scales(s, f) < 0) rc = trace_h5_fail(tmp, "attaching the dimension scales");
    } else {
        // The columns along T; the ends' value 0 is the fill value 0, and the
        // other per-record columns map one lower (they have no value there).
        for (int i = 0; i < s->n_cols && rc == 0; i++)
            if (virtual(s, f, &s->cols[i], s->n_tok, 0, 0) < 0) rc = trace_h5_fail(tmp, "writing the index");
        for (int j = 0; j < s->n_recs && rc == 0; j++)
            if (virtual(s, f, &s->recs[j], s->n_rec + 1 - (j > 0), j > 0, 1) < 0)
                rc = trace_h5_fail(tmp, "writing the index");
    }
    if (trace_file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// Make the new state durable: the parts reach the disk before the index
// that names them replaces the old one; then the files only the old index
// named are deleted (an undeleted one is only wasted space: resume removes it).
int store_commit(trace_store *s) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    if (aha_fsync(s->parts_dir, 1) < 0 || store_write_index(s, tmp, 0) < 0 || store_publish(tmp, s->path) < 0) {
        unlink(tmp);
        return -1;
    }
    if (aha_fsync(s->dir, 1) < 0) return -1;
    for (int i = 0; i < s->n_drop; i++) {
        store_part_paths(s, s->drop[i], path, NULL, sizeof path);
        unlink(path);
    }
    s->n_drop = 0;
    return 0;
}
