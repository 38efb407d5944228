// HDF5 plumbing shared by the trace store and the reader: closing ids, error
// messages, element types, files, groups and plain attributes. Functions
// return 0 (or an id) or -1 with a message naming the file (err.h).
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

// Links and attributes a group keeps in its object header (HDF5's default
// moves more than 8 to dense storage).
#define TRACE_COMPACT_MAX 65535

// Close any HDF5 object; the type's own close, which releases the id even
// when closing fails (a flush on a full disk). -1 is fine.
void trace_h5_drop(hid_t id);
// "path: what failed: <HDF5's innermost cause>" (metadata that fails its
// checksum: "path: the file is damaged: ..."); returns -1.
int trace_h5_fail(const char *path, const char *what);
// HDF5's innermost cause of the last failure ("" when none), for messages;
// clears HDF5's error stack.
void trace_h5_cause(char cause[256]);
// Damage found where a reader takes something for absent or malformed: keep
// the cause of the HDF5 call that just failed (the first kept wins), and at
// the message, trace_h5_damaged says "path: the file is damaged: its metadata
// fails its checksum (what)" (or HDF5's cause) and returns 1 when a cause was
// kept, else 0; trace_h5_forget drops a kept cause.
void trace_h5_keep(void);
int trace_h5_damaged(const char *path, const char *what);
void trace_h5_forget(void);
// New types: IEEE half; a fixed-length UTF-8 string of width bytes, padded
// with NULs (no terminator: a string may fill it). No string of a trace is
// variable-length: those live in HDF5's global heap, which has no checksum.
hid_t trace_h5_f16(void);
hid_t trace_h5_str(size_t width);
// 1 when s[0..n) is a string padded with NULs: none before the padding.
int trace_str_padded(const char *s, size_t n);

// A virtual dataset's source file name as HDF5 takes it, where '%' starts a
// substitution: every '%' doubled (0, or -1 when it does not fit out[size]);
// and back, in place (a name H5Pget_virtual_filename gives).
int trace_vds_escape(const char *name, char *out, size_t size);
void trace_vds_unescape(char *name);

// Open read-only; lock: take HDF5's file lock where the file system has one.
// -1 leaves HDF5's error stack for trace_h5_fail / trace_h5_cause.
hid_t trace_file_open(const char *path, int lock);
// The same for a file's image in memory (HDF5's core driver; name is what
// HDF5 resolves relative paths against). No file is read or written.
hid_t trace_file_open_image(const char *name, const void *data, size_t size);
// A new file (truncating), in the format of HDF5 1.10 (every metadata block
// checksummed); its root group, and groups made by trace_group_create, list
// their members in creation order and keep links and attributes in their
// (checksummed) object header.
hid_t trace_file_create(const char *path);
int trace_file_close(hid_t f, const char *path);
hid_t trace_group_create(hid_t loc, const char *path);
// The groups that the object at path lies in ("runs/full/nll": runs,
// runs/full), by trace_group_create, where they do not exist yet.
int trace_group_parents(hid_t f, const char *path);

// A new 1-D dataset at path (groups made as needed) of n values of ftype
// from v as mtype, chunked through the codec's pipeline (every chunk
// checksummed), with its description: open, or -1.
hid_t trace_h5_dset_1d(hid_t f, const char *path, hid_t ftype, hid_t mtype, int64_t n, const void *v,
                       const char *desc);

// An attribute of n values of ftype (n < 0: a scalar) from v as mtype; a
// string attribute (scalar, fixed-length at its exact size) and a scalar
// number; the "description" every group and dataset has.
int trace_attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int n, const void *v);
int trace_attr_str(hid_t loc, const char *name, const char *s);
int trace_attr_describe(hid_t loc, const char *text);
int trace_attr_f64(hid_t loc, const char *name, double v);
