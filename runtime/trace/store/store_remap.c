// Resume: the part list read back from an unfinished store's index, from
// the mappings of its virtual datasets.
#include "store_remap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Part list entry for a mapping of file name (relative to the index's
// folder), creating it if new.
static store_part *part_get(trace_store *s, const char *name, int add) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int i = store_part_find(s, base);
    if (i >= 0) return &s->parts[i];
    size_t len = strlen(base);
    if (!add || len >= sizeof s->parts[0].name) return NULL;
    size_t dir = base > name ? (size_t)(base - name - 1) : 0; // the folder, as the index names it
    if (strlen(s->parts_rel) != dir || strncmp(s->parts_rel, name, dir) != 0) {
        char *rel = strndup(name, dir);
        if (!rel) return NULL;
        free(s->parts_rel);
        s->parts_rel = rel;
    }
    store_part p = {0};
    memcpy(p.name, base, len + 1);
    return store_parts_insert(s, s->n_parts, &p) < 0 ? NULL : &s->parts[s->n_parts - 1];
}

// The mappings of column c's virtual dataset into the part list: ranges
// along T from a column along T (recs 0), value ranges from the ends.
static int read_mappings(trace_store *s, hid_t f, const store_col *c, int recs) {
    hid_t d = H5Dopen2(f, c->c.path, H5P_DEFAULT);
    hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    size_t n = 0;
    int rc = -1;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &n) < 0) goto done;
    for (size_t i = 0; i < n; i++) {
        char name[4096];
        hsize_t v0, v1, s0, s1, dims;
        hid_t vs = H5Pget_virtual_vspace(dcpl, i);
        hid_t ss = H5Pget_virtual_srcspace(dcpl, i);
        int e = vs < 0 || ss < 0 || H5Pget_virtual_filename(dcpl, i, name, sizeof name) < 0 ||
                H5Sget_select_bounds(vs, &v0, &v1) < 0 || H5Sget_select_bounds(ss, &s0, &s1) < 0 ||
                H5Sget_simple_extent_dims(ss, &dims, NULL) != 1;
        trace_h5_drop(vs);
        trace_h5_drop(ss);
        if (!e) trace_vds_unescape(name);
        store_part *p = e ? NULL : part_get(s, name, !recs);
        if (!p) goto done;
        if (recs) {
            p->d0 = (int64_t)(v0 - s0);
            p->n_doc = (int64_t)dims;
            p->dv0 = (int64_t)v0;
            p->dv1 = (int64_t)v1 + 1;
        } else {
            p->t0 = (int64_t)(v0 - s0);
            p->n_tok = (int64_t)dims;
            p->v0 = (int64_t)v0;
            p->v1 = (int64_t)v1 + 1;
        }
    }
    rc = 0;
done:
    trace_h5_drop(dcpl);
    trace_h5_drop(d);
    return rc;
}

int store_remap(trace_store *s) {
    hid_t f = trace_file_open(s->path, 1);
    if (f < 0) return trace_h5_fail(s->path, "opening");
    int rc = 0;
    if (s->n_cols < 1 || read_mappings(s, f, &s->cols[0], 0) < 0 || read_mappings(s, f, &s->recs[0], 1) < 0) {
        char what[64];
        snprintf(what, sizeof what, "reading the %s index", s->what);
        rc = trace_h5_fail(s->path, what);
    }
    H5Fclose(f);
    return rc;
}
