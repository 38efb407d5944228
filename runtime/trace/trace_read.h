// Reading aha traces (docs/trace-format.md) without the model: root
// attributes, runs, and datasets in token blocks so that memory stays
// bounded whatever the trace's size. A trace still being written (or left by
// a killed run) is an index of virtual datasets over PATH.parts/; HDF5
// resolves those itself, so both kinds read the same. Names, types and
// shapes come from the schema (trace_schema.h).
//
// Nothing is sized from a value before it is checked: opening checks the
// structure (shapes, types) and doc_offsets; every value read is checked
// against what the schema says it can be (see aha_tr_read), and every chunk
// against its checksum. A damaged or foreign file is one error line.
//
// Functions return 0 or -1 with a one-line message naming the file (err.h).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "trace_tr.h"


// Open and validate: a missing or non-HDF5 file, a foreign HDF5 file, a newer
// format_version, a structure other than the schema's, doc_offsets that are
// not documents of 1..ctx tokens ending at T, and an unfinished trace without
// documents are errors. A complete trace without documents (a shard that had
// none) opens: it holds nothing.
int aha_tr_open(aha_tr *tr, const char *path);
// How to open (aha_tr_open_flags): AHA_TR_EMPTY: an unfinished trace without
// documents opens too; AHA_TR_LOOK: for looking at, not for reading values
// (doc_offsets is neither read nor checked: an index without its parts opens).
enum { AHA_TR_EMPTY = 1, AHA_TR_LOOK = 2 };
int aha_tr_open_flags(aha_tr *tr, const char *path, unsigned flags);
// An unfinished trace without documents (a run killed before its first one
// was durable) opens too: for looking at (AHA_TR_EMPTY | AHA_TR_LOOK).
int aha_tr_open_empty(aha_tr *tr, const char *path);
// Open a trace's image in memory (HDF5's core driver; no file is read or
// written); name stands for the path in messages.
int aha_tr_open_image(aha_tr *tr, const char *name, const void *data, size_t size, unsigned flags);
// Close the file and free what tr owns. Safe twice, and after a failed open.
void aha_tr_close(aha_tr *tr);
// A copy of tr's attributes and runs that outlives it (no file: read nothing
// through it); free with aha_tr_close. 0 or -1 (out of memory).
int aha_tr_dup(aha_tr *d, const aha_tr *s);
// The name of dataset id's instance i (the eps, window or run index; 0 for
// the others) into buf.
const char *aha_tr_name(const aha_tr *tr, trace_dset_id id, int i, char *buf, int size);
// Read elements [t0, t0+n) along the token axis (doc_offsets, doc_index:
// entries) of dataset id's instance i into buf, laid out [L, n, H] or [n], as
// its schema type in memory -- int32, int64, uint8, uint32, float32 (float16
// too, converted) or, for strings, malloc'd char * (free with
// aha_tr_free_text). Every chunk's checksum is verified, and the values are
// what the schema says they can be, or an error names the dataset and the
// token: token ids 0..vocab-1; position = the token's place in its document;
// d_eps 1..position+1, and at most the window of a natively local layer;
// gates 0 or 1; doc_index -1 or more, ascending when all are known; strings
// NUL-padded. A fill value where an unfinished trace's part file is missing
// says so. (position and d_eps need doc_offsets: not checked after
// AHA_TR_LOOK.)
int aha_tr_read(const aha_tr *tr, trace_dset_id id, int i, int64_t t0, int64_t n, void *buf);
void aha_tr_free_text(int64_t n, char **text);
// Elements along the axis of dataset row id's instances: T, n_docs or n_docs + 1.
int64_t aha_tr_len(const aha_tr *tr, trace_dset_id id);
// Each document's number in the dataset (doc_index) into v[0..n_docs): the
// file's; in a trace without it (written before it), 0..n_docs-1 for a whole
// run and -1 (not known) for a shard. 1: every number is known, 0: not (some
// -1), -1: an error.
int aha_tr_doc_index(const aha_tr *tr, int64_t *v);

typedef struct {   // one document of several traces, in the dataset's order
    int64_t index; // its doc_index (-1: not known)
    int k;         // its trace
    int64_t d;     // its document there
} aha_tr_doc;
// Every document of trs[0..n) in the dataset's order (malloc'd, *n_all): by
// doc_index when every trace has it (a document longer than ctx is several
// with one number, in their order), else trace by trace (*unordered: how many
// traces lack it). A document number in two traces is an error naming both.
aha_tr_doc *aha_tr_doc_order(const aha_tr *trs, int n, int64_t *n_all, int *unordered);
// ---- what a trace holds, for looking at it (aha info) ----

typedef struct {          // every attribute the schema's tables name, as the file says it
    aha_trace_meta m;     // the root's settings, as written (the reader's tr->m is normalised)
    aha_trace_prov root;  // the root's build and command attributes (tool_version, created, ...)
    aha_trace_prov prov;  // the provenance group's
    aha_trace_state state; // the root's state: complete, n_docs, n_tokens, trace_id, ...
} aha_tr_attrs;

// Read them (leniently: an absent optional attribute takes its default);
// free with aha_tr_attrs_free. obj[] then maps each trace_obj to its struct
// for the rows of group g (TG_ROOT or TG_PROVENANCE).
int aha_tr_attrs_read(const aha_tr *tr, aha_tr_attrs *a);
void aha_tr_attrs_free(aha_tr_attrs *a);
void aha_tr_attrs_obj(aha_tr_attrs *a, int g, void *obj[OBJ_COUNT]);

// How many instances dataset row id can have in tr (eps, windows, runs; 1
// for the others), and whether instance i is one of this trace's.
int aha_tr_n_instances(const aha_tr *tr, trace_dset_id id);
int aha_tr_has(const aha_tr *tr, trace_dset_id id, int i);

typedef struct {          // one dataset as the file stores it
    int rank;             // 0: the file lacks it
    int64_t dims[3];      // [rank]
    char dtype[16];       // its type in the file: "int32", "uint8", "float16", "str", "vlen str", ...
    const char *layout;   // "chunked", "virtual" (an unfinished trace's index), "contiguous", "compact"
    int64_t bytes;        // bytes stored in this file (0 for a virtual dataset)
    int64_t chunks;       // chunks stored (chunked layout; else 0)
    int64_t chunks_want;  // ... and how many its extent needs
    int checksum;         // 1: its pipeline ends in Fletcher-32: every chunk carries a checksum
} aha_tr_dset;
int aha_tr_dset_info(const aha_tr *tr, const char *name, aha_tr_dset *d);
// How tr stores its datasets: each chunked one every chunk; in format 2 each
// checksummed (Fletcher-32), and no string, dataset or attribute,
// variable-length (in HDF5's global heap, which has no checksum). *chunks:
// the chunks stored. 0, or -1 with a message naming the dataset or attribute.
int aha_tr_check_storage(const aha_tr *tr, int64_t *chunks);
// A trace with coordinates (the dataset token; traces before them have none):
// each holds its axis's values (0..n-1, or the eps and windows), in
// checksummed chunks, a dimension scale. The axes' attachments (in HDF5's
// global heap) are not read. *chunks gets the coordinates' chunks added. 0
// (also without coordinates), or -1 with a message.
int aha_tr_check_scales(const aha_tr *tr, int64_t *chunks);

// The part files an unfinished trace's index maps (0 for a complete one),
// and how many of them are not on disk beside it. 0 or -1.
int aha_tr_parts(const aha_tr *tr, int *n_parts, int *n_missing);
// A shard attribute ("", "I/N", "I,J,.../N") as its count N (0: a whole
// run) and have[0..N) (malloc'd; NULL for a whole run). 0, or -1 when it is
// not one.
int aha_tr_shard_parse(const char *shard, int *n, unsigned char **have);

// The dataset's fingerprint against the documents' of traces trs[0..n)
// (shards of one run, as aha_tr_check_shards takes them): dataset_sha256 is
// a SHA-256 (or "": none); the contexts of one document carry one doc_sha256;
// and where the traces hold every document dataset_sha256 covers (complete,
// all shards, no --max-tokens, dataset_docs known) it is the SHA-256 of their
// digests in order (*checked = 1). 0, or -1 with a message naming the trace.
int aha_tr_dataset_check(const aha_tr *trs, int n, int *checked);

// 0 when b can be combined with a (same schema version, the root attributes
// marked A_COMBINE, the same runs); else -1 with a message naming the first
// field that differs.
int aha_tr_check_same(const aha_tr *a, const aha_tr *b);
// Traces trs[0..n) (each aha_tr_check_same as trs[0]) as parts of one run:
// one trace is one; several must each hold shards of one count N ("I/N", or
// "I,J,.../N" for a merge of some) and no shard twice -- a whole run ("")
// combines with nothing. *shards: their union as a shard attribute ("" when
// all N are there; malloc'd); *missing: the run's shards none holds. 0, or
// -1 with a message naming the traces.
int aha_tr_check_shards(const aha_tr *trs, int n, char **shards, int *missing);
