// The header (root attributes, groups and their attributes, by the schema's
// tables), the index (virtual datasets over the parts) or, on closing, the
// final file; and the commit that makes a new index visible.
#include "trace_impl.h"

#include <stdio.h>
#include <unistd.h>

#include "publish.h"

// Part p's name as the index maps it: relative to the index's folder, '%'
// escaped (HDF5 substitutes in source file names: an -o path may hold one).
static int part_vds_name(const aha_trace *t, const trace_part *p, char *out, size_t size) {
    char name[4096];
    snprintf(name, sizeof name, "%s/%s", t->parts_rel, p->name);
    return trace_vds_escape(name, out, size);
}

// The virtual dataset of column c: the token ranges the parts map.
static int col_virtual(const aha_trace *t, hid_t f, const trace_col *c) {
    trace_type ty = trace_col_type(c);
    hsize_t dims[3];
    int r = trace_col_dims(t, c, t->n_tok, dims), rc = -1;
    hid_t vs = H5Screate_simple(r, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        (trace_types[ty].fill && H5Pset_fill_value(dcpl, trace_col_h5type(t, c, 1), trace_types[ty].fill) < 0))
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        char name[8192];
        trace_col_dims(t, c, p->n_tok, dims);
        hid_t ss = H5Screate_simple(r, dims, NULL);
        int e = ss < 0 || part_vds_name(t, p, name, sizeof name) < 0 ||
                trace_col_select(t, c, vs, p->v0, p->v1 - p->v0) < 0 ||
                trace_col_select(t, c, ss, p->v0 - p->t0, p->v1 - p->v0) < 0 ||
                H5Pset_virtual(dcpl, vs, name, c->path, ss) < 0;
        trace_h5_drop(ss);
        if (e) goto done;
    }
    if (H5Sselect_all(vs) >= 0 && trace_group_parents(f, c->path) == 0)
        d = H5Dcreate2(f, c->path, trace_col_h5type(t, c, 0), vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    rc = d < 0 || trace_col_describe(d, c) < 0 ? -1 : 0;
done:
    trace_h5_drop(d);
    trace_h5_drop(dcpl);
    trace_h5_drop(vs);
    return rc;
}

// A per-document dataset of the index (TD_DOC_OFFSETS or a doc row):
// doc_offsets' entry 0 is the fill value 0, its entries 1..n_docs and a doc
// row's 0..n_docs-1 come from the parts (where a part is missing: doc_index
// -1, strings empty).
static int doc_virtual(const aha_trace *t, hid_t f, trace_dset_id id) {
    const char *path = trace_dsets[id].path;
    const int64_t fill = id == TD_DOC_OFFSETS ? 0 : -1, shift = id == TD_DOC_OFFSETS ? 0 : 1;
    const trace_type ty = trace_dsets[id].type;
    hsize_t n = (hsize_t)(t->n_docs + 1 - shift);
    int rc = -1;
    hid_t vs = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        (ty != TY_STR && H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill) < 0))
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        if (p->dv1 == p->dv0) continue;
        char name[8192];
        hsize_t sn = (hsize_t)p->n_doc, vo = (hsize_t)(p->dv0 - shift), so = (hsize_t)(p->dv0 - p->d0);
        hsize_t k = (hsize_t)(p->dv1 - p->dv0);
        hid_t ss = H5Screate_simple(1, &sn, NULL);
        int e = ss < 0 || part_vds_name(t, p, name, sizeof name) < 0 ||
                H5Sselect_hyperslab(vs, H5S_SELECT_SET, &vo, NULL, &k, NULL) < 0 ||
                H5Sselect_hyperslab(ss, H5S_SELECT_SET, &so, NULL, &k, NULL) < 0 ||
                H5Pset_virtual(dcpl, vs, name, path, ss) < 0;
        trace_h5_drop(ss);
        if (e) goto done;
    }
    if (H5Sselect_all(vs) >= 0)
        d = H5Dcreate2(f, path, ty == TY_STR ? t->str[id] : H5T_STD_I64LE, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    rc = d < 0 || trace_doc_describe(d, id) < 0 ? -1 : 0;
done:
    trace_h5_drop(d);
    trace_h5_drop(dcpl);
    trace_h5_drop(vs);
    return rc;
}

// The groups, in the schema's order, each with its description and
// attributes; the root's attributes first. All but the datasets.
static int write_header(const aha_trace *t, hid_t f, int complete) {
    aha_trace_state st = {AHA_TRACE_VERSION, complete, t->n_docs, t->n_tok, t->tc, t->id};
    const void *obj[OBJ_COUNT] = {[OBJ_META] = &t->m, [OBJ_PROV] = &t->prov, [OBJ_STATE] = &st};
    int rc = 0;
    for (int k = 0; k < TG_COUNT && rc == 0; k++) {
        const trace_group *g = &trace_groups[k];
        int n = g->when == W_RUN ? t->n_runs : g->when == W_WERR ? t->m.werr : g->when == W_MASS ? t->m.mass : 1;
        for (int i = 0; i < n && rc == 0; i++) {
            const aha_trace_run *r = g->when == W_RUN ? &t->runs[i] : NULL;
            char path[160], win[32];
            snprintf(win, sizeof win, "%d", r ? r->window : 0);
            trace_vars v = {.run = r ? r->name : "", .policy = r ? r->policy : "", .window = win};
            obj[OBJ_RUN] = r;
            hid_t loc = k == TG_ROOT ? f : -1;
            if (k != TG_ROOT && (trace_fill(path, sizeof path, g->path, &v) < 0 ||
                                 (loc = trace_group_create(f, path)) < 0))
                rc = -1;
            else
                rc = trace_attrs_write(loc, g, &v, obj);
            if (k != TG_ROOT) trace_h5_drop(loc);
        }
    }
    return rc;
}

int trace_write_index(aha_trace *t, const char *tmp, int final) {
    hid_t f = trace_file_create(tmp);
    if (f < 0) return -1;
    int rc = write_header(t, f, final) < 0 ? trace_h5_fail(tmp, "writing attributes") : 0;
    if (rc == 0 && final) {
        rc = trace_write_range(t, f, tmp, 0, t->n_tok, 1, NULL);
    } else {
        for (int i = 0; i < t->n_cols && rc == 0; i++)
            if (col_virtual(t, f, &t->cols[i]) < 0) rc = trace_h5_fail(tmp, "writing the index");
        for (int j = 0; j < TRACE_N_DOC_DSETS && rc == 0; j++)
            if (doc_virtual(t, f, TD_DOC_OFFSETS + j) < 0) rc = trace_h5_fail(tmp, "writing the index");
    }
    if (trace_file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// Make the new state durable: the parts reach the disk before the index
// that names them replaces the old one; then the files only the old index
// named are deleted (an undeleted one is only wasted space: resume removes it).
int trace_commit(aha_trace *t) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", t->path);
    if (aha_fsync(t->parts_dir, 1) < 0 || trace_write_index(t, tmp, 0) < 0 || trace_publish(tmp, t->path) < 0) {
        unlink(tmp);
        return -1;
    }
    if (aha_fsync(t->dir, 1) < 0) return -1;
    for (int i = 0; i < t->n_drop; i++) {
        trace_part_paths(t, t->drop[i], path, NULL, sizeof path);
        unlink(path);
    }
    t->n_drop = 0;
    return 0;
}
