// Inside the store (store.h): the handle's state, its part files and the
// parts folder, shared by the store's files only (no file outside the store
// sees struct trace_store). The store's files, each calling only those below
// it, each with its header:
//   store_col.c     one column: its shape, its dataset in a file, per-record values
//   store_parts.c   the handle's state; the parts folder and the part list: names,
//                   publishing, cleaning
//   store_piece.c   writing a piece (one append)
//   store_block.c   writing a block, or the final file's columns; compaction
//   store_scale.c   the final file's dimension scales: the axes' index datasets, attached
//   store_index.c   the index (or the final file) and the commit
//   store_remap.c   the part list read back from an index (resume)
//   store.c         the handle: create, resume, append, close (store.h)
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "store_col.h"

#define STORE_BLOCK_CHUNKS 8 // chunks in a level-0 block
#define STORE_FANOUT 8       // blocks of one level merged into one of the next

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
    char *axis[2];         // the final file's index datasets of T and of the records (NULL: none)
    char *axis_desc[2];    // ... their descriptions
    void *buf;             // scratch, [buf_size] bytes (a piece's values)
    size_t buf_size;       // ...
};

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
