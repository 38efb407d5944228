// A store: one HDF5 file at PATH whose datasets (its columns) grow one
// record at a time, crash-safe. It knows nothing of what its columns mean:
// the caller declares them (store_types.h) and writes the header, everything
// else the file holds. An append is durable when it returns, and a process
// killed at any moment (SIGKILL, a full disk, power loss) leaves a file that
// any HDF5 reader opens and that holds every appended record.
//
// How ("Crash safety" in docs/trace-format.md): no file a reader can see is
// ever modified. While a store is written, PATH is a small index whose
// datasets are virtual datasets over part files in PATH.parts/: each append
// writes a piece (its record and the unfinished chunk before it), pieces are
// merged into blocks as the store grows, and each append ends by atomically
// replacing the index. trace_store_close writes everything into one plain
// HDF5 file at PATH.
//
// Functions return 0 or -1 with a message naming the file (err.h).
#pragma once
#include "store_types.h"

typedef struct trace_store trace_store;

// A handle for the store at path, made as def says, holding its lock (one
// writer per store; another process's is refused, naming it), before any
// file is touched. It turns HDF5's exit hook off (which, after a failed
// write, crashes retrying) and its error printing (errors come back here):
// the first HDF5 call of a process that writes a store. Then its columns are added, in the order every file
// holds them, and the store is created or resumed.
int trace_store_new(trace_store **s, const char *path, const trace_store_def *def);
// A column along T (trace_store_add) or a per-record one (trace_store_add_rec),
// copied; before this handle's first append (after a resume: the store's
// columns again, in their order).
int trace_store_add(trace_store *s, const trace_store_col *c);
int trace_store_add_rec(trace_store *s, const trace_store_col *c);
// A new store at the handle's path, empty: its index. An existing file is
// refused unless force, which removes it and its parts. Debris of a create
// killed early (PATH.parts/ without an index) is removed; parts of another
// store are refused without force.
int trace_store_create(trace_store *s, int force);
// An unfinished store (its index's state st, as its header says) opened to
// append more: its parts read back from the index and checked; files a
// killed append left are removed.
int trace_store_resume(trace_store *s, const trace_store_state *st);
// Append one record and make it durable (a new index). After a failure the
// store on disk still holds every earlier record; further appends are
// refused.
int trace_store_append(trace_store *s, const trace_store_rec *r);
// A new index over the same parts: the header changed (the caller's), or a
// column was added.
int trace_store_commit(trace_store *s);
// Write everything into one plain HDF5 file at the path and remove
// PATH.parts/. Frees s either way; on failure the store stays resumable.
int trace_store_close(trace_store *s);
// Release s without completing the store; it stays resumable. NULL is fine.
void trace_store_free(trace_store *s);
// Release s and remove what it wrote (its index and parts). NULL is fine.
void trace_store_discard(trace_store *s);
// Its state now (complete: 0).
trace_store_state trace_store_get(const trace_store *s);

// What writing a store of these columns (along T, chunk elements per chunk)
// that ends as a file of final_bytes takes on its file system at its peak:
// the parts (about the file once over) and the final file written beside
// them on closing, and up to STORE_BLOCK_CHUNKS + 1 unfinished chunks kept
// uncompressed, each in the piece that wrote it, until their chunks are
// merged into a block (see "Disk space" in docs/trace-format.md).
int64_t trace_store_peak_bytes(const trace_store_col *cols, int n_cols, int64_t chunk, int64_t final_bytes);
