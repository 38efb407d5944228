// aha verify: a trace read whole and checked -- how it is stored, every
// chunk against its checksum, every value against what the schema says it
// can be (trace_read.h) -- so that a damaged trace is found before its
// numbers are used. report, plot and merge check the same as they read.
#pragma once
#include <stdint.h>

#include "trace_read.h"

typedef struct {
    int64_t chunks;   // chunks stored and checked (an unfinished trace's: in its part files, by HDF5)
    int64_t values;   // values read and checked
} aha_verify_result;

// Every dataset of tr (opened to read values: not AHA_TR_LOOK) read in slabs
// of about block tokens (0: automatic) and checked, and its storage
// (aha_tr_check_storage). 0, or -1 with a message naming the trace, the
// dataset and the first problem's place.
int aha_verify_tr(const aha_tr *tr, int block, aha_verify_result *r);
