// The trace reader's handle (trace_read.h): what an open trace holds, set
// by opening it. Apart from the reader's functions, so that the files below
// the reader (its checks of values, its open files) see the handle and not
// the reader.
#pragma once
#include <stdint.h>

#include "trace_schema.h"

typedef struct {
    const char *path;           // as given
    int64_t file;               // hid_t of an image opened in memory; -1 for a file, which is
                                // open only while it is read (trace_files.h)
    uint64_t serial;            // the file's in the reader's open files (0: none, a copy)
    uint64_t dev, ino;          // the file's identity when opened: it is opened again as that file only
    aha_trace_meta m;           // root attributes (owned): windows ascending and distinct;
                                // aha and werr as the datasets show
    int format_version;
    int complete;               // 0: a killed or unfinished run (index over parts)
    int64_t n_tokens;           // T: tokens the datasets hold
    int64_t n_docs;             // documents (contexts) doc_offsets delimits
    int64_t *doc_offsets;       // [n_docs + 1] checked: 0, each document 1..ctx tokens, T
                                // (owned; NULL when opened for looking at)
    int doc_index;              // 1: the file has doc_index (traces before it do not)
    int doc_source;             // 1: the file has doc_source and doc_sha256 (traces before them do not)
    int chunk_tokens;           // the datasets' chunk length along T
    int n_runs;
    aha_trace_run runs[AHA_TRACE_MAX_RUNS]; // [n_runs] in declaration order (owned)
} aha_tr;
