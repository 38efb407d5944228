// What a store's caller and the store's files share (store.h): a column's
// descriptor, one record, the state a store's header records, and how a
// store is made. The store knows its columns only as these say them.
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

// One dataset of a store, as every file of it holds it. Two kinds: a column
// along T, the axis records are appended on (each record adds its n
// elements), and a per-record column (each record adds one value).
typedef struct {
    const char *path;   // its name in every file ("dependency/eps_0.01"; groups made as needed)
    int rank;           // along T: 1, [T], or 3, [rows, T, width]; per record: 1
    int rows, width;    // rank 3: its first and last extents (1 otherwise)
    hid_t ftype, mtype; // its HDF5 type in the file and in memory: one size, but for a per-record
                        // column's, 8 bytes in memory (int64, or char * for fixed-length strings);
                        // the caller's, valid while the store is
    const void *fill;   // [one value in mtype] what an index reads where a part file is missing; NULL: none
    const char *desc;   // its description attribute (in the index and the final file)
    const char *attr;   // a number attribute beside the description ("eps"), or NULL
    double attr_value;  // ... its value
    const char *dims[3]; // per axis (rank of them): the path of the dataset the final file attaches to it
                         // as its HDF5 dimension scale (made a scale named by its last component if it is
                         // not one: the caller's header writes it, or it is an axis below; its own path:
                         // the column is made a scale itself, a coordinate); NULL: none
} trace_store_col;

typedef union {       // one value of a per-record column: 8 bytes
    int64_t i;        // of an integer column
    const char *s;    // of a string column: NUL-terminated, at most its width
} trace_store_val;

typedef struct {                // one record
    int64_t n;                  // its elements along T (>= 1)
    const void *const *values;  // [n_cols] each column's values along T, laid out [rows, n, width] in
                                // its memory type, in the order the columns were added
    const trace_store_val *recs;  // [n_recs] its value of each per-record column, likewise
} trace_store_rec;

typedef struct {    // a store's state, as its header records it
    int complete;   // 1: the final file; 0: an index over part files
    int64_t n_rec;  // records it holds
    int64_t n;      // their elements along T
    int64_t chunk;  // elements per chunk along T
    int64_t id;     // random at creation, kept when resumed: in its part files' names
} trace_store_state;

typedef struct {
    const char *what;          // what the store is, for messages ("trace": "... is writing this trace")
    int64_t chunk;             // elements per chunk along T (a new store's; a resumed one keeps its own)
    const char *ends;          // the per-record column of where each record ends along T, n_rec + 1
    const char *ends_desc;     // int64 values, 0 first (the store's): its path and description
    const char *ends_dim;      // ... its axis's dimension scale in the final file (its own path: the ends
                               // are one, a coordinate of their own); NULL: none
    const char *axis_t, *axis_t_desc;     // the final file's index of T (int64 0..n-1, a dimension scale):
    const char *axis_rec, *axis_rec_desc; // its path and description; of the records likewise; NULL: none
    // Everything of a new index or final file f but the columns (attributes,
    // groups), by the caller, st the state it records: 0, or -1 (the store
    // says which file, with HDF5's cause).
    int (*header)(void *ctx, hid_t f, const trace_store_state *st);
    void *ctx;                 // the header's
} trace_store_def;
