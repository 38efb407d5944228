// A trace's datasets as its store's columns (trace_cols.h).
#include "trace_cols.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "trace_attrs.h"
#include "trace_h5.h"

// Row id's instance idx (run: its run's name), named and described.
static int cols_push(trace_cols *cs, const aha_trace_meta *m, trace_dset_id id, int idx, const char *run,
                     const char *who) {
    if (aha_grow(&cs->c, &cs->cap, (size_t)cs->n + 1, sizeof *cs->c, who) != 0) return -1;
    trace_col *c = &cs->c[cs->n++];
    memset(c, 0, sizeof *c);
    c->id = id;
    c->idx = idx;
    if (trace_dsets[id].when == W_EPS) c->attr_value = m->eps[idx];
    if (trace_dsets[id].when == W_WERR || trace_dsets[id].when == W_MASS) c->attr_value = m->windows[idx];
    if (trace_row_name(id, idx, m, run, c->path, sizeof c->path, c->desc, sizeof c->desc) == 0) return 0;
    aha_err("%s: dataset name too long: %s", who, trace_dsets[id].path);
    return -1;
}

static int is_run_row(trace_dset_id id) { return trace_dsets[id].when == W_RUN || trace_dsets[id].when == W_RUN_GATE; }

int trace_cols_init(trace_cols *cs, const aha_trace_meta *m, const char *who) {
    memset(cs, 0, sizeof *cs);
    cs->f16 = trace_h5_f16();
    int ok = cs->f16 >= 0;
    for (int id = 0; id < TD_COUNT; id++) {
        cs->str[id] = -1;
        if (ok && trace_dsets[id].type == TY_STR)
            ok = (cs->str[id] = trace_h5_str((size_t)aha_trace_str_width(m, id))) >= 0;
    }
    if (!ok) return trace_h5_fail(who, "making HDF5 types");
    for (int id = 0; id < TD_COUNT; id++) {
        if (trace_dsets[id].from == FROM_ENDS || is_run_row(id)) continue; // the store's; the runs'
        for (int i = 0; i < trace_row_count(id, m, 0); i++)
            if (trace_row_has(id, i, m, NULL, 0) && cols_push(cs, m, id, i, NULL, who) < 0) return -1;
    }
    return 0;
}

int trace_cols_run(trace_cols *cs, const aha_trace_meta *m, int r, const char *name, int has_gate, const char *who) {
    for (int id = 0; id < TD_COUNT; id++)
        if (is_run_row(id) && (trace_dsets[id].when == W_RUN || has_gate) && cols_push(cs, m, id, r, name, who) < 0)
            return -1;
    return 0;
}

void trace_cols_free(trace_cols *cs) {
    trace_h5_drop(cs->f16);
    for (int id = 0; id < TD_COUNT; id++) trace_h5_drop(cs->str[id]);
    free(cs->c);
    memset(cs, 0, sizeof *cs);
}

int trace_col_along_t(const trace_col *c) {
    return trace_dsets[c->id].shape == SH_T || trace_dsets[c->id].shape == SH_LTH;
}

trace_store_col trace_col_store(const trace_cols *cs, const trace_col *c, const aha_trace_meta *m) {
    const trace_dset *ds = &trace_dsets[c->id];
    const int lth = ds->shape == SH_LTH;
    hid_t ftype = ds->type == TY_STR ? cs->str[c->id] : trace_ty_file(ds->type, cs->f16);
    hid_t mtype = ds->type == TY_STR ? cs->str[c->id] : trace_ty_mem(ds->type, cs->f16);
    trace_store_col sc = {.path = c->path, .rank = lth ? 3 : 1, .rows = lth ? m->n_layers : 1,
                          .width = lth ? m->n_heads : 1, .ftype = ftype, .mtype = mtype,
                          .fill = trace_types[ds->type].fill,
                          .desc = c->desc, .attr = ds->attr, .attr_value = c->attr_value};
    for (int k = 0; k < sc.rank; k++) {
        const int dim = trace_shape_dims[ds->shape][k];
        sc.dims[k] = dim < 0 ? NULL : trace_coords[dim].path;
    }
    return sc;
}
