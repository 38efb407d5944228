// The chunk codec (trace_codec.h): the pipeline, encoding a chunk for the
// writer, decoding and verifying chunks in parallel for the reader.
#include "trace_codec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "err.h"

int trace_codec_checksum = 1;

int trace_codec_pipeline(hid_t dcpl) {
    return H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, TRACE_DEFLATE_LEVEL) >= 0 &&
                   (!trace_codec_checksum || H5Pset_fletcher32(dcpl) >= 0)
               ? 0
               : -1;
}

// HDF5's H5_checksum_fletcher32, step for step: 16-bit big-endian words, both
// sums folded every 360 words (the folds decide which of the two
// representations of 0 mod 65535 a sum ends as), an odd last byte as the
// high byte of one more word.
uint32_t trace_fletcher32(const void *data, size_t n) {
    const uint8_t *p = data;
    uint32_t s1 = 0, s2 = 0;
    for (size_t words = n / 2; words > 0;) {
        size_t k = words > 360 ? 360 : words;
        words -= k;
        for (; k > 0; k--, p += 2) {
            s1 += (uint32_t)p[0] << 8 | p[1];
            s2 += s1;
        }
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    if (n % 2) {
        s1 += (uint32_t)p[0] << 8;
        s2 += s1;
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    return s2 << 16 | s1;
}

static void put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int trace_codec_encode(const void *raw, size_t bytes, size_t es, int compress, trace_zchunk *z) {
    const unsigned char *r = raw;
    size_t n = bytes / es, cap = (compress ? compressBound(bytes) : bytes) + 4;
    unsigned char *shuf = compress ? malloc(bytes) : NULL;
    uLongf size = bytes;
    z->data = shuf || !compress ? malloc(cap) : NULL;
    z->mask = compress ? 0 : TRACE_CODEC_RAW;
    int ok = z->data != NULL;
    if (ok && compress) { // shuffle: byte b of every value, then byte b + 1
        for (size_t i = 0; i < n; i++)
            for (size_t b = 0; b < es; b++) shuf[b * n + i] = r[i * es + b];
        size = cap - 4;
        ok = compress2(z->data, &size, shuf, bytes, TRACE_DEFLATE_LEVEL) == Z_OK;
    } else if (ok) {
        memcpy(z->data, raw, bytes);
    }
    if (ok && trace_codec_checksum) {
        put_le32((unsigned char *)z->data + size, trace_fletcher32(z->data, size));
        size += 4;
    }
    z->size = size;
    free(shuf);
    return ok ? 0 : -1;
}

int trace_codec_compress_raw(const trace_zchunk *in, size_t bytes, size_t es, trace_zchunk *z) {
    const unsigned char *d = in->data;
    size_t sum = trace_codec_checksum ? 4 : 0;
    if (in->mask != TRACE_CODEC_RAW || in->size != bytes + sum) return -1;
    if (sum && trace_fletcher32(d, bytes) != get_le32(d + bytes)) return -2;
    return trace_codec_encode(d, bytes, es, 1, z);
}

// ---- decoding ----

#define MAX_FILTERS 4
#define MAX_CHUNK_BYTES ((size_t)1 << 30) // more than any chunk a trace holds: a damaged layout

typedef struct {              // how a dataset's chunks are stored
    int64_t c;                // chunk length along T
    int64_t T;                // dataset length along T
    int rank, rows, cols;     // [T] or [rows, T, cols]
    size_t es;                // bytes per value
    int n_filters;
    H5Z_filter_t filter[MAX_FILTERS]; // pipeline order (applied in reverse on read)
} layout;

// The filters of creation property list p into lo: 0 when each is one this
// codec undoes (shuffle by es bytes, deflate, Fletcher-32), else 1.
static int get_filters(hid_t p, size_t es, layout *lo) {
    lo->n_filters = H5Pget_nfilters(p);
    int ok = lo->n_filters >= 0 && lo->n_filters <= MAX_FILTERS;
    for (int i = 0; ok && i < lo->n_filters; i++) {
        unsigned flags, conf, cd[8] = {0};
        size_t nv = 8;
        lo->filter[i] = H5Pget_filter2(p, (unsigned)i, &flags, &nv, cd, 0, NULL, &conf);
        ok = (lo->filter[i] == H5Z_FILTER_SHUFFLE && (es == 0 || (nv >= 1 && cd[0] == es))) ||
             lo->filter[i] == H5Z_FILTER_DEFLATE || lo->filter[i] == H5Z_FILTER_FLETCHER32;
    }
    return ok ? 0 : 1;
}

// 0 when dataset d is one this codec reads: chunked along T over whole rows
// and cols, of type ftype (-1: a fixed-length string of es bytes), with
// filters it undoes; else 1.
static int get_layout(hid_t d, hid_t ftype, int rank, int rows, int cols, size_t es, layout *lo) {
    hid_t p = H5Dget_create_plist(d), ty = H5Dget_type(d), sp = H5Dget_space(d);
    hsize_t cd[3] = {0}, dims[3] = {0};
    const int ax = rank == 3;
    int ok = p >= 0 && ty >= 0 && sp >= 0 && H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 3, cd) == rank &&
             H5Sget_simple_extent_ndims(sp) == rank && H5Sget_simple_extent_dims(sp, dims, NULL) == rank &&
             cd[ax] > 0 && (rank == 1 || (cd[0] == (hsize_t)rows && cd[2] == (hsize_t)cols &&
                                          dims[0] == (hsize_t)rows && dims[2] == (hsize_t)cols));
    if (ok && ftype >= 0) ok = H5Tequal(ty, ftype) > 0;
    else if (ok) ok = H5Tget_class(ty) == H5T_STRING && H5Tis_variable_str(ty) == 0 && H5Tget_size(ty) == es;
    *lo = (layout){.c = (int64_t)cd[ax], .T = (int64_t)dims[ax], .rank = rank, .rows = rank == 3 ? rows : 1,
                   .cols = rank == 3 ? cols : 1, .es = es};
    ok = ok && get_filters(p, es, lo) == 0;
    if (sp >= 0) H5Sclose(sp);
    if (ty >= 0) H5Tclose(ty);
    if (p >= 0) H5Pclose(p);
    return ok ? 0 : 1;
}

int trace_codec_has_checksum(hid_t d) {
    hid_t p = H5Dget_create_plist(d);
    if (p < 0) return -1;
    layout lo = {0};
    int rc = 0;
    if (H5Pget_layout(p) == H5D_CHUNKED && get_filters(p, 0, &lo) == 0)
        for (int i = 0; i < lo.n_filters; i++) rc |= lo.filter[i] == H5Z_FILTER_FLETCHER32;
    H5Pclose(p);
    return rc;
}

// Why a chunk could not be read.
enum { CHUNK_OK, CHUNK_MISSING, CHUNK_SIZE, CHUNK_READ, CHUNK_NO_SUM, CHUNK_SUM, CHUNK_DECODE };

static const char *chunk_why(int why) {
    switch (why) {
    case CHUNK_MISSING: return "the chunk is missing";
    case CHUNK_SIZE: return "the chunk's stored size is more than its values can take";
    case CHUNK_READ: return "reading the chunk failed";
    case CHUNK_NO_SUM: return "the chunk carries no checksum";
    case CHUNK_SUM: return "the chunk fails its Fletcher-32 checksum: the file is damaged";
    default: return "the chunk does not decompress: the file is damaged";
    }
}

// Undo the filters of one stored chunk (raw, size bytes; mask: filters
// skipped) into out (bytes long), verifying its checksum; tmp is scratch of
// the same length. CHUNK_OK or why not.
static int unfilter(const layout *lo, unsigned mask, const unsigned char *raw, size_t size, unsigned char *out,
                    unsigned char *tmp, size_t bytes) {
    const unsigned char *src = raw;
    size_t have = size, es = lo->es;
    for (int i = lo->n_filters - 1; i >= 0; i--) {
        if (mask & (1u << i)) {
            if (lo->filter[i] == H5Z_FILTER_FLETCHER32) return CHUNK_NO_SUM;
            continue;
        }
        if (lo->filter[i] == H5Z_FILTER_FLETCHER32) { // the sum of the bytes before it, stored after them
            if (have < 4 || trace_fletcher32(src, have - 4) != get_le32(src + have - 4)) return CHUNK_SUM;
            have -= 4;
            continue;
        }
        unsigned char *dst = src == tmp ? out : tmp;
        if (lo->filter[i] == H5Z_FILTER_DEFLATE) {
            uLongf n = bytes;
            if (uncompress(dst, &n, src, have) != Z_OK || n != bytes) return CHUNK_DECODE;
        } else { // shuffle stores byte b of every value together
            if (have != bytes) return CHUNK_DECODE;
            size_t nv = bytes / es;
            if (es == 4) { // the common case, written so that it vectorizes
                uint32_t *d32 = (uint32_t *)dst;
                for (size_t v = 0; v < nv; v++)
                    d32[v] = (uint32_t)src[v] | (uint32_t)src[nv + v] << 8 | (uint32_t)src[2 * nv + v] << 16 |
                             (uint32_t)src[3 * nv + v] << 24;
            } else {
                for (size_t v = 0; v < nv; v++)
                    for (size_t b = 0; b < es; b++) dst[v * es + b] = src[b * nv + v];
            }
        }
        src = dst;
        have = bytes;
    }
    if (have != bytes) return CHUNK_DECODE;
    if (src != out) memcpy(out, src, bytes);
    return CHUNK_OK;
}

typedef struct {          // the stored chunks of one read
    unsigned char **raw;  // [nc] as stored
    size_t *size;         // [nc]
    unsigned *mask;       // [nc] filters skipped
    int64_t bad;          // the first chunk (of the nc) that failed, or -1
    int why;              // ... and why (CHUNK_*)
} chunk_set;

// Chunk k of s failed for why: keep the first.
static void chunk_fail(chunk_set *s, int64_t k, int why) {
#pragma omp critical(trace_codec_fail)
    if (s->bad < 0 || k < s->bad) {
        s->bad = k;
        s->why = why;
    }
}

// The stored chunks k0 .. k0+nc-1 (serial: HDF5 is).
static void chunks_read(hid_t d, const layout *lo, int64_t k0, int64_t nc, size_t bytes, chunk_set *s) {
    const size_t most = compressBound(bytes) + 64; // deflate's worst case, a checksum and slack
    for (int64_t k = 0; s->bad < 0 && k < nc; k++) {
        hsize_t off[3] = {0, (hsize_t)((k0 + k) * lo->c), 0}, sz = 0;
        const hsize_t *o = lo->rank == 1 ? off + 1 : off;
        if (H5Dget_chunk_storage_size(d, o, &sz) < 0 || sz == 0) chunk_fail(s, k, CHUNK_MISSING);
        else if (sz > most) chunk_fail(s, k, CHUNK_SIZE);
        else if (!(s->raw[k] = malloc(sz)) || H5Dread_chunk(d, H5P_DEFAULT, o, &s->mask[k], s->raw[k]) < 0)
            chunk_fail(s, k, CHUNK_READ);
        s->size[k] = sz;
    }
}

// Decode the chunks of s (chunks k0 .. k0+nc-1, each bytes long) on every
// core and copy tokens [t0, t0+n) of them into buf ([rows, n, cols]); a
// chunk that fails is recorded in s. 1 when out of memory, else 0.
static int chunks_decode(const layout *lo, int64_t k0, int64_t nc, size_t bytes, chunk_set *s, int64_t t0, int64_t n,
                         void *buf) {
    const size_t es = lo->es;
    int oom = 0;
#pragma omp parallel if (nc > 1)
    {
        unsigned char *out = malloc(bytes), *tmp = malloc(bytes);
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < nc; k++) {
            if (!out || !tmp) {
#pragma omp atomic write
                oom = 1;
                continue;
            }
            int why = unfilter(lo, s->mask[k], s->raw[k], s->size[k], out, tmp, bytes);
            if (why != CHUNK_OK) {
                chunk_fail(s, k, why);
                continue;
            }
            // chunk k0 + k holds tokens [c0, c0 + c); this read takes [a, b) of them
            int64_t c0 = (k0 + k) * lo->c, a = t0 > c0 ? t0 : c0, b = t0 + n < c0 + lo->c ? t0 + n : c0 + lo->c;
            for (int r = 0; r < lo->rows; r++)
                memcpy((unsigned char *)buf + (((size_t)r * (size_t)n + (size_t)(a - t0)) * lo->cols) * es,
                       out + (((size_t)r * (size_t)lo->c + (size_t)(a - c0)) * lo->cols) * es,
                       (size_t)(b - a) * lo->cols * es);
        }
        free(out);
        free(tmp);
    }
    return oom;
}

int trace_codec_read(hid_t d, const char *what, hid_t ftype, int rank, int rows, int cols, int64_t t0, int64_t n,
                     size_t es, void *buf) {
    layout lo;
    if (get_layout(d, ftype, rank, rows, cols, es, &lo) != 0) return 1;
    const size_t per = (size_t)lo.rows * (size_t)lo.cols * es, bytes = per * (size_t)lo.c; // one whole chunk
    if (t0 < 0 || n < 0 || t0 > lo.T - n) {
        aha_err("%s [%" PRId64 ", %" PRId64 ") are outside its [0, %" PRId64 ")", what, t0, t0 + n, lo.T);
        return -1;
    }
    if ((size_t)lo.c > MAX_CHUNK_BYTES / per) {
        aha_err("%s per chunk: %" PRId64 ", more than a trace's chunk holds: the file is damaged", what, lo.c);
        return -1;
    }
    if (n == 0) return 0;
    const int64_t k0 = t0 / lo.c, nc = (t0 + n - 1) / lo.c - k0 + 1;
    chunk_set s = {aha_calloc((size_t)nc, sizeof *s.raw, what), aha_calloc((size_t)nc, sizeof *s.size, what),
                   aha_calloc((size_t)nc, sizeof *s.mask, what), -1, CHUNK_OK};
    if (!s.raw || !s.size || !s.mask) {
        free(s.raw);
        free(s.size);
        free(s.mask);
        return -1;
    }
    chunks_read(d, &lo, k0, nc, bytes, &s);
    int oom = s.bad < 0 ? chunks_decode(&lo, k0, nc, bytes, &s, t0, n, buf) : 0;
    for (int64_t k = 0; k < nc; k++) free(s.raw[k]);
    free(s.raw);
    free(s.size);
    free(s.mask);
    if (s.bad >= 0) {
        int64_t c0 = (k0 + s.bad) * lo.c, c1 = c0 + lo.c < lo.T ? c0 + lo.c : lo.T;
        aha_err("%s [%" PRId64 ", %" PRId64 "): %s", what, c0, c1, chunk_why(s.why));
        return -1;
    }
    if (oom) aha_err("%s: out of memory decoding %zu-byte chunks", what, bytes);
    return oom ? -1 : 0;
}
