// safetensors: 8-byte little-endian header length, JSON header
// (name -> {dtype, shape, data_offsets}), then the raw data.
#pragma once
#include "mapfile.h"
#include "tensor.h"

typedef struct {
    char *path;          // owned copy of the file path
    aha_map map;         // the whole file
    aha_tensor *tensors; // [n] every tensor, validated
    int n;
    char *names;         // storage for tensor names
} aha_safetensors;

// Open and validate every entry (dtype F32/F16/BF16, shape, offsets inside the
// data section, no overlap, no duplicates). 0 or -1 with "path: problem".
int aha_st_open(aha_safetensors *st, const char *path);
// The same checks on bytes the caller keeps alive and unchanged while st is
// open (st->map stays empty); path only names them in errors. Used by open and
// by the fuzz target.
int aha_st_parse(aha_safetensors *st, const char *path, const uint8_t *data, size_t size);
void aha_st_close(aha_safetensors *st);
const aha_tensor *aha_st_find(const aha_safetensors *st, const char *name);

// One float32 tensor to write: name, shape (ndim 1 or 2), data [numel].
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[2];
    const float *data;
} aha_st_out;

// Write tensors t[0..n) as float32, and the string pairs key[i] = val[i]
// (n_meta of them) as __metadata__. 0 or -1 with "path: problem".
int aha_st_write(const char *path, const aha_st_out *t, int n, const char **key, const char **val, int n_meta);
