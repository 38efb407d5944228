// One column of a store (store.h), as the store keeps it: its copy of the
// descriptor, its shape, its dataset in a file, and the values of a
// per-record column read and written. Per-record values are trace_store_val
// in memory (strings malloc'd when read: store_recs_free); in the file a
// string column's are fixed-length strings of its width (a longer one is
// refused, never cut).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "store_types.h"
#include "trace_h5.h"

#define STORE_REC_CHUNK 4096 // chunk of a per-record column (values)

typedef struct {              // a column as the store keeps it
    trace_store_col c;        // its descriptor: path, desc and attr the store's copies; fill NULL
    size_t size;              // bytes of one value in the file (along T: in memory too)
    int str;                  // a per-record column of fixed-length strings (char * in memory)
    int has_fill;             // ... fill[] holds its fill value
    unsigned char fill[8];    // ...
} store_col;

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
