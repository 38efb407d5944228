// Internals of the trace writer, shared by its files:
//   trace.c            the API: create, add runs, append, resume, close
//   trace_meta.c       the meta: checked, copied, compared; provenance
//   trace_cols.c       the datasets: which, their shapes and descriptions
//   trace_parts.c      the parts folder and list: publish, lock, merge, commit
//   trace_piece.c      writing a piece (one append)
//   trace_block.c      writing a block, or the final file's datasets
//   trace_index.c      writing the index (or the final file)
//   trace_index_read.c reading an index back (resume)
//   trace_h5.c         HDF5 plumbing: errors, types, files, attributes
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define TRACE_FORMAT "aha-trace"
#define TRACE_FORMAT_VERSION 1
#define TRACE_BLOCK_CHUNKS 8 // chunks in a level-0 block
#define TRACE_FANOUT 8       // blocks of one level merged into one of the next
#define TRACE_DOC_CHUNK 4096 // chunk of doc_offsets (entries)

// Element types of the columns (file and memory layout are the same).
enum { TY_I32, TY_U8, TY_U32, TY_F32, TY_F16, TY_STR };

// Which field of aha_trace_doc fills a column (SRC_POSITION: none, 0..n-1).
enum { SRC_TOKENS, SRC_POSITION, SRC_TEXT, SRC_GATE, SRC_LOGIT, SRC_DEP, SRC_WERR, SRC_NLL, SRC_KL,
       SRC_RUN_GATE };

typedef struct {       // one dataset along the token axis
    char path[96];     // e.g. "dependency/eps_0.01", "runs/w128/nll"
    char desc[256];    // its description attribute
    int rank;          // 1: [T]; 3: [L, T, H]
    int type;          // TY_*
    int src, idx;      // SRC_*, and the eps / window / run index it takes
    const char *attr;  // extra numeric attribute ("eps", "window") or NULL
    double attr_value; // its value
} trace_col;

typedef struct {
    char *name, *policy;   // owned
    int window;            // the policy's window (0: none)
    int has_gate;          // policy != "global": runs/<name>/gate exists
    double flops_executed; // attention FLOPs, totals over committed documents
    double flops_full;     // ...what full attention would have executed
} trace_run;

// A part file holds tokens [t0, t0 + n_tok) and doc_offsets entries
// [d0, d0 + n_doc) of the trace; the index maps the token range [v0, v1) and
// entry range [dv0, dv1) from it. Mapped ranges of the parts, in order, tile
// [0, T) and [1, n_docs + 1) (entry 0 is the fill value 0). Token ranges
// start on chunk boundaries and, but for the last part, end on one.
typedef struct {
    char name[48];     // file name in the parts folder: "p<t0>-<t1>.h5" (a
                       // piece: one append) or "b<t0>-<t1>.h5" (a block)
    int level;         // -1: piece; k: block of TRACE_BLOCK_CHUNKS * FANOUT^k chunks
    int64_t t0, n_tok; // tokens in the file
    int64_t d0, n_doc; // doc_offsets entries in the file
    int64_t v0, v1;    // token range mapped from it
    int64_t dv0, dv1;  // entry range mapped from it
} trace_part;

typedef struct {                                      // provenance; kept when resumed
    char *version, *git_revision, *compiler, *cflags; // of the build that created the trace
    char *host, *hdf5;                                // machine name, HDF5 library version
    char *created, *command_line;                     // UTC ISO 8601 time; the first command
} trace_prov;

struct aha_trace {
    char *path;             // the index, later the final file
    char *dir;              // its folder
    char *parts_dir;        // the parts folder (path + ".parts")
    char *parts_rel;        // its name relative to dir, as the index names it
    aha_trace_meta m;       // deep copy (strings and arrays owned)
    trace_prov prov;        // provenance attributes
    int64_t tc;             // chunk length along T (tokens)
    trace_col *cols;        // [n_cols] token-axis datasets (doc_offsets is apart)
    int n_cols;             // ...
    trace_run *runs;        // [n_runs] in declaration order
    int n_runs;             // ...
    int n_redeclared;       // resumed with documents: runs declared again so far; else -1
    trace_part *parts;      // [n_parts] in token order (capacity cap_parts)
    int n_parts, cap_parts; // ...
    int64_t n_docs, n_tok;  // committed documents and tokens
    char (*drop)[48];       // [n_drop] part files to delete once the index stops naming them
    int n_drop, cap_drop;   // ...
    int failed;             // an append failed: the handle takes no more
    int lock_fd;            // the parts folder, flock()ed: one writer per trace
    hid_t f16, str;         // HDF5 types: IEEE half, variable-length UTF-8 string
    void *buf;              // scratch, [buf_size] bytes (a document's values)
    size_t buf_size;        // ...
};

// trace.c
void *trace_scratch(aha_trace *t, size_t bytes); // t->buf, grown to bytes

// trace_meta.c
void trace_meta_free(aha_trace_meta *m);
int trace_meta_copy(aha_trace_meta *d, const aha_trace_meta *s);
int trace_meta_check(const aha_trace_meta *m, const char *path);
int trace_meta_diff(const char *path, const aha_trace_meta *f, const aha_trace_meta *m);
int trace_prov_init(aha_trace *t);
void trace_prov_free(trace_prov *p);

// trace_cols.c
int trace_cols_init(aha_trace *t); // the columns every trace has (runs add theirs)
int trace_run_push(aha_trace *t, const char *name, const char *policy, int window);
int trace_col_dims(const aha_trace *t, const trace_col *c, int64_t n, hsize_t *dims);
int trace_col_select(const aha_trace *t, const trace_col *c, hid_t space, int64_t start,
                     int64_t n);
hid_t trace_col_create(const aha_trace *t, hid_t f, const trace_col *c, int64_t n);
int trace_col_describe(const aha_trace *t, hid_t d, const trace_col *c);
hid_t trace_doc_create(hid_t f, int64_t n);
extern const char trace_doc_desc[]; // doc_offsets' description
int trace_entries_read(hid_t f, int64_t off, int64_t n, int64_t *v);
int trace_entries_write(hid_t d, int64_t off, int64_t n, const int64_t *v);

// trace_parts.c
int trace_fsync(const char *path, int is_dir);
int trace_publish(const char *tmp, const char *path);
void trace_part_paths(const aha_trace *t, const char *name, char *path, char *tmp, size_t size);
int trace_part_find(const aha_trace *t, const char *name);
enum { CLEAN_COUNT, CLEAN_ORPHANS, CLEAN_ALL }; // trace_parts_clean's modes
int trace_parts_clean(const aha_trace *t, const char *dir, int mode);
int trace_parts_lock(aha_trace *t);
int trace_parts_insert(aha_trace *t, int at, const trace_part *p);
int trace_parts_check(aha_trace *t);
int trace_drop_push(aha_trace *t, const char *name);
int trace_merge(aha_trace *t);
int trace_commit(aha_trace *t);

// trace_piece.c, trace_block.c, trace_index.c: each writes one new file, tmp.
int trace_write_piece(aha_trace *t, const aha_trace_doc *d, int64_t a, const char *tmp,
                      int64_t *n_back);
int trace_write_block(aha_trace *t, const char *tmp, int64_t b0, int64_t b1, int64_t *taken);
int trace_write_range(aha_trace *t, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                      int64_t *taken);
int trace_write_index(aha_trace *t, const char *tmp, int final);

// trace_index_read.c
// Resume: the root attributes as a meta (strings and arrays malloc'ed), then
// counters, provenance, runs and the parts (from the index's mappings).
int trace_read_meta(aha_trace *t, aha_trace_meta *m, int64_t *complete);
int trace_read_index(aha_trace *t);

// trace_h5.c
void trace_h5_drop(hid_t id);
int trace_h5_fail(const char *path, const char *what);
int trace_types_init(aha_trace *t);
size_t trace_ty_size(int ty);
hid_t trace_ty_file(const aha_trace *t, int ty);
hid_t trace_ty_mem(const aha_trace *t, int ty);
hid_t trace_file_open(const char *path);
hid_t trace_file_create(const char *path);
int trace_file_close(hid_t f, const char *path);
hid_t trace_part_open(const aha_trace *t, const trace_part *p);
int trace_attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int n, const void *v);
int trace_attr_str(const aha_trace *t, hid_t loc, const char *name, const char *s);
int trace_attr_i64(hid_t loc, const char *name, int64_t v);
int trace_attr_f64(hid_t loc, const char *name, double v);
