// Resume: an unfinished trace's index read back -- what it records, its
// state and provenance, its runs (all by the schema's tables, strictly) and
// the parts its virtual datasets map.
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

// Part list entry for a mapping of file name (relative to the index's
// folder), creating it if new.
static trace_part *part_get(aha_trace *t, const char *name, int add) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int i = trace_part_find(t, base);
    if (i >= 0) return &t->parts[i];
    size_t len = strlen(base);
    if (!add || len >= sizeof t->parts[0].name) return NULL;
    size_t dir = base > name ? (size_t)(base - name - 1) : 0; // the folder, as the index names it
    if (strlen(t->parts_rel) != dir || strncmp(t->parts_rel, name, dir) != 0) {
        char *rel = strndup(name, dir);
        if (!rel) return NULL;
        free(t->parts_rel);
        t->parts_rel = rel;
    }
    trace_part p = {0};
    memcpy(p.name, base, len + 1);
    return trace_parts_insert(t, t->n_parts, &p) < 0 ? NULL : &t->parts[t->n_parts - 1];
}

// The mappings of a virtual dataset into the part list: token ranges from
// tokens (axis 0), entry ranges from doc_offsets.
static int read_mappings(aha_trace *t, hid_t f, trace_dset_id id) {
    int docs = id == TD_DOC_OFFSETS;
    hid_t d = H5Dopen2(f, trace_dsets[id].path, H5P_DEFAULT), dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    size_t n = 0;
    int rc = -1;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &n) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        char name[4096];
        hsize_t v0, v1, s0, s1, dims;
        hid_t vs = H5Pget_virtual_vspace(dcpl, i), ss = H5Pget_virtual_srcspace(dcpl, i);
        int e = vs < 0 || ss < 0 || H5Pget_virtual_filename(dcpl, i, name, sizeof name) < 0 ||
                H5Sget_select_bounds(vs, &v0, &v1) < 0 || H5Sget_select_bounds(ss, &s0, &s1) < 0 ||
                H5Sget_simple_extent_dims(ss, &dims, NULL) != 1;
        trace_h5_drop(vs);
        trace_h5_drop(ss);
        if (!e) trace_vds_unescape(name);
        trace_part *p = e ? NULL : part_get(t, name, !docs);
        if (!p) goto done;
        if (docs) {
            p->d0 = (int64_t)(v0 - s0), p->n_doc = (int64_t)dims;
            p->dv0 = (int64_t)v0, p->dv1 = (int64_t)v1 + 1;
        } else {
            p->t0 = (int64_t)(v0 - s0), p->n_tok = (int64_t)dims;
            p->v0 = (int64_t)v0, p->v1 = (int64_t)v1 + 1;
        }
    }
    rc = 0;
done:
    trace_h5_drop(dcpl);
    trace_h5_drop(d);
    return rc;
}

// The runs, in the order they were declared; a trace without documents
// takes new ones.
static int read_runs(aha_trace *t, hid_t f) {
    H5G_info_t info;
    hid_t g = H5Gopen2(f, trace_groups[TG_RUNS].path, H5P_DEFAULT);
    int rc = g < 0 || H5Gget_info(g, &info) < 0 ? trace_h5_fail(t->path, "reading the runs") : 0;
    for (hsize_t i = 0; rc == 0 && i < info.nlinks; i++) {
        char name[256], where[300];
        aha_trace_run run = {0};
        void *obj[OBJ_COUNT] = {[OBJ_RUN] = &run};
        hid_t r = -1;
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0 ||
            (r = H5Gopen2(g, name, H5P_DEFAULT)) < 0) {
            rc = trace_h5_fail(t->path, "reading the runs");
        } else {
            snprintf(where, sizeof where, "runs/%s", name);
            rc = trace_attrs_read(r, t->path, where, &trace_groups[TG_RUN], obj, 1);
            if (rc == 0) rc = trace_run_push(t, name, run.policy, run.window, run.param);
            if (rc == 0) {
                t->runs[t->n_runs - 1].flops_executed = run.flops_executed;
                t->runs[t->n_runs - 1].flops_full = run.flops_full;
            }
        }
        aha_trace_run_free(&run);
        trace_h5_drop(r);
    }
    trace_h5_drop(g);
    return rc;
}

int trace_read_back(aha_trace *t, aha_trace_meta *fm, int64_t *complete) {
    hid_t f = trace_file_open(t->path, 1), g = -1;
    if (f < 0) return trace_h5_fail(t->path, "opening");
    aha_trace_state st = {0};
    void *obj[OBJ_COUNT] = {[OBJ_META] = fm, [OBJ_PROV] = &t->prov, [OBJ_STATE] = &st};
    int rc = trace_attrs_read(f, t->path, "root", &trace_groups[TG_ROOT], obj, 1);
    if (rc == 0 && st.format_version != AHA_TRACE_VERSION) {
        aha_err("%s: trace format version %lld; this build writes version %d", t->path,
                (long long)st.format_version, AHA_TRACE_VERSION);
        rc = -1;
    }
    *complete = st.complete;
    t->n_docs = st.n_docs, t->n_tok = st.n_tokens, t->tc = st.chunk_tokens, t->id = st.id;
    if (rc == 0 && (st.complete || t->n_docs > 0)) rc = read_runs(t, f); // what a resume declares again
    if (rc == 0 && !st.complete) {
        if ((g = H5Gopen2(f, trace_groups[TG_PROVENANCE].path, H5P_DEFAULT)) < 0)
            rc = trace_h5_fail(t->path, "reading the provenance");
        else if ((rc = trace_attrs_read(g, t->path, "provenance", &trace_groups[TG_PROVENANCE], obj, 1)) == 0 &&
                 st.chunk_tokens < 1) {
            aha_err("%s: root attribute chunk_tokens is not >= 1", t->path);
            rc = -1;
        }
        if (rc == 0 && (read_mappings(t, f, TD_TOKENS) < 0 || read_mappings(t, f, TD_DOC_OFFSETS) < 0))
            rc = trace_h5_fail(t->path, "reading the trace index");
        // its parts lack a per-document dataset, which every append now carries on
        for (int j = 1; rc == 0 && j < TRACE_N_DOC_DSETS; j++)
            if (H5Lexists(f, trace_dsets[TD_DOC_OFFSETS + j].path, H5P_DEFAULT) <= 0) {
                aha_err("%s: cannot resume: written by an aha before %s; resume it with that build, or record "
                        "again (--force)", t->path, trace_dsets[TD_DOC_OFFSETS + j].path);
                rc = -1;
            }
    }
    trace_h5_drop(g);
    H5Fclose(f);
    return rc;
}
