// The trace writer: one HDF5 file per `aha record` / `aha sweep` run, in the
// schema of docs/trace-format.md. Documents are appended whole; an append is
// durable when it returns, and a process killed at any moment (SIGKILL, full
// disk, power loss) leaves a file that any HDF5 reader opens and that holds
// every appended document.
//
// How ("Crash safety" in docs/trace-format.md): no file a reader can see is
// ever modified. While a trace is written, PATH is a small index whose
// datasets are virtual datasets over part files in PATH.parts/; every file is
// written under a temporary name and renamed into place once complete.
// aha_trace_close merges the parts into one plain HDF5 file at PATH. That is
// the trace's store (store/store.h), which knows nothing of what a trace
// holds; the schema's rows (trace_schema.h) say that: which datasets a trace
// has and where a document (aha_trace_doc) holds each one's values.
//
// Functions return 0 or -1 with a message naming the file (err.h).
#pragma once
#include <stdint.h>

#include "trace_schema.h"

typedef struct aha_trace aha_trace;

// Start a new trace at path. Refuses an existing path unless force, which
// removes it and its parts; refuses a trace another process is writing.
// Debris of a create killed early (path.parts/ without an index) is removed.
// Turns HDF5's error printing and exit handler off (errors come back here).
int aha_trace_create(aha_trace **t, const char *path, const aha_trace_meta *m, int force);
// Declare a run before the first append, e.g. ("full", "global", 0) or
// ("w128", "oracle", 128); its datasets live under runs/<name>/. A run stores
// a gate array unless its policy is "global". After aha_trace_resume, declare
// the same runs in the same order.
int aha_trace_add_run(aha_trace *t, const char *name, const char *policy, int window);
// The same with the policy's number (a sweep grid's eps, threshold, tau, P or
// k; NaN: none), the run attribute `param`.
int aha_trace_add_run_param(aha_trace *t, const char *name, const char *policy, int window, double param);
// Append one whole document and make it durable. After a failure the trace
// on disk still holds every earlier document; further appends are refused.
int aha_trace_append(aha_trace *t, const aha_trace_doc *d);
// Reopen an unfinished trace (killed, or released with aha_trace_free) to
// append more: 0. m must describe the same recording (every root attribute
// marked A_RESUME: model, shapes, router, tau, eps, windows, ..., the inputs'
// fingerprints); the error names the first that differs. *docs_done /
// *tokens_done: what the trace holds. A complete trace is compared the same
// way: 1, with a handle that takes only the runs declared again (compared)
// and aha_trace_free. One another process is writing is refused.
int aha_trace_resume(aha_trace **t, const char *path, const aha_trace_meta *m, int64_t *docs_done,
                     int64_t *tokens_done);
// After a resume, once the runs are declared again: 0 when every run of the
// trace was, else -1 naming the first missing.
int aha_trace_runs_check(const aha_trace *t);
// What the dataset's documents were read as (meta.read_as), once a run knows
// them all; written with the index. 0 or -1 (out of memory).
int aha_trace_set_read_as(aha_trace *t, const char *read_as);
// Mark the trace complete: merge it into one plain HDF5 file at path and
// remove path.parts/. Frees t either way; on failure the trace stays
// resumable.
int aha_trace_close(aha_trace *t);
// Release t without completing the trace (e.g. the run stops on an error);
// the trace stays resumable. NULL is fine.
void aha_trace_free(aha_trace *t);
// Release t and remove what it wrote (its index and parts): a merge that
// failed leaves no partial trace behind. NULL is fine.
void aha_trace_discard(aha_trace *t);
// Merge the traces in[0..n) (shards of one run: they must match as
// aha_tr_check_same and aha_tr_check_shards say) into a new trace at out,
// document by document in the dataset's order (doc_index; a document in two
// of them is an error naming both), through this writer: an ordinary trace,
// as crash-safe to write as a recording, whose shard attribute says which
// shards it holds ("" all) -- with every shard, the single-process trace.
// command_line is recorded as its command; force as in create; *missing: the
// run's shards none of in holds; *unordered: how many of in have no doc_index
// (written before it): then the documents stay in the order of in.
int aha_trace_merge(const char *out, const char *const *in, int n, const char *command_line, int force,
                    int *missing, int *unordered);
// What writing a trace of final_bytes takes on its file system at its peak,
// in bytes, for a trace of meta m with runs[0..n_runs): the parts (about the
// trace once over) and the final file written beside them on closing, and
// up to STORE_BLOCK_CHUNKS + 1 unfinished chunks kept uncompressed, each in
// the piece that wrote it, until their chunks are merged into a block (see
// "Disk space" in docs/trace-format.md). -1 with a message (out of memory).
int64_t aha_trace_peak_bytes(const aha_trace_meta *m, const aha_trace_run *runs, int n_runs, int64_t final_bytes);
// The one line (stderr) that says a merge into out kept the order of its n
// inputs, unordered of which have no doc_index.
void aha_trace_merge_unordered(const char *out, int unordered, int n);
