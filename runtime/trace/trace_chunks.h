// Parallel decompression of a trace's [L, T, H] chunks. Reading is ~2/3
// inflate; HDF5 (a serial build) inflates one chunk at a time, so this reads
// the raw chunks with H5Dread_chunk and undoes deflate and shuffle on every
// core. Only for what the trace writer makes: chunks spanning all of L and H,
// filters shuffle and/or deflate, native little-endian values.
#pragma once
#include <stdint.h>

// Read tokens [t0, t0+n) of the open dataset dset (a hid_t) as [L, n, H]
// values of es bytes (1: uint8, 4: uint32) into buf. 0: done; 1: not done,
// read it with H5Dread (a virtual dataset, other chunking or filters, t0 not
// at a chunk start, a chunk this cannot undo, out of memory).
int aha_chunks_read(int64_t dset, int L, int H, int64_t t0, int64_t n, int es, void *buf);
