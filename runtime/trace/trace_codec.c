// The chunk codec (trace_codec.h): the pipeline, encoding a chunk for the
// writer, decoding chunks in parallel for the reader.
#include "trace_codec.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int trace_codec_pipeline(hid_t dcpl, int shuffle) {
    return (!shuffle || H5Pset_shuffle(dcpl) >= 0) && H5Pset_deflate(dcpl, TRACE_DEFLATE_LEVEL) >= 0 ? 0 : -1;
}

int trace_codec_encode(const void *raw, size_t bytes, size_t es, trace_zchunk *z) {
    const unsigned char *r = raw;
    size_t n = bytes / es;
    unsigned char *shuf = malloc(bytes);
    uLongf size = compressBound(bytes);
    z->data = shuf ? malloc(size) : NULL;
    z->mask = 0;
    if (z->data) // shuffle: byte b of every value, then byte b + 1
        for (size_t i = 0; i < n; i++)
            for (size_t b = 0; b < es; b++) shuf[b * n + i] = r[i * es + b];
    int ok = z->data && compress2(z->data, &size, shuf, bytes, TRACE_DEFLATE_LEVEL) == Z_OK;
    z->size = size;
    free(shuf);
    return ok ? 0 : -1;
}

// ---- decoding ----

#define MAX_FILTERS 4

typedef struct {              // how a dataset's chunks are stored
    int64_t c;                // chunk length along T
    int64_t T;                // dataset length along T
    int n_filters;
    H5Z_filter_t filter[MAX_FILTERS]; // pipeline order (applied in reverse on read)
} layout;

// 0 when dataset d is one this file reads: chunked [L, c, H], shuffle/deflate,
// stored as the native type of es bytes.
static int get_layout(hid_t d, int L, int H, int es, layout *lo) {
    hid_t p = H5Dget_create_plist(d), ty = H5Dget_type(d), sp = H5Dget_space(d);
    hsize_t cd[3], dims[3];
    int ok = p >= 0 && ty >= 0 && sp >= 0 && H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 3, cd) == 3 &&
             cd[0] == (hsize_t)L && cd[2] == (hsize_t)H && H5Sget_simple_extent_dims(sp, dims, NULL) == 3 &&
             H5Tequal(ty, es == 1 ? H5T_NATIVE_UINT8 : H5T_NATIVE_UINT32) > 0;
    lo->c = (int64_t)cd[1], lo->T = (int64_t)dims[1];
    lo->n_filters = ok ? H5Pget_nfilters(p) : 0;
    ok = ok && lo->n_filters >= 0 && lo->n_filters <= MAX_FILTERS;
    for (int i = 0; ok && i < lo->n_filters; i++) {
        unsigned flags, conf;
        size_t nv = 0;
        lo->filter[i] = H5Pget_filter2(p, (unsigned)i, &flags, &nv, NULL, 0, NULL, &conf);
        ok = lo->filter[i] == H5Z_FILTER_SHUFFLE || lo->filter[i] == H5Z_FILTER_DEFLATE;
    }
    if (sp >= 0) H5Sclose(sp);
    if (ty >= 0) H5Tclose(ty);
    if (p >= 0) H5Pclose(p);
    return ok ? 0 : 1;
}

// Undo the filters of one raw chunk (raw, size bytes; mask: filters skipped)
// into out (bytes long); tmp is scratch of the same length.
static int unfilter(const layout *lo, unsigned mask, const unsigned char *raw, size_t size, unsigned char *out,
                    unsigned char *tmp, size_t bytes, int es) {
    const unsigned char *src = raw;
    size_t have = size;
    for (int i = lo->n_filters - 1; i >= 0; i--) {
        if (mask & (1u << i)) continue;
        unsigned char *dst = src == tmp ? out : tmp;
        if (lo->filter[i] == H5Z_FILTER_DEFLATE) {
            uLongf n = bytes;
            if (uncompress(dst, &n, src, have) != Z_OK || n != bytes) return -1;
        } else { // shuffle stores byte b of every value together
            if (have != bytes) return -1;
            size_t nv = bytes / (size_t)es;
            if (es == 4) { // the common case, written so that it vectorizes
                uint32_t *d32 = (uint32_t *)dst;
                for (size_t v = 0; v < nv; v++)
                    d32[v] = (uint32_t)src[v] | (uint32_t)src[nv + v] << 8 | (uint32_t)src[2 * nv + v] << 16 |
                             (uint32_t)src[3 * nv + v] << 24;
            } else {
                for (size_t v = 0; v < nv; v++)
                    for (int b = 0; b < es; b++) dst[v * es + b] = src[b * nv + v];
            }
        }
        src = dst, have = bytes;
    }
    if (have != bytes) return -1;
    if (src != out) memcpy(out, src, bytes);
    return 0;
}

int trace_codec_read(hid_t d, int L, int H, int64_t t0, int64_t n, int es, void *buf) {
    layout lo;
    if (get_layout(d, L, H, es, &lo) != 0 || t0 % lo.c != 0) return 1;
    int64_t nc = (n + lo.c - 1) / lo.c;
    size_t bytes = (size_t)L * (size_t)lo.c * (size_t)H * (size_t)es; // one whole chunk
    unsigned char **raw = calloc((size_t)nc, sizeof *raw);
    size_t *size = calloc((size_t)nc, sizeof *size);
    unsigned *mask = calloc((size_t)nc, sizeof *mask);
    int bad = raw && size && mask ? 0 : 1;
    for (int64_t k = 0; !bad && k < nc; k++) { // raw reads: HDF5 is serial
        hsize_t off[3] = {0, (hsize_t)(t0 + k * lo.c), 0};
        hsize_t sz = 0;
        if (H5Dget_chunk_storage_size(d, off, &sz) < 0 || sz == 0 || !(raw[k] = malloc(sz)) ||
            H5Dread_chunk(d, H5P_DEFAULT, off, &mask[k], raw[k]) < 0)
            bad = 1;
        size[k] = sz;
    }
#pragma omp parallel if (nc > 1)
    {
        unsigned char *out = malloc(bytes), *tmp = malloc(bytes);
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < nc; k++) {
            int skip;
#pragma omp atomic read
            skip = bad;
            if (skip || !out || !tmp || unfilter(&lo, mask[k], raw[k], size[k], out, tmp, bytes, es) != 0) {
#pragma omp atomic write
                bad = 1; // any chunk this cannot undo: H5Dread reads the slab (or says what is wrong)
                continue;
            }
            int64_t m = n - k * lo.c < lo.c ? n - k * lo.c : lo.c; // the last chunk may be cut
            for (int l = 0; l < L; l++)
                memcpy((unsigned char *)buf + (((size_t)l * n + k * lo.c) * H) * es,
                       out + (size_t)l * lo.c * H * es, (size_t)m * H * es);
        }
        free(out), free(tmp);
    }
    for (int64_t k = 0; raw && k < nc; k++) free(raw[k]);
    free(raw), free(size), free(mask);
    return bad;
}
