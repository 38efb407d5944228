// Resume: an index read back, its root attributes as a meta, then the
// counters, provenance, runs and the parts (from its mappings).
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static int attr_get(hid_t loc, const char *name, hid_t mtype, void *v) {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Aread(a, mtype, v);
    trace_h5_drop(a);
    return e < 0 ? -1 : 0;
}

// A string attribute as a malloc'ed copy, or NULL.
static char *attr_get_str(const aha_trace *t, hid_t loc, const char *name) {
    char *s = NULL;
    if (attr_get(loc, name, t->str, &s) < 0 || !s) return NULL;
    char *c = strdup(s);
    H5free_memory(s);
    return c;
}

static int attr_get_i64(hid_t loc, const char *name, int64_t *v) {
    return attr_get(loc, name, H5T_NATIVE_INT64, v);
}

// A 1-D numeric attribute as a malloc'ed array of *n values of mtype.
static void *attr_get_array(hid_t loc, const char *name, hid_t mtype, size_t size, int *n) {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), sp = a < 0 ? -1 : H5Aget_space(a);
    hssize_t k = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    void *v = k < 0 ? NULL : malloc((size_t)k * size + 1);
    if (v && H5Aread(a, mtype, v) < 0) {
        free(v);
        v = NULL;
    }
    trace_h5_drop(sp);
    trace_h5_drop(a);
    *n = (int)k;
    return v;
}

static int read_meta(aha_trace *t, hid_t f, aha_trace_meta *m, int64_t *complete) {
    char *format = attr_get_str(t, f, "format");
    int64_t version = 0, v[9];
    int ok = format && strcmp(format, TRACE_FORMAT) == 0;
    free(format);
    if (!ok) {
        aha_err("%s: not an aha trace (no format = \"" TRACE_FORMAT "\" attribute)", t->path);
        return -1;
    }
    if (attr_get_i64(f, "format_version", &version) < 0 || version != TRACE_FORMAT_VERSION) {
        aha_err("%s: trace format version %lld; this build reads version %d", t->path,
                (long long)version, TRACE_FORMAT_VERSION);
        return -1;
    }
    static const char *ints[] = {"n_layers", "n_heads", "n_kv_heads", "head_dim", "vocab",
                                 "aha",      "sinks",   "werr",       "complete"};
    double tau = 0, *eps = NULL;
    int64_t *win = NULL;
    for (int i = 0; i < 9; i++)
        if (attr_get_i64(f, ints[i], &v[i]) < 0) return trace_h5_fail(t->path, ints[i]);
    m->n_layers = (int)v[0], m->n_heads = (int)v[1], m->n_kv_heads = (int)v[2];
    m->head_dim = (int)v[3], m->vocab = (int)v[4], m->aha = (int)v[5], m->sinks = (int)v[6];
    m->werr = (int)v[7];
    *complete = v[8];
    m->model_path = attr_get_str(t, f, "model");
    m->arch = attr_get_str(t, f, "architecture");
    m->router = attr_get_str(t, f, "router");
    m->mode = attr_get_str(t, f, "mode");
    m->dataset = attr_get_str(t, f, "dataset");
    // Traces written before the attribute existed were all made on the CPU.
    m->device = H5Aexists(f, "device") > 0 ? attr_get_str(t, f, "device") : strdup("cpu");
    m->shard = H5Aexists(f, "shard") > 0 ? attr_get_str(t, f, "shard") : strdup("");
    eps = attr_get_array(f, "eps", H5T_NATIVE_DOUBLE, sizeof *eps, &m->n_eps);
    win = attr_get_array(f, "windows", H5T_NATIVE_INT64, sizeof *win, &m->n_windows);
    float *e = malloc((size_t)(m->n_eps > 0 ? m->n_eps : 0) * sizeof *e + 1);
    int *w = malloc((size_t)(m->n_windows > 0 ? m->n_windows : 0) * sizeof *w + 1);
    for (int i = 0; e && eps && i < m->n_eps; i++) e[i] = (float)eps[i];
    for (int i = 0; w && win && i < m->n_windows; i++) w[i] = (int)win[i];
    m->eps = e, m->windows = w;
    ok = m->model_path && m->arch && m->router && m->mode && m->dataset && m->device && m->shard && eps &&
         win &&
         e && w &&
         attr_get(f, "tau", H5T_NATIVE_DOUBLE, &tau) >= 0;
    m->tau = (float)tau;
    free(eps);
    free(win);
    return ok ? 0 : trace_h5_fail(t->path, "reading the root attributes");
}

int trace_read_meta(aha_trace *t, aha_trace_meta *m, int64_t *complete) {
    hid_t f = trace_file_open(t->path);
    if (f < 0) return -1;
    int rc = read_meta(t, f, m, complete);
    H5Fclose(f);
    return rc;
}

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
static int read_mappings(aha_trace *t, hid_t f, const char *dset, int docs) {
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
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

static int read_index(aha_trace *t, hid_t f) {
    trace_prov *p = &t->prov;
    hid_t g = H5Gopen2(f, "provenance", H5P_DEFAULT);
    int64_t tc = 0;
    int rc = -1;
    if (g < 0 || attr_get_i64(f, "n_docs", &t->n_docs) < 0 ||
        attr_get_i64(f, "n_tokens", &t->n_tok) < 0 || attr_get_i64(f, "chunk_tokens", &tc) < 0 ||
        tc < 1 || !(p->created = attr_get_str(t, f, "created")) ||
        !(p->command_line = attr_get_str(t, f, "command_line")) ||
        !(p->version = attr_get_str(t, g, "version")) ||
        !(p->git_revision = attr_get_str(t, g, "git_revision")) ||
        !(p->compiler = attr_get_str(t, g, "compiler")) ||
        !(p->cflags = attr_get_str(t, g, "cflags")) || !(p->host = attr_get_str(t, g, "host")) ||
        !(p->hdf5 = attr_get_str(t, g, "hdf5_version")))
        goto done;
    t->tc = tc;
    trace_h5_drop(g);
    g = -1;
    if (t->n_docs > 0) { // the runs; a trace without documents takes new ones
        H5G_info_t info;
        if ((g = H5Gopen2(f, "runs", H5P_DEFAULT)) < 0 || H5Gget_info(g, &info) < 0) goto done;
        for (hsize_t i = 0; i < info.nlinks; i++) {
            char name[256];
            int64_t window = 0;
            if (H5Lget_name_by_idx(g, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name, sizeof name,
                                   H5P_DEFAULT) < 0)
                goto done;
            hid_t r = H5Gopen2(g, name, H5P_DEFAULT);
            char *policy = r < 0 ? NULL : attr_get_str(t, r, "policy");
            double fe = 0, ff = 0;
            int e = !policy || attr_get_i64(r, "window", &window) < 0 ||
                    attr_get(r, "flops_executed", H5T_NATIVE_DOUBLE, &fe) < 0 ||
                    attr_get(r, "flops_full", H5T_NATIVE_DOUBLE, &ff) < 0;
            trace_h5_drop(r);
            if (e || trace_run_push(t, name, policy, (int)window) < 0) {
                free(policy);
                goto done;
            }
            free(policy);
            t->runs[t->n_runs - 1].flops_executed = fe;
            t->runs[t->n_runs - 1].flops_full = ff;
        }
    }
    if (read_mappings(t, f, "tokens", 0) < 0 || read_mappings(t, f, "doc_offsets", 1) < 0)
        goto done;
    rc = 0;
done:
    trace_h5_drop(g);
    return rc < 0 ? trace_h5_fail(t->path, "reading the trace index") : 0;
}

int trace_read_index(aha_trace *t) {
    hid_t f = trace_file_open(t->path);
    if (f < 0) return -1;
    int rc = read_index(t, f);
    H5Fclose(f);
    return rc;
}
