// The trace reader's checks of values as it reads them: what the schema says
// each dataset's values can be (trace_read.h, aha_tr_read, lists them), so
// that nothing downstream is sized or indexed from a value that is not.
#pragma once
#include "trace_tr.h"

// Values [t0, t0+n) of dataset row id (stored as name) as aha_tr_read put
// them in buf (doc_offsets: checked when read whole). 0, or -1 with a
// message naming the trace, the dataset and the first bad value's place.
// It reads only what the reader holds (aha_tr), never through it.
int trace_check_values(const aha_tr *tr, trace_dset_id id, const char *name, int64_t t0, int64_t n, const void *buf);
