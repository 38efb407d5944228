// One document (aha_trace_doc) as the trace's store takes it: checked
// against the trace's columns, then one buffer per column, driven by the
// schema's rows (each says where a document holds its values: trace_from).
#pragma once
#include <stddef.h>

#include "trace_cols.h"

typedef struct {             // what a record made of a document points into (reused)
    const void **values;     // [columns along T]
    trace_store_val *recs;     // [per-document columns]
    size_t cap_values, cap_recs;
    void *buf;               // [size] the values converted: float16, fixed-length text, positions
    size_t size;             // ...
} trace_doc_buf;

// Document d holds every array the columns cs of a trace (meta m, runs[0..
// n_runs)) take, its text fits their widths, and the run fields are there:
// 0, or -1 with what is wrong in what[size] ("no dep", "token_text[3] is
// NULL", ...).
int trace_doc_check(const trace_cols *cs, const aha_trace_meta *m, const aha_trace_run *runs, int n_runs,
                    const aha_trace_doc *d, char *what, size_t size);
// Document d (checked) as a record of columns cs into *r: values pointing
// into d where they are stored as given, into b->buf where converted. 0, or
// -1 (out of memory, a message naming who).
int trace_doc_record(const trace_cols *cs, const aha_trace_meta *m, const aha_trace_doc *d, trace_doc_buf *b,
                     trace_store_rec *r, const char *who);
void trace_doc_buf_free(trace_doc_buf *b);
