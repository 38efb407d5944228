// The index: root attributes, groups and virtual datasets over the parts;
// closing writes the same header over real datasets (the final file).
#include "trace_impl.h"

#include <math.h>
#include <stdio.h>

// A new group; like the root, it lists its members in creation order.
static int group_put(hid_t loc, const char *path, hid_t *out) {
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g = -1;
    if (gcpl >= 0 &&
        H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0)
        g = H5Gcreate2(loc, path, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    trace_h5_drop(gcpl);
    *out = g;
    return g < 0 ? -1 : 0;
}

// The virtual dataset of column c: the token ranges the parts map.
static int col_virtual(const aha_trace *t, hid_t f, const trace_col *c) {
    static const int32_t i32_fill = -1; // read where a part file is missing
    static const uint8_t u8_fill = 255;
    static const uint32_t u32_fill = 0; // no valid distance is 0
    static const uint16_t f16_fill = 0x7e00;
    static const float f32_fill = NAN;
    const void *fill[] = {&i32_fill, &u8_fill, &u32_fill, &f32_fill, &f16_fill, NULL}; // by TY_*
    hsize_t dims[3];
    int r = trace_col_dims(t, c, t->n_tok, dims), rc = -1;
    hid_t vs = H5Screate_simple(r, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        (fill[c->type] && H5Pset_fill_value(dcpl, trace_ty_mem(t, c->type), fill[c->type]) < 0))
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        char name[4096];
        snprintf(name, sizeof name, "%s/%s", t->parts_rel, p->name);
        trace_col_dims(t, c, p->n_tok, dims);
        hid_t ss = H5Screate_simple(r, dims, NULL);
        int e = ss < 0 || trace_col_select(t, c, vs, p->v0, p->v1 - p->v0) < 0 ||
                trace_col_select(t, c, ss, p->v0 - p->t0, p->v1 - p->v0) < 0 ||
                H5Pset_virtual(dcpl, vs, name, c->path, ss) < 0;
        trace_h5_drop(ss);
        if (e) goto done;
    }
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl >= 0 && H5Sselect_all(vs) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0)
        d = H5Dcreate2(f, c->path, trace_ty_file(t, c->type), vs, lcpl, dcpl, H5P_DEFAULT);
    trace_h5_drop(lcpl);
    rc = d < 0 || trace_col_describe(t, d, c) < 0 ? -1 : 0;
done:
    trace_h5_drop(d);
    trace_h5_drop(dcpl);
    trace_h5_drop(vs);
    return rc;
}

// doc_offsets of the index: entry 0 is the fill value 0; entries 1..n_docs
// come from the parts.
static int doc_virtual(const aha_trace *t, hid_t f) {
    const int64_t zero = 0;
    hsize_t n = (hsize_t)t->n_docs + 1;
    int rc = -1;
    hid_t vs = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &zero) < 0)
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        if (p->dv1 == p->dv0) continue;
        char name[4096];
        snprintf(name, sizeof name, "%s/%s", t->parts_rel, p->name);
        hsize_t sn = (hsize_t)p->n_doc, vo = (hsize_t)p->dv0, so = (hsize_t)(p->dv0 - p->d0);
        hsize_t k = (hsize_t)(p->dv1 - p->dv0);
        hid_t ss = H5Screate_simple(1, &sn, NULL);
        int e = ss < 0 || H5Sselect_hyperslab(vs, H5S_SELECT_SET, &vo, NULL, &k, NULL) < 0 ||
                H5Sselect_hyperslab(ss, H5S_SELECT_SET, &so, NULL, &k, NULL) < 0 ||
                H5Pset_virtual(dcpl, vs, name, "doc_offsets", ss) < 0;
        trace_h5_drop(ss);
        if (e) goto done;
    }
    if (H5Sselect_all(vs) >= 0)
        d = H5Dcreate2(f, "doc_offsets", H5T_STD_I64LE, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    rc = d < 0 || trace_attr_str(t, d, "description", trace_doc_desc) < 0 ? -1 : 0;
done:
    trace_h5_drop(d);
    trace_h5_drop(dcpl);
    trace_h5_drop(vs);
    return rc;
}

// Root attributes, provenance and the groups: all but the datasets.
static int write_header(const aha_trace *t, hid_t f, int complete) {
    const aha_trace_meta *m = &t->m;
    const trace_prov *p = &t->prov;
    double eps[m->n_eps + 1];
    int64_t win[m->n_windows + 1];
    for (int i = 0; i < m->n_eps; i++) eps[i] = m->eps[i];
    for (int i = 0; i < m->n_windows; i++) win[i] = m->windows[i];
    hid_t g = -1;
    int rc = 0;
    rc |= trace_attr_str(
        t, f, "description",
        "aha trace: per layer, token and head, attention routing decisions and context-"
        "dependency distances of a transformer over a dataset. Schema: docs/trace-format.md.");
    rc |= trace_attr_str(t, f, "format", TRACE_FORMAT);
    rc |= trace_attr_i64(f, "format_version", TRACE_FORMAT_VERSION);
    rc |= trace_attr_str(t, f, "tool_version", p->version);
    rc |= trace_attr_str(t, f, "git_revision", p->git_revision);
    rc |= trace_attr_str(t, f, "model", m->model_path);
    rc |= trace_attr_str(t, f, "architecture", m->arch);
    rc |= trace_attr_i64(f, "n_layers", m->n_layers);
    rc |= trace_attr_i64(f, "n_heads", m->n_heads);
    rc |= trace_attr_i64(f, "n_kv_heads", m->n_kv_heads);
    rc |= trace_attr_i64(f, "head_dim", m->head_dim);
    rc |= trace_attr_i64(f, "vocab", m->vocab);
    rc |= trace_attr_i64(f, "aha", m->aha);
    rc |= trace_attr_str(t, f, "router", m->router);
    rc |= trace_attr_f64(f, "tau", m->tau);
    rc |= trace_attr_put(f, "eps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->n_eps, eps);
    rc |= trace_attr_put(f, "windows", H5T_STD_I64LE, H5T_NATIVE_INT64, m->n_windows, win);
    rc |= trace_attr_i64(f, "sinks", m->sinks);
    rc |= trace_attr_i64(f, "werr", m->werr);
    rc |= trace_attr_str(t, f, "mode", m->mode);
    rc |= trace_attr_str(t, f, "dataset", m->dataset);
    rc |= trace_attr_str(t, f, "device", m->device);
    rc |= trace_attr_str(t, f, "shard", m->shard);
    rc |= trace_attr_str(t, f, "command_line", p->command_line);
    rc |= trace_attr_str(t, f, "created", p->created);
    rc |= trace_attr_i64(f, "complete", complete);
    rc |= trace_attr_i64(f, "n_docs", t->n_docs);
    rc |= trace_attr_i64(f, "n_tokens", t->n_tok);
    rc |= trace_attr_i64(f, "chunk_tokens", t->tc);
    if (rc || group_put(f, "provenance", &g) < 0) goto fail;
    rc |= trace_attr_str(t, g, "description",
                   "How this trace was made: the toolkit build and the libraries.");
    rc |= trace_attr_str(t, g, "version", p->version);
    rc |= trace_attr_str(t, g, "git_revision", p->git_revision);
    rc |= trace_attr_str(t, g, "compiler", p->compiler);
    rc |= trace_attr_str(t, g, "cflags", p->cflags);
    rc |= trace_attr_str(t, g, "host", p->host);
    rc |= trace_attr_str(t, g, "hdf5_version", p->hdf5);
    trace_h5_drop(g);
    if (rc || group_put(f, "dependency", &g) < 0) goto fail;
    rc |= trace_attr_str(t, g, "description",
                   "Dependency distance d_eps per (layer, token, head): one dataset per eps.");
    trace_h5_drop(g);
    if (m->werr) {
        if (rc || group_put(f, "window_error", &g) < 0) goto fail;
        rc |= trace_attr_str(t, g, "description",
                       "Relative error of each head's sliding-window attention output against full "
                       "attention: one dataset per window.");
        trace_h5_drop(g);
    }
    if (rc || group_put(f, "runs", &g) < 0) goto fail;
    rc |= trace_attr_str(
        t, g, "description",
        "One group per run (in the order they were declared): per-token NLL and KL against "
        "full attention, the decisions attention used, and attention FLOP totals.");
    trace_h5_drop(g);
    for (int i = 0; i < t->n_runs && !rc; i++) {
        const trace_run *r = &t->runs[i];
        char path[160], desc[512];
        snprintf(path, sizeof path, "runs/%s", r->name);
        snprintf(
            desc, sizeof desc,
            "Run '%s': attention follows policy '%s' (window %d). flops_executed / flops_full: "
            "attention FLOPs executed and what full attention would have executed, over all "
            "documents.",
            r->name, r->policy, r->window);
        if (group_put(f, path, &g) < 0) goto fail;
        rc |= trace_attr_str(t, g, "description", desc);
        rc |= trace_attr_str(t, g, "policy", r->policy);
        rc |= trace_attr_i64(g, "window", r->window);
        rc |= trace_attr_f64(g, "flops_executed", r->flops_executed);
        rc |= trace_attr_f64(g, "flops_full", r->flops_full);
        trace_h5_drop(g);
    }
    if (!rc) return 0;
fail:
    return -1;
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
        if (rc == 0 && doc_virtual(t, f) < 0) rc = trace_h5_fail(tmp, "writing the index");
    }
    if (trace_file_close(f, tmp) < 0) rc = -1;
    return rc;
}
