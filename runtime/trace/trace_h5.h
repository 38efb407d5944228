// HDF5 plumbing shared by the trace writer and reader: closing ids, error
// messages, the element types, files, and attributes read and written by the
// schema's tables (trace_schema.h). Functions return 0 (or an id) or -1 with
// a message naming the file (err.h).
#pragma once
#include <hdf5.h>

#include "trace_schema.h"

// Close any HDF5 object; the type's own close, which releases the id even
// when closing fails (a flush on a full disk). -1 is fine.
void trace_h5_drop(hid_t id);
// "path: what failed: <HDF5's innermost cause>"; returns -1.
int trace_h5_fail(const char *path, const char *what);
// Element type ty in the file and in memory (float16: the bits; strings: a
// variable-length UTF-8 string, str).
hid_t trace_ty_file(trace_type ty, hid_t f16, hid_t str);
hid_t trace_ty_mem(trace_type ty, hid_t f16, hid_t str);
// New types: IEEE half; variable-length UTF-8 string.
hid_t trace_h5_f16(void);
hid_t trace_h5_str(void);

// Open read-only; lock: take HDF5's file lock where the file system has one.
hid_t trace_file_open(const char *path, int lock);
// A new file (truncating); groups list their members in creation order.
hid_t trace_file_create(const char *path);
int trace_file_close(hid_t f, const char *path);
// A new group, listing its members in creation order.
hid_t trace_group_create(hid_t loc, const char *path);

// Group g's description (its template filled from v) and attributes, the
// values taken from obj[] (by trace_obj); strings of type str.
int trace_attrs_write(hid_t loc, const trace_group *g, const trace_vars *v, const void *const obj[OBJ_COUNT],
                      hid_t str);
// Group g's attributes at loc into obj[] (strings and lists malloc'd; a field
// that holds one is freed first, so start from zeroed structs). strict: all
// but the A_OPTIONAL ones must be there; else only the A_REQUIRED ones, the
// rest taking their defaults. where names the group in messages ("root").
int trace_attrs_read(hid_t loc, const char *path, const char *where, const trace_group *g,
                     void *const obj[OBJ_COUNT], int strict);
// A string attribute (scalar) and a scalar number, written; the
// "description" every group and dataset has.
int trace_attr_str(hid_t loc, const char *name, const char *s, hid_t str);
int trace_attr_describe(hid_t loc, const char *text, hid_t str);
int trace_attr_f64(hid_t loc, const char *name, double v);
