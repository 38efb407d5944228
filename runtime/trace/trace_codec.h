// The one codec of the trace's chunks: HDF5's shuffle then deflate filters,
// declared on the datasets, applied by the writer itself (so chunks compress
// on every core, then go to HDF5 as they are: H5Dwrite_chunk), and undone by
// the reader the same way, in parallel (HDF5, a serial build, inflates one
// chunk at a time, and reading is mostly inflate).
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_DEFLATE_LEVEL 4
#define TRACE_CODEC_RAW 0x3u // filter mask of a chunk stored unfiltered (both filters skipped)

// The filter pipeline of a new chunked dataset: shuffle (unless shuffle = 0:
// strings) and deflate.
int trace_codec_pipeline(hid_t dcpl, int shuffle);

typedef struct { // one chunk as stored
    void *data;     // [size] malloc'd
    size_t size;
    uint32_t mask;  // filters skipped (HDF5's per-chunk filter mask)
} trace_zchunk;

// One chunk of raw values (bytes long, values of es bytes) through the
// pipeline into z (z->data malloc'd). 0, or -1 when out of memory. Thread-safe:
// the writer encodes a document's chunks on every core.
int trace_codec_encode(const void *raw, size_t bytes, size_t es, trace_zchunk *z);

// Read tokens [t0, t0+n) of the open [L, T, H] dataset d (chunked along T
// over all of L and H, as the writer makes them) as values of es bytes into
// buf, laid out [L, n, H], decoding chunks on every core. 0: done; 1: not done,
// read it with H5Dread (a virtual dataset, other chunking or filters, t0 not
// at a chunk start, a chunk this cannot undo, out of memory).
int trace_codec_read(hid_t d, int L, int H, int64_t t0, int64_t n, int es, void *buf);
