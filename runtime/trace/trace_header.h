// A trace file's header: everything but its datasets -- the root's
// attributes, then the groups in the schema's order, each with its
// description and attributes, all by the schema's tables -- written into
// each index and the final file (the final file's also with the
// coordinates of its fixed axes), and read back from an index to resume.
// Functions return 0 or -1 (with a message naming the file; a write leaves
// HDF5's cause for its caller's message).
#pragma once
#include <hdf5.h>

#include "trace_schema.h"

int trace_header_write(hid_t f, const aha_trace_meta *m, const aha_trace_prov *prov, const aha_trace_run *runs,
                       int n_runs, const aha_trace_state *st);

typedef struct {          // a trace's index, read back
    aha_trace_meta m;     // what it records (strings and arrays owned)
    aha_trace_prov prov;  // the first run's provenance (owned; the root's, then the provenance group's)
    aha_trace_state st;   // its state
    aha_trace_run *runs;  // [n_runs] in declaration order (owned): where it holds documents or is complete,
                          // the runs a resume declares again
    int n_runs;           // ...
} trace_header;

// The header of the trace at path, strictly (every attribute but the
// optional ones there); of an unfinished trace also its provenance, and
// every per-document dataset a resume appends to (an older writer's trace
// lacks one: refused).
int trace_header_read(const char *path, trace_header *h);
void trace_header_free(trace_header *h);
