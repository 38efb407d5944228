// The schema's HDF5 side: its element types as HDF5 types, and the
// attributes of its tables (trace_schema.h) written and read. Functions
// return 0 or -1 with a message naming the file (err.h).
#pragma once
#include <hdf5.h>

#include "trace_schema.h"

// Numeric element type ty in the file and in memory (float16: the bits, f16).
// Strings have their own type per width (trace_h5_str).
hid_t trace_ty_file(trace_type ty, hid_t f16);
hid_t trace_ty_mem(trace_type ty, hid_t f16);

// Group g's description (its template filled from v) and attributes, the
// values taken from obj[] (by trace_obj).
int trace_attrs_write(hid_t loc, const trace_group *g, const trace_vars *v, const void *const obj[OBJ_COUNT]);
// Group g's attributes at loc into obj[] (strings and lists malloc'd; a field
// that holds one is freed first, so start from zeroed structs). strict: all
// but the A_OPTIONAL ones must be there; else only the A_REQUIRED ones, the
// rest taking their defaults. where names the group in messages ("root").
int trace_attrs_read(hid_t loc, const char *path, const char *where, const trace_group *g,
                     void *const obj[OBJ_COUNT], int strict);
