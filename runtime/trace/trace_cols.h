// A trace's datasets as its store's columns: the instances of the schema's
// rows that a trace of one meta and its runs has (doc_offsets aside: the
// store's own), with their names, descriptions and HDF5 types.
#pragma once
#include <hdf5.h>

#include "store_types.h"
#include "trace_schema.h"

typedef struct {       // one dataset of this trace: an instance of a schema row
    trace_dset_id id;  // its row in trace_dsets
    int idx;           // the eps / window / run index it takes
    char path[96];     // e.g. "dependency/eps_0.01", "runs/w128/nll"
    char desc[512];    // its description attribute
    double attr_value; // the row's numeric attribute ("eps", "window"), if any
} trace_col;

typedef struct {
    trace_col *c;        // [n] in the schema's order, a run's after the trace's own
    int n;               // ...
    size_t cap;          // ... allocated
    hid_t f16;           // HDF5 type: IEEE half
    hid_t str[TD_COUNT]; // each string row's fixed-length type (its width in the meta); -1 for the others
} trace_cols;

// The types and the datasets every trace of meta m has (runs add theirs).
// who names the trace in messages. 0, or -1 with a message.
int trace_cols_init(trace_cols *cs, const aha_trace_meta *m, const char *who);
// The datasets of run r (called name; has_gate: it stores its decisions).
int trace_cols_run(trace_cols *cs, const aha_trace_meta *m, int r, const char *name, int has_gate, const char *who);
void trace_cols_free(trace_cols *cs);
// Column c as the store holds it (pointing into c and cs).
trace_store_col trace_col_store(const trace_cols *cs, const trace_col *c, const aha_trace_meta *m);
// 1 when c is a dataset along the token axis, 0 when it has one value per document.
int trace_col_along_t(const trace_col *c);
