// Internals shared by trace.c (the API: documents, parts, durability) and
// trace_io.c (HDF5: columns, part files, the index, the final file).
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
int trace_run_push(aha_trace *t, const char *name, const char *policy, int window);

// trace_io.c
int trace_types_init(aha_trace *t);
void *trace_scratch(aha_trace *t, size_t bytes);
int trace_h5_fail(const char *path, const char *what);
int trace_fsync(const char *path, int is_dir);
uint16_t trace_f16(float f);
int trace_write_piece(aha_trace *t, const aha_trace_doc *d, int64_t a, const char *tmp,
                      int64_t *n_back);
int trace_write_block(aha_trace *t, const char *tmp, int64_t b0, int64_t b1, int64_t *taken);
int trace_write_index(aha_trace *t, const char *tmp, int final);
// Resume: the root attributes as a meta (strings and arrays malloc'ed), then
// counters, provenance, runs and the parts (from the index's mappings).
int trace_read_meta(aha_trace *t, aha_trace_meta *m, int64_t *complete);
int trace_read_index(aha_trace *t);
