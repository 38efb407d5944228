// The one codec of the trace's chunks: HDF5's shuffle, deflate and
// Fletcher-32 filters, declared on the datasets, applied by the writer itself
// (so chunks compress on every core, then go to HDF5 as they are:
// H5Dwrite_chunk), and undone by the reader the same way, in parallel (HDF5,
// a serial build, inflates one chunk at a time, and reading is mostly
// inflate). Every chunk carries HDF5's checksum, so h5py and h5dump verify
// it too; the reader verifies it on every chunk it decodes.
#pragma once
#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_DEFLATE_LEVEL 4
#define TRACE_CODEC_RAW 0x3u // filter mask of a chunk stored uncompressed (shuffle and deflate
                             // skipped; its checksum kept)

// 1: every chunk carries a Fletcher-32 checksum. Always 1 in aha; the
// benchmark (tests/bench/bench_record.c) turns it off to measure the cost.
extern int trace_codec_checksum;

// The filter pipeline of a new chunked dataset: shuffle (by its element
// size), deflate, Fletcher-32.
int trace_codec_pipeline(hid_t dcpl);

// HDF5's Fletcher-32 of data[0..n), bit for bit (its filter stores it after
// the chunk, little-endian).
uint32_t trace_fletcher32(const void *data, size_t n);

typedef struct { // one chunk as stored
    void *data;     // [size] malloc'd
    size_t size;
    uint32_t mask;  // filters skipped (HDF5's per-chunk filter mask)
} trace_zchunk;

// One chunk of raw values (bytes long, values of es bytes) into z as stored
// (z->data malloc'd): through the whole pipeline, or (compress 0: a chunk
// that a later append rewrites) with its checksum only. 0, or -1 when out of
// memory. Thread-safe: the writer encodes a document's chunks on every core.
int trace_codec_encode(const void *raw, size_t bytes, size_t es, int compress, trace_zchunk *z);
// A chunk stored uncompressed (mask TRACE_CODEC_RAW: bytes of raw values,
// then its checksum) through the whole pipeline into z, once its checksum
// is verified. 0, or -1: out of memory, or the chunk is not one (-2: its
// checksum differs).
int trace_codec_compress_raw(const trace_zchunk *in, size_t bytes, size_t es, trace_zchunk *z);

// Read elements [t0, t0+n) of the open dataset d along its token axis --
// rank 1: [T]; rank 3: [rows, T, cols], chunked along T over all of rows and
// cols -- as values of es bytes (its type in the file must equal ftype; -1:
// a fixed-length string of es bytes) into buf, laid out [rows, n, cols],
// decoding chunks on every core. what names the dataset and its axis in
// messages, a range follows ("trace.h5: dependency/eps_0.01, tokens"). 0: done; 1: not a dataset this decoder
// reads (virtual, not chunked this way, another type or filter), decided
// before reading anything: read it with H5Dread; -1: an error naming what
// and the tokens (a chunk missing, failing its checksum, not decoding).
int trace_codec_read(hid_t d, const char *what, hid_t ftype, int rank, int rows, int cols, int64_t t0, int64_t n,
                     size_t es, void *buf);
// 1 when every filter of dataset d's pipeline is one this codec undoes and
// Fletcher-32 is among them (every chunk carries a checksum); 0 when not; -1
// when it cannot be read.
int trace_codec_has_checksum(hid_t d);
