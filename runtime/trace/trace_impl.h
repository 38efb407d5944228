// Internals of the trace writer. Its files, each using only those above it:
//   trace_schema.c  the tables and the meta (trace_schema.h)
//   trace_h5.c      HDF5 plumbing; attributes by the tables (trace_h5.h)
//   trace_codec.c   the chunk codec (trace_codec.h)
//   trace_cols.c    this trace's datasets: which, their shapes, creating them
//   trace_parts.c   the parts folder and list: paths, publishing, lock, cleaning
//   trace_piece.c   writing a piece (one append)
//   trace_block.c   writing a block, or the final file's datasets; compaction
//   trace_index.c   the header and the index (or the final file); the commit
//   trace_resume.c  reading an index back (resume)
//   trace.c         the API: create, add runs, append, resume, close
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "trace_attrs.h"
#include "trace_h5.h"

#define TRACE_BLOCK_CHUNKS 8 // chunks in a level-0 block
#define TRACE_FANOUT 8       // blocks of one level merged into one of the next
#define TRACE_DOC_CHUNK 4096 // chunk of doc_offsets (entries)

typedef struct {       // one dataset along the token axis: an instance of a schema row
    trace_dset_id id;  // its row in trace_dsets
    int idx;           // the eps / window / run index it takes
    char path[96];     // e.g. "dependency/eps_0.01", "runs/w128/nll"
    char desc[512];    // its description attribute
    double attr_value; // the row's numeric attribute ("eps", "window"), if any
} trace_col;

// A part file holds tokens [t0, t0 + n_tok) and doc_offsets entries
// [d0, d0 + n_doc) of the trace; the index maps the token range [v0, v1) and
// entry range [dv0, dv1) from it. Mapped ranges of the parts, in order, tile
// [0, T) and [1, n_docs + 1) (entry 0 is the fill value 0). Token ranges
// start on chunk boundaries and, but for the last part, end on one.
typedef struct {
    char name[48];     // file name in the parts folder: "p<id>-<t0>-<t1>.h5" (a
                       // piece: one append) or "b<id>-<t0>-<t1>.h5" (a block)
    int level;         // -1: piece; k: block of TRACE_BLOCK_CHUNKS * FANOUT^k chunks
    int64_t t0, n_tok; // tokens in the file
    int64_t d0, n_doc; // doc_offsets entries in the file
    int64_t v0, v1;    // token range mapped from it
    int64_t dv0, dv1;  // entry range mapped from it
} trace_part;

struct aha_trace {
    char *path;             // the index, later the final file
    char *dir;              // its folder
    char *parts_dir;        // the parts folder (path + ".parts")
    char *parts_rel;        // its name relative to dir, as the index names it
    aha_trace_meta m;       // deep copy (strings and arrays owned)
    aha_trace_prov prov;    // provenance attributes
    int64_t tc;             // chunk length along T (tokens)
    trace_col *cols;        // [n_cols] token-axis datasets (doc_offsets is apart)
    int n_cols;             // ...
    size_t cap_cols;        // ... allocated
    aha_trace_run *runs;    // [n_runs] in declaration order
    int n_runs;             // ...
    size_t cap_runs;        // ... allocated
    int n_redeclared;       // resumed with documents: runs declared again so far; else -1
    trace_part *parts;      // [n_parts] in token order
    int n_parts;            // ...
    size_t cap_parts;       // ... allocated
    int64_t n_docs, n_tok;  // committed documents and tokens
    int64_t id;             // the trace's id (trace_id), in its part files' names
    char (*drop)[48];       // [n_drop] part files to delete once the index stops naming them
    int n_drop;             // ...
    size_t cap_drop;        // ... allocated
    int failed;             // an append failed: the handle takes no more
    int complete;           // resumed complete: it takes the runs declared again (compared), no more
    int lock_fd;            // the trace's lock (common/publish.h): one writer per trace
    hid_t f16;              // HDF5 type: IEEE half
    hid_t str[TD_COUNT];    // each string row's fixed-length type (its width in m); -1 for the others
    void *buf;              // scratch, [buf_size] bytes (a document's values)
    size_t buf_size;        // ...
};

// trace_cols.c
int trace_cols_init(aha_trace *t); // the columns every trace has (runs add theirs)
int trace_run_push(aha_trace *t, const char *name, const char *policy, int window, double param);
int trace_col_dims(const aha_trace *t, const trace_col *c, int64_t n, hsize_t *dims);
int trace_col_select(const aha_trace *t, const trace_col *c, hid_t space, int64_t start,
                     int64_t n);
trace_type trace_col_type(const trace_col *c);
int trace_col_rank(const trace_col *c); // 1: [T]; 3: [L, T, H]
size_t trace_col_size(const aha_trace *t, const trace_col *c); // bytes of one value, in the file and in memory
hid_t trace_col_h5type(const aha_trace *t, const trace_col *c, int mem); // its HDF5 type in the file / in memory
hid_t trace_col_create(const aha_trace *t, hid_t f, const trace_col *c, int64_t n);
int trace_col_describe(hid_t d, const trace_col *c);
// Per-document datasets: doc_offsets (TD_DOC_OFFSETS) and the rows of shape
// SH_DOC (doc_index, doc_source, doc_sha256: "doc rows"). A part holds them
// all at the same entries: its doc_offsets entry j ends the document whose
// doc rows' entry is j, so all map the same ranges (a doc row one lower in the
// trace: it has no entry for doc_offsets[0]). Entries are 8 bytes in memory:
// int64, or a char * (malloc'd when read: trace_entries_free); in the file a
// string row's entries are fixed-length strings of the row's width.
hid_t trace_doc_create(const aha_trace *t, hid_t f, trace_dset_id id, int64_t n);
int trace_doc_describe(hid_t d, trace_dset_id id);
int trace_entries_read(const aha_trace *t, hid_t f, trace_dset_id id, int64_t off, int64_t n, void *v);
int trace_entries_write(const aha_trace *t, hid_t d, trace_dset_id id, int64_t off, int64_t n, const void *v);
void trace_entries_free(trace_dset_id id, int64_t n, void *v);

// trace_parts.c
void *trace_scratch(aha_trace *t, size_t bytes); // t->buf, grown to bytes
int trace_publish(const char *tmp, const char *path);
void trace_part_paths(const aha_trace *t, const char *name, char *path, char *tmp, size_t size);
void trace_part_name(const aha_trace *t, char name[48], char kind, int64_t t0, int64_t t1);
hid_t trace_part_open(const aha_trace *t, const trace_part *p);
int trace_part_find(const aha_trace *t, const char *name);
enum { CLEAN_COUNT, CLEAN_ORPHANS, CLEAN_ALL }; // trace_parts_clean's modes
int trace_parts_clean(const aha_trace *t, const char *dir, int mode);
int trace_parts_lock(aha_trace *t);
int trace_parts_insert(aha_trace *t, int at, const trace_part *p);
int trace_block_level(const aha_trace *t, int64_t n_tok);
int trace_parts_check(aha_trace *t);
int trace_drop_push(aha_trace *t, const char *name);

// trace_piece.c, trace_block.c, trace_index.c: each writes one new file, tmp.
int trace_write_piece(aha_trace *t, const aha_trace_doc *d, int64_t a, const char *tmp,
                      int64_t *n_back);
int trace_write_range(aha_trace *t, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                      int64_t *taken);
int trace_compact(aha_trace *t); // merge full chunks and blocks into larger blocks
int trace_write_index(aha_trace *t, const char *tmp, int final);
int trace_commit(aha_trace *t);  // publish a new index over the parts

// trace_resume.c: a trace's index read back into t (a complete trace: its
// sizes and runs, to compare); *fm gets what it records (strings and arrays
// malloc'd), *complete its state.
int trace_read_back(aha_trace *t, aha_trace_meta *fm, int64_t *complete);
