// Inside the store (store.h): the handle, its columns and its part files,
// shared by the store's files only. Its files, each calling only those
// below it:
//   store_col.c     one column: its shape, its dataset in a file, per-record values
//   store_parts.c   the parts folder and the part list: names, publishing, cleaning
//   store_piece.c   writing a piece (one append)
//   store_block.c   writing a block, or the final file's columns; compaction
//   store_index.c   the index (or the final file) and the commit
//   store_remap.c   the part list read back from an index (resume)
//   store.c         the handle: create, resume, append, close (store.h)
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "store_types.h"
#include "trace_h5.h"

#define STORE_BLOCK_CHUNKS 8 // chunks in a level-0 block
#define STORE_FANOUT 8       // blocks of one level merged into one of the next
#define STORE_REC_CHUNK 4096 // chunk of a per-record column (values)

typedef struct {              // a column as the store keeps it
    trace_store_col c;        // its descriptor: path, desc and attr the store's copies; fill NULL
    size_t size;              // bytes of one value in the file (along T: in memory too)
    int str;                  // a per-record column of fixed-length strings (char * in memory)
    int has_fill;             // ... fill[] holds its fill value
    unsigned char fill[8];    // ...
} store_col;

// A part file holds elements [t0, t0 + n_tok) along T and values
// [d0, d0 + n_doc) of the per-record columns; the index maps the range
// [v0, v1) and value range [dv0, dv1) from it. Mapped ranges of the parts, in
// order, tile [0, T) and [1, n_rec + 1) (the ends' value 0 is the fill value
// 0). Ranges along T start on chunk boundaries and, but for the last part,
// end on one.
typedef struct {
    char name[48];     // file name in the parts folder: "p<id>-<t0>-<t1>.h5" (a
                       // piece: one append) or "b<id>-<t0>-<t1>.h5" (a block)
    int level;         // -1: piece; k: block of STORE_BLOCK_CHUNKS * FANOUT^k chunks
    int64_t t0, n_tok; // elements along T in the file
    int64_t d0, n_doc; // per-record values in the file
    int64_t v0, v1;    // range along T mapped from it
    int64_t dv0, dv1;  // value range mapped from it
} store_part;

typedef struct trace_store trace_store; // as store.h names it

struct trace_store {
    char *path;            // the index, later the final file
    char *dir;             // its folder
    char *parts_dir;       // the parts folder (path + ".parts")
    char *parts_rel;       // its name relative to dir, as the index names it
    char what[32];         // what the store is, for messages
    int (*header)(void *ctx, hid_t f, const trace_store_state *st); // the caller's (trace_store_def)
    void *ctx;             // ...
    int64_t tc;            // chunk length along T
    store_col *cols;       // [n_cols] columns along T
    int n_cols;            // ...
    size_t cap_cols;       // ... allocated
    store_col *recs;       // [n_recs] per-record columns; recs[0]: the ends
    int n_recs;            // ...
    size_t cap_recs;       // ... allocated
    store_part *parts;     // [n_parts] in order along T
    int n_parts;           // ...
    size_t cap_parts;      // ... allocated
    int64_t n_rec, n_tok;  // committed records and elements along T
    int64_t id;            // the store's id, in its part files' names
    char (*drop)[48];      // [n_drop] part files to delete once the index stops naming them
    int n_drop;            // ...
    size_t cap_drop;       // ... allocated
    int failed;            // an append failed: the handle takes no more
    int lock_fd;           // the store's lock (common/publish.h): one writer per store
    void *buf;             // scratch, [buf_size] bytes (a piece's values)
    size_t buf_size;       // ...
};

// store_col.c: a column. Per-record values are trace_store_val in memory
// (strings malloc'd when read: store_recs_free); in the file a string
// column's are fixed-length strings of its width (a longer one is refused,
// never cut).
int store_col_own(store_col *c, const trace_store_col *d, int rec, const char *who);
void store_col_drop(store_col *c);
int store_col_dims(const store_col *c, int64_t n, hsize_t *dims); // [n] or [rows, n, width]; its rank
int store_col_select(const store_col *c, hid_t space, int64_t start, int64_t n);
size_t store_col_bytes(const store_col *c, int64_t n); // of n elements along T, in memory
hid_t store_col_create(hid_t f, const store_col *c, int64_t n, int64_t chunk);
int store_col_describe(hid_t d, const store_col *c);
int store_recs_read(hid_t f, const store_col *c, int64_t off, int64_t n, trace_store_val *v, const char *who);
int store_recs_write(hid_t d, const store_col *c, int64_t off, int64_t n, const trace_store_val *v,
                     const char *who);
void store_recs_free(const store_col *c, int64_t n, trace_store_val *v);

// store_parts.c
void *store_scratch(trace_store *s, size_t bytes); // s->buf, grown to bytes
int store_publish(const char *tmp, const char *path);
void store_part_paths(const trace_store *s, const char *name, char *path, char *tmp, size_t size);
void store_part_name(const trace_store *s, char name[48], char kind, int64_t t0, int64_t t1);
hid_t store_part_open(const trace_store *s, const store_part *p);
int store_part_find(const trace_store *s, const char *name);
enum { CLEAN_COUNT, CLEAN_ORPHANS, CLEAN_ALL }; // store_parts_clean's modes
int store_parts_clean(const trace_store *s, const char *dir, int mode);
int store_parts_insert(trace_store *s, int at, const store_part *p);
int store_block_level(const trace_store *s, int64_t n_tok);
int store_parts_check(trace_store *s);
int store_drop_push(trace_store *s, const char *name);

// store_piece.c, store_block.c, store_index.c: each writes one new file, tmp.
int store_write_piece(trace_store *s, const trace_store_rec *r, int64_t a, const char *tmp, int64_t *n_back);
int store_write_range(trace_store *s, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                      int64_t *taken);
int store_compact(trace_store *s); // merge full chunks and blocks into larger blocks
int store_write_index(trace_store *s, const char *tmp, int final);
int store_commit(trace_store *s);  // publish a new index over the parts

// store_remap.c: the part list of the index at s->path, from the mappings of
// its first column and the ends.
int store_remap(trace_store *s);
