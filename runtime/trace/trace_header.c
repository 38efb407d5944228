// A trace file's header, written and read back (trace_header.h).
#include "trace_header.h"

#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "trace_attrs.h"
#include "trace_h5.h"

// Coordinate id of n values v, a dimension scale (attached by the store).
static int coord_put(hid_t f, trace_coord_id id, int64_t n, const void *v) {
    const trace_coord *c = &trace_coords[id];
    hid_t d = trace_h5_dset_1d(f, c->path, trace_ty_file(c->type, -1), trace_ty_mem(c->type, -1), n, v, c->desc);
    int rc = d < 0 || H5DSset_scale(d, c->path) < 0 ? -1 : 0;
    trace_h5_drop(d);
    return rc;
}

// The coordinates of the axes a trace of meta m fixes: layer, head, eps and
// window (token and doc, the store's axes, the store writes).
static int coords_write(hid_t f, const aha_trace_meta *m) {
    const int n = m->n_layers > m->n_heads ? m->n_layers : m->n_heads;
    int64_t *v = aha_calloc((size_t)(n > m->n_windows ? n : m->n_windows) + 1, sizeof *v, "coordinates");
    if (!v) return -1;
    for (int i = 0; i < n; i++) v[i] = i;
    int rc = coord_put(f, TC_LAYER, m->n_layers, v) < 0 || coord_put(f, TC_HEAD, m->n_heads, v) < 0 ||
                     coord_put(f, TC_EPS, m->n_eps, m->eps) < 0
                 ? -1
                 : 0;
    for (int i = 0; i < m->n_windows; i++) v[i] = m->windows[i];
    if (rc == 0) rc = coord_put(f, TC_WINDOW, m->n_windows, v);
    free(v);
    return rc;
}

int trace_header_write(hid_t f, const aha_trace_meta *m, const aha_trace_prov *prov, const aha_trace_run *runs,
                       int n_runs, const aha_trace_state *st) {
    const void *obj[OBJ_COUNT] = {[OBJ_META] = m, [OBJ_PROV] = prov, [OBJ_STATE] = st};
    int rc = 0;
    for (int k = 0; k < TG_COUNT && rc == 0; k++) {
        const trace_group *g = &trace_groups[k];
        const int n = g->when == W_RUN ? n_runs : g->when == W_WERR ? m->werr : g->when == W_MASS ? m->mass : 1;
        for (int i = 0; i < n && rc == 0; i++) {
            const aha_trace_run *r = g->when == W_RUN ? &runs[i] : NULL;
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
    return rc == 0 && st->complete ? coords_write(f, m) : rc;
}

// The runs, in the order they were declared.
static int read_runs(trace_header *h, const char *path, hid_t f) {
    H5G_info_t info;
    hid_t g = H5Gopen2(f, trace_groups[TG_RUNS].path, H5P_DEFAULT);
    int rc = g < 0 || H5Gget_info(g, &info) < 0 ? trace_h5_fail(path, "reading the runs") : 0;
    if (rc == 0 && !(h->runs = aha_calloc((size_t)info.nlinks + 1, sizeof *h->runs, path))) rc = -1;
    for (hsize_t i = 0; rc == 0 && i < info.nlinks; i++) {
        char name[256], where[300];
        aha_trace_run *run = &h->runs[h->n_runs];
        void *obj[OBJ_COUNT] = {[OBJ_RUN] = run};
        hid_t r = -1;
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0 ||
            (r = H5Gopen2(g, name, H5P_DEFAULT)) < 0) {
            rc = trace_h5_fail(path, "reading the runs");
        } else {
            snprintf(where, sizeof where, "runs/%s", name);
            h->n_runs++;
            rc = trace_attrs_read(r, path, where, &trace_groups[TG_RUN], obj, 1);
            if (rc == 0 && !(run->name = strdup(name))) {
                aha_err("%s: out of memory", path);
                rc = -1;
            }
        }
        trace_h5_drop(r);
    }
    trace_h5_drop(g);
    return rc;
}

// Every per-document dataset, which every append carries on: an index
// without one was written by an older aha.
static int docs_check(const char *path, hid_t f) {
    for (int id = 0; id < TD_COUNT; id++) {
        if (trace_dsets[id].shape != SH_DOC || H5Lexists(f, trace_dsets[id].path, H5P_DEFAULT) > 0) continue;
        aha_err("%s: cannot resume: written by an aha before %s; resume it with that build, or record again (--force)",
                path, trace_dsets[id].path);
        return -1;
    }
    return 0;
}

int trace_header_read(const char *path, trace_header *h) {
    memset(h, 0, sizeof *h);
    hid_t f = trace_file_open(path, 1);
    hid_t g = -1;
    if (f < 0) return trace_h5_fail(path, "opening");
    void *obj[OBJ_COUNT] = {[OBJ_META] = &h->m, [OBJ_PROV] = &h->prov, [OBJ_STATE] = &h->st};
    int rc = trace_attrs_read(f, path, "root", &trace_groups[TG_ROOT], obj, 1);
    if (rc == 0 && h->st.format_version != AHA_TRACE_VERSION) {
        aha_err("%s: trace format version %lld; this build writes version %d", path, (long long)h->st.format_version,
                AHA_TRACE_VERSION);
        rc = -1;
    }
    if (rc == 0 && (h->st.complete || h->st.n_docs > 0)) rc = read_runs(h, path, f); // what a resume declares again
    if (rc == 0 && !h->st.complete) {
        if ((g = H5Gopen2(f, trace_groups[TG_PROVENANCE].path, H5P_DEFAULT)) < 0)
            rc = trace_h5_fail(path, "reading the provenance");
        else if ((rc = trace_attrs_read(g, path, "provenance", &trace_groups[TG_PROVENANCE], obj, 1)) == 0 &&
                 h->st.chunk_tokens < 1) {
            aha_err("%s: root attribute chunk_tokens is not >= 1", path);
            rc = -1;
        }
        if (rc == 0) rc = docs_check(path, f);
    }
    trace_h5_drop(g);
    H5Fclose(f);
    if (rc) trace_header_free(h);
    return rc;
}

void trace_header_free(trace_header *h) {
    aha_trace_meta_free(&h->m);
    aha_trace_prov_free(&h->prov);
    for (int i = 0; i < h->n_runs; i++) aha_trace_run_free(&h->runs[i]);
    free(h->runs);
    memset(h, 0, sizeof *h);
}
