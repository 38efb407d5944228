// The HDF5 side of the trace writer: columns, part files (pieces and
// blocks), the index (virtual datasets over the parts) and the final file.
// trace.c decides what to write and when; everything here writes one new
// file, or reads one.
#include "trace_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the float16 columns are converted in host order, which must be little-endian"
#endif

// Close any HDF5 object. The type's own close, unlike H5Idec_ref, releases
// the id even when closing fails (a flush on a full disk).
static void h5_drop(hid_t id) {
    if (id < 0) return;
    switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    default: H5Pclose(id); break;
    }
}

// ---- errors, durability, scratch, float16 ----

static herr_t cause_cb(unsigned n, const H5E_error2_t *e, void *data) {
    if (n > 0) return 0; // only the innermost error names the cause
    const char *m = strstr(e->desc, "error message = '"); // a failed read/write: errno text
    if (m)
        snprintf(data, 256, "%.*s", (int)strcspn(m + 17, "'"), m + 17);
    else
        snprintf(data, 256, "%s", e->desc);
    return 0;
}

int trace_h5_fail(const char *path, const char *what) {
    char cause[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, cause_cb, cause);
    H5Eclear2(H5E_DEFAULT);
    aha_err("%s: %s failed%s%s", path, what, cause[0] ? ": " : "", cause);
    return -1;
}

int trace_fsync(const char *path, int is_dir) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        aha_err("%s: fsync failed: %s", path, strerror(e));
        return -1;
    }
    close(fd);
    return 0;
}

void *trace_scratch(aha_trace *t, size_t bytes) {
    if (bytes <= t->buf_size) return t->buf;
    void *p = realloc(t->buf, bytes);
    if (!p) {
        aha_err("%s: out of memory (%zu bytes of trace buffer)", t->path, bytes);
        return NULL;
    }
    t->buf = p;
    t->buf_size = bytes;
    return p;
}

// IEEE half, rounded to nearest even (as numpy's astype(float16)).
uint16_t trace_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff) return sign | 0x7c00 | (m ? 0x200 : 0);
    int he = (int)e - 127 + 15;
    if (he >= 31) return sign | 0x7c00;
    if (he <= 0) { // subnormal half (or zero)
        if (he < -10) return sign;
        m |= 0x800000;
        int shift = 14 - he;
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return sign | (uint16_t)hm;
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; // a carry may round up to inf: right
    return sign | (uint16_t)h;
}

int trace_types_init(aha_trace *t) {
    // No HDF5 exit hook: after a failed write (a full disk) HDF5 1.10 cannot
    // close that file, and the hook would crash retrying. Every file the
    // writer opens it closes. (A no-op once HDF5 has been used.)
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    t->f16 = H5Tcopy(H5T_IEEE_F32LE);
    t->str = H5Tcopy(H5T_C_S1);
    if (t->f16 < 0 || H5Tset_fields(t->f16, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t->f16, 2) < 0 ||
        H5Tset_ebias(t->f16, 15) < 0 || H5Tset_precision(t->f16, 16) < 0 || t->str < 0 ||
        H5Tset_size(t->str, H5T_VARIABLE) < 0 || H5Tset_cset(t->str, H5T_CSET_UTF8) < 0)
        return trace_h5_fail(t->path, "making HDF5 types");
    return 0;
}

// ---- files and attributes ----

// File access: lock where the file system can, go on where it cannot.
static hid_t fapl_new(void) {
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    if (p >= 0 && H5Pset_file_locking(p, 1, 1) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

static hid_t file_open(const char *path) {
    hid_t fapl = fapl_new();
    hid_t f = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    h5_drop(fapl);
    if (f < 0) trace_h5_fail(path, "opening");
    return f;
}

// A new file; groups (and the root) list their members in creation order.
static hid_t file_create(const char *path) {
    hid_t fapl = fapl_new(), fcpl = H5Pcreate(H5P_FILE_CREATE), f = -1;
    if (fapl >= 0 && fcpl >= 0 &&
        H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0)
        f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    h5_drop(fapl);
    h5_drop(fcpl);
    if (f < 0) trace_h5_fail(path, "creating");
    return f;
}

static int file_close(hid_t f, const char *path) {
    return H5Fclose(f) < 0 ? trace_h5_fail(path, "writing") : 0;
}

static int group_put(hid_t loc, const char *path, hid_t *out) {
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g = -1;
    if (gcpl >= 0 &&
        H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0)
        g = H5Gcreate2(loc, path, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    h5_drop(gcpl);
    *out = g;
    return g < 0 ? -1 : 0;
}

// n < 0: a scalar; else a 1-D array of n.
static int attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int n, const void *v) {
    hsize_t dim = (hsize_t)(n < 0 ? 0 : n);
    hid_t sp = n < 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
    hid_t a = sp < 0 ? -1 : H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, mtype, v);
    h5_drop(a);
    h5_drop(sp);
    return e < 0 ? -1 : 0;
}

static int attr_str(const aha_trace *t, hid_t loc, const char *name, const char *s) {
    const char *v = s ? s : "";
    return attr_put(loc, name, t->str, t->str, -1, &v);
}

static int attr_i64(hid_t loc, const char *name, int64_t v) {
    return attr_put(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v);
}

static int attr_f64(hid_t loc, const char *name, double v) {
    return attr_put(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v);
}

static int attr_get(hid_t loc, const char *name, hid_t mtype, void *v) {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Aread(a, mtype, v);
    h5_drop(a);
    return e < 0 ? -1 : 0;
}

// A string attribute as a malloc'ed copy, or NULL.
static char *attr_get_str(const aha_trace *t, hid_t loc, const char *name) {
    char *s = NULL;
    if (attr_get(loc, name, t->str, &s) < 0 || !s) return NULL;
    char *c = strdup(s);
    H5free_memory(s);
    return c;
}

static int attr_get_i64(hid_t loc, const char *name, int64_t *v) {
    return attr_get(loc, name, H5T_NATIVE_INT64, v);
}

// A 1-D numeric attribute as a malloc'ed array of *n values of mtype.
static void *attr_get_array(hid_t loc, const char *name, hid_t mtype, size_t size, int *n) {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), sp = a < 0 ? -1 : H5Aget_space(a);
    hssize_t k = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    void *v = k < 0 ? NULL : malloc((size_t)k * size + 1);
    if (v && H5Aread(a, mtype, v) < 0) {
        free(v);
        v = NULL;
    }
    h5_drop(sp);
    h5_drop(a);
    *n = (int)k;
    return v;
}

// ---- columns ----

static size_t ty_size(int ty) {
    static const size_t size[] = {4, 1, 4, 4, 2, sizeof(char *)};
    return size[ty];
}

static hid_t ty_file(const aha_trace *t, int ty) {
    switch (ty) {
    case TY_I32: return H5T_STD_I32LE;
    case TY_U8: return H5T_STD_U8LE;
    case TY_U32: return H5T_STD_U32LE;
    case TY_F32: return H5T_IEEE_F32LE;
    case TY_F16: return t->f16;
    default: return t->str;
    }
}

static hid_t ty_mem(const aha_trace *t, int ty) {
    switch (ty) {
    case TY_I32: return H5T_NATIVE_INT32;
    case TY_U8: return H5T_NATIVE_UINT8;
    case TY_U32: return H5T_NATIVE_UINT32;
    case TY_F32: return H5T_NATIVE_FLOAT;
    default: return ty_file(t, ty); // float16 bits and strings: as in the file
    }
}

// A column over n tokens: dims [n] or [L, n, H]; returns the rank.
static int col_dims(const aha_trace *t, const trace_col *c, int64_t n, hsize_t *dims) {
    if (c->rank == 1) {
        dims[0] = (hsize_t)n;
        return 1;
    }
    dims[0] = (hsize_t)t->m.n_layers;
    dims[1] = (hsize_t)n;
    dims[2] = (hsize_t)t->m.n_heads;
    return 3;
}

// Select tokens [start, start + n) of a column's dataspace.
static int col_select(const aha_trace *t, const trace_col *c, hid_t space, int64_t start,
                      int64_t n) {
    hsize_t off[3] = {0, (hsize_t)start, 0}, cnt[3];
    int r = col_dims(t, c, n, cnt);
    herr_t e = H5Sselect_hyperslab(space, H5S_SELECT_SET, r == 1 ? off + 1 : off, NULL, cnt, NULL);
    return e < 0 ? -1 : 0;
}

// A chunked, compressed dataset; the token axis (0 or 1) is unlimited so a
// chunk may pass the end.
static hid_t dset_create(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims,
                         const hsize_t *chunk, int shuffle) {
    hsize_t maxd[3];
    memcpy(maxd, dims, (size_t)rank * sizeof *dims);
    maxd[rank == 1 ? 0 : 1] = H5S_UNLIMITED;
    hid_t sp = H5Screate_simple(rank, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), d = -1;
    if (sp >= 0 && dcpl >= 0 && lcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
        (!shuffle || H5Pset_shuffle(dcpl) >= 0) && H5Pset_deflate(dcpl, 4) >= 0 &&
        H5Pset_create_intermediate_group(lcpl, 1) >= 0)
        d = H5Dcreate2(f, path, type, sp, lcpl, dcpl, H5P_DEFAULT);
    h5_drop(sp);
    h5_drop(dcpl);
    h5_drop(lcpl);
    return d;
}

static hid_t col_create(const aha_trace *t, hid_t f, const trace_col *c, int64_t n) {
    hsize_t dims[3], chunk[3];
    int r = col_dims(t, c, n, dims);
    col_dims(t, c, t->tc, chunk);
    return dset_create(f, c->path, ty_file(t, c->type), r, dims, chunk, c->type != TY_STR);
}

static hid_t doc_create(hid_t f, int64_t n) {
    hsize_t dims[1] = {(hsize_t)n}, chunk[1] = {TRACE_DOC_CHUNK};
    return dset_create(f, "doc_offsets", H5T_STD_I64LE, 1, dims, chunk, 1);
}

static const char doc_desc[] =
    "Document boundaries on the token axis: document i is tokens "
    "[doc_offsets[i], doc_offsets[i+1]); doc_offsets[0] = 0, doc_offsets[n_docs] = T "
    "(int64 [n_docs + 1]).";

static int col_describe(const aha_trace *t, hid_t d, const trace_col *c) {
    if (attr_str(t, d, "description", c->desc) < 0) return -1;
    return c->attr ? attr_f64(d, c->attr, c->attr_value) : 0;
}

// ---- pieces: one per append ----

// Copy document d's values of column c into buf, laid out [rows, len, w],
// at token offset off.
static void col_fill(const aha_trace *t, const trace_col *c, const aha_trace_doc *d, char *buf,
                     int64_t len, int64_t off) {
    size_t n = (size_t)d->n, rows = c->rank == 3 ? (size_t)t->m.n_layers : 1;
    size_t w = c->rank == 3 ? (size_t)t->m.n_heads : 1, es = ty_size(c->type);
    size_t plane = (size_t)t->m.n_layers * n * (size_t)t->m.n_heads; // one [L, n, H] array
    const void *src = NULL;
    switch (c->src) {
    case SRC_TOKENS: src = d->tokens; break;
    case SRC_POSITION:
        for (size_t i = 0; i < n; i++) ((int32_t *)buf)[off + (int64_t)i] = (int32_t)i;
        return;
    case SRC_TEXT: src = d->token_text; break;
    case SRC_GATE: src = d->gate; break;
    case SRC_LOGIT: src = d->router_logit; break;
    case SRC_DEP: src = d->dep + (size_t)c->idx * plane; break;
    case SRC_WERR: src = d->werr + (size_t)c->idx * plane; break;
    case SRC_NLL: src = d->runs[c->idx].nll; break;
    case SRC_KL: src = d->runs[c->idx].kl; break;
    case SRC_RUN_GATE: src = d->runs[c->idx].gate; break;
    }
    for (size_t r = 0; r < rows; r++) {
        char *dst = buf + ((size_t)r * (size_t)len + (size_t)off) * w * es;
        if (c->type == TY_F16) {
            const float *s = (const float *)src + r * n * w;
            for (size_t j = 0; j < n * w; j++) ((uint16_t *)dst)[j] = trace_f16(s[j]);
        } else {
            memcpy(dst, (const char *)src + r * n * w * es, n * w * es);
        }
    }
}

// Bytes of column c over n tokens.
static size_t col_bytes(const aha_trace *t, const trace_col *c, int64_t n) {
    size_t cells = c->rank == 3 ? (size_t)t->m.n_layers * (size_t)t->m.n_heads : 1;
    return cells * (size_t)n * ty_size(c->type);
}

// Column c of a piece into buf: tokens [a, T) read back from the last part
// (the unfinished chunk), then document d.
static int piece_fill(aha_trace *t, const trace_col *c, const aha_trace_doc *d, hid_t src,
                      int64_t a, char *buf) {
    int64_t back = t->n_tok - a, len = back + d->n;
    if (back > 0) {
        const trace_part *last = &t->parts[t->n_parts - 1];
        hsize_t dims[3];
        hid_t mem = H5Screate_simple(col_dims(t, c, len, dims), dims, NULL);
        hid_t in = H5Dopen2(src, c->path, H5P_DEFAULT), fs = in < 0 ? -1 : H5Dget_space(in);
        int e = mem < 0 || fs < 0 || col_select(t, c, fs, a - last->t0, back) < 0 ||
                col_select(t, c, mem, 0, back) < 0 ||
                H5Dread(in, ty_mem(t, c->type), mem, fs, H5P_DEFAULT, buf) < 0;
        h5_drop(fs);
        h5_drop(in);
        h5_drop(mem);
        if (e) return trace_h5_fail(t->parts_dir, "reading back the unfinished chunk");
    }
    col_fill(t, c, d, buf, len, back);
    return 0;
}

typedef struct { // one chunk as stored
    void *data;
    size_t size;
    uint32_t mask; // filters skipped (HDF5's per-chunk filter mask)
} zchunk;

// Chunk k of column c (values [rows, len, w] in buf) as HDF5's shuffle and
// deflate filters would store it. The unfinished chunk at the end (zero
// padded) is stored unfiltered: the next append rewrites it, and so each
// chunk is compressed once, when it is complete.
static int chunk_deflate(const aha_trace *t, const trace_col *c, const char *buf, int64_t len,
                         int64_t k, zchunk *z) {
    size_t rows = c->rank == 3 ? (size_t)t->m.n_layers : 1,
           w = c->rank == 3 ? (size_t)t->m.n_heads : 1;
    size_t es = ty_size(c->type), n = rows * (size_t)t->tc * w, bytes = n * es;
    int64_t t0 = k * t->tc, m = len - t0 < t->tc ? len - t0 : t->tc;
    char *raw = calloc(bytes, 1), *shuf = m < t->tc ? NULL : malloc(bytes);
    if (!raw || (m == t->tc && !shuf)) {
        free(raw);
        return -1;
    }
    for (size_t r = 0; r < rows; r++)
        memcpy(raw + r * (size_t)t->tc * w * es,
               buf + ((size_t)r * (size_t)len + (size_t)t0) * w * es, (size_t)m * w * es);
    if (m < t->tc) { // skip both filters: shuffle (bit 0) and deflate (bit 1)
        *z = (zchunk){raw, bytes, 0x3};
        return 0;
    }
    for (size_t i = 0; i < n; i++) // byte b of every value, then byte b + 1
        for (size_t b = 0; b < es; b++) shuf[b * n + i] = raw[i * es + b];
    uLongf size = compressBound(bytes);
    z->data = malloc(size);
    int ok = z->data && compress2(z->data, &size, (const Bytef *)shuf, bytes, 4) == Z_OK;
    z->size = size, z->mask = 0;
    free(raw);
    free(shuf);
    return ok ? 0 : -1;
}

// Write the piece's columns: values in buf at off[i], len tokens each.
// Chunks are compressed in parallel (the writer's one expensive step), then
// stored as they are; strings go through HDF5.
static int piece_store(aha_trace *t, hid_t f, const char *tmp, const char *buf, const size_t *off,
                       int64_t len) {
    int n_chunks = (int)((len + t->tc - 1) / t->tc), n_tasks = t->n_cols * n_chunks, fail = 0,
        rc = -1;
    zchunk *z = calloc((size_t)n_tasks + 1, sizeof *z);
    if (!z) {
        aha_err("%s: out of memory", tmp);
        return -1;
    }
#pragma omp parallel for schedule(dynamic) reduction(| : fail)
    for (int i = 0; i < n_tasks; i++) {
        const trace_col *c = &t->cols[i / n_chunks];
        if (c->type != TY_STR)
            fail |= chunk_deflate(t, c, buf + off[i / n_chunks], len, i % n_chunks, &z[i]) < 0;
    }
    if (fail) {
        aha_err("%s: out of memory compressing chunks", tmp);
        goto done;
    }
    for (int i = 0; i < t->n_cols; i++) {
        const trace_col *c = &t->cols[i];
        hid_t d = col_create(t, f, c, len);
        int e = d < 0;
        if (!e && c->type == TY_STR)
            e = H5Dwrite(d, t->str, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf + off[i]) < 0;
        for (int k = 0; !e && c->type != TY_STR && k < n_chunks; k++) {
            hsize_t o[3] = {0, (hsize_t)k * (hsize_t)t->tc, 0};
            const zchunk *zc = &z[i * n_chunks + k];
            e = H5Dwrite_chunk(d, H5P_DEFAULT, zc->mask, c->rank == 1 ? o + 1 : o, zc->size,
                               zc->data) < 0;
        }
        h5_drop(d);
        if (e) {
            char what[128];
            snprintf(what, sizeof what, "writing %s", c->path);
            trace_h5_fail(tmp, what);
            goto done;
        }
    }
    rc = 0;
done:
    for (int i = 0; i < n_tasks; i++) free(z[i].data);
    free(z);
    return rc;
}

// Read n doc_offsets entries from part file f at offset off into v.
static int entries_read(hid_t f, int64_t off, int64_t n, int64_t *v) {
    hsize_t o = (hsize_t)off, k = (hsize_t)n;
    hid_t d = H5Dopen2(f, "doc_offsets", H5P_DEFAULT), fs = d < 0 ? -1 : H5Dget_space(d);
    hid_t mem = H5Screate_simple(1, &k, NULL);
    herr_t e = fs < 0 || mem < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &k, NULL) < 0
                   ? -1
                   : H5Dread(d, H5T_NATIVE_INT64, mem, fs, H5P_DEFAULT, v);
    h5_drop(mem);
    h5_drop(fs);
    h5_drop(d);
    return e < 0 ? -1 : 0;
}

static int entries_write(hid_t d, int64_t off, int64_t n, const int64_t *v) {
    hsize_t o = (hsize_t)off, k = (hsize_t)n;
    hid_t fs = H5Dget_space(d), mem = H5Screate_simple(1, &k, NULL);
    herr_t e = fs < 0 || mem < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &k, NULL) < 0
                   ? -1
                   : H5Dwrite(d, H5T_NATIVE_INT64, mem, fs, H5P_DEFAULT, v);
    h5_drop(mem);
    h5_drop(fs);
    return e < 0 ? -1 : 0;
}

// The entries of the last part's documents that end past a (they end in the
// unfinished chunk), in a malloc'ed array with room for one more; *n of them.
static int64_t *entries_back(aha_trace *t, hid_t src, int64_t a, int64_t *n) {
    const trace_part *last = src < 0 ? NULL : &t->parts[t->n_parts - 1];
    int64_t k = last ? last->dv1 - last->dv0 : 0; // few: the documents of one chunk and one append
    int64_t *v = aha_malloc((size_t)k + 1, sizeof *v, "trace doc_offsets");
    if (!v) return NULL;
    if (k > 0 && entries_read(src, last->dv0 - last->d0, k, v) < 0) {
        free(v);
        trace_h5_fail(t->parts_dir, "reading back doc_offsets");
        return NULL;
    }
    int64_t i = 0;
    while (i < k && v[i] <= a) i++;
    memmove(v, v + i, (size_t)(k - i) * sizeof *v);
    *n = k - i;
    return v;
}

int trace_write_piece(aha_trace *t, const aha_trace_doc *d, int64_t a, const char *tmp,
                      int64_t *n_back) {
    char path[4096];
    hid_t src = -1, f = -1, dd = -1;
    int64_t *ends = NULL, len = t->n_tok - a + d->n;
    size_t *off = calloc((size_t)t->n_cols + 1, sizeof *off);
    int rc = -1, text = -1, strings_back = 0; // the string column; it holds strings read back
    char *buf = NULL;
    if (!off) goto done;
    for (int i = 0; i < t->n_cols; i++) {
        off[i + 1] = off[i] + col_bytes(t, &t->cols[i], len);
        if (t->cols[i].type == TY_STR) text = i;
    }
    if (!(buf = trace_scratch(t, off[t->n_cols]))) goto done;
    if (a < t->n_tok) { // the unfinished chunk is in the last part
        snprintf(path, sizeof path, "%s/%s", t->parts_dir, t->parts[t->n_parts - 1].name);
        if ((src = file_open(path)) < 0) goto done;
    }
    if (!(ends = entries_back(t, src, a, n_back))) goto done;
    ends[*n_back] = t->n_tok + d->n;
    for (int i = 0; i < t->n_cols; i++) {
        if (piece_fill(t, &t->cols[i], d, src, a, buf + off[i]) < 0) goto done;
        strings_back |= i == text && src >= 0;
    }
    if ((f = file_create(tmp)) < 0 || piece_store(t, f, tmp, buf, off, len) < 0) goto done;
    dd = doc_create(f, *n_back + 1);
    if (dd < 0 || entries_write(dd, 0, *n_back + 1, ends) < 0) {
        trace_h5_fail(tmp, "writing doc_offsets");
        goto done;
    }
    rc = 0;
done:
    if (strings_back) { // free them: tokens [0, T - a) of the column
        hsize_t n = (hsize_t)len, k = (hsize_t)(t->n_tok - a), z = 0;
        hid_t mem = H5Screate_simple(1, &n, NULL);
        H5Sselect_hyperslab(mem, H5S_SELECT_SET, &z, NULL, &k, NULL);
        H5Dvlen_reclaim(t->str, mem, H5P_DEFAULT, buf + off[text]);
        h5_drop(mem);
    }
    h5_drop(dd);
    if (f >= 0 && file_close(f, tmp) < 0) rc = -1;
    h5_drop(src);
    free(ends);
    free(off);
    return rc;
}

// ---- blocks and the final file: chunks copied as stored ----

// Copy tokens [b0, b1) of column c into dst, chunk by chunk, compressed
// bytes as they are; parts[i] is the first part that maps b0.
static int copy_chunks(aha_trace *t, const trace_col *c, hid_t *src, int i, hid_t dst, int64_t b0,
                       int64_t b1) {
    hid_t in = -1;
    int cur = -1, rc = 0;
    for (int64_t g = b0; g < b1 && rc == 0; g += t->tc) {
        while (t->parts[i].v1 <= g) i++;
        if (i != cur) {
            h5_drop(in);
            in = H5Dopen2(src[i], c->path, H5P_DEFAULT);
            cur = i;
        }
        hsize_t so[3] = {0, (hsize_t)(g - t->parts[i].t0), 0}, dof[3] = {0, (hsize_t)(g - b0), 0},
                size = 0;
        const hsize_t *s = c->rank == 1 ? so + 1 : so, *o = c->rank == 1 ? dof + 1 : dof;
        uint32_t mask = 0;
        void *buf = NULL;
        if (in < 0 || H5Dget_chunk_storage_size(in, s, &size) < 0 ||
            !(buf = trace_scratch(t, size)) || H5Dread_chunk(in, H5P_DEFAULT, s, &mask, buf) < 0 ||
            H5Dwrite_chunk(dst, H5P_DEFAULT, mask, o, size, buf) < 0)
            rc = -1;
    }
    h5_drop(in);
    return rc;
}

// Copy the strings of tokens [b0, b1) of column c into dst, a chunk at a time.
static int copy_strings(aha_trace *t, const trace_col *c, hid_t *src, int i, hid_t dst, int64_t b0,
                        int64_t b1) {
    int rc = 0;
    for (int64_t g = b0; g < b1 && rc == 0; i++) {
        int64_t e = t->parts[i].v1 < b1 ? t->parts[i].v1 : b1;
        hid_t in = H5Dopen2(src[i], c->path, H5P_DEFAULT), fs = in < 0 ? -1 : H5Dget_space(in);
        hid_t os = H5Dget_space(dst);
        for (; g < e && rc == 0; g += t->tc) {
            hsize_t n = (hsize_t)(e - g < t->tc ? e - g : t->tc);
            char **buf = trace_scratch(t, n * sizeof(char *));
            hid_t mem = H5Screate_simple(1, &n, NULL);
            if (!buf || mem < 0 || fs < 0 || os < 0 ||
                col_select(t, c, fs, g - t->parts[i].t0, (int64_t)n) < 0 ||
                col_select(t, c, os, g - b0, (int64_t)n) < 0 ||
                H5Dread(in, t->str, mem, fs, H5P_DEFAULT, buf) < 0)
                rc = -1;
            else if (H5Dwrite(dst, t->str, mem, os, H5P_DEFAULT, buf) < 0 ||
                     H5Dvlen_reclaim(t->str, mem, H5P_DEFAULT, buf) < 0)
                rc = -1;
            h5_drop(mem);
        }
        h5_drop(os);
        h5_drop(fs);
        h5_drop(in);
    }
    return rc;
}

// Copy n doc_offsets entries from src (at so) to dst (at o), in slabs.
static int copy_entries(aha_trace *t, hid_t src, int64_t so, hid_t dst, int64_t o, int64_t n) {
    const int64_t slab = 1 << 16;
    int64_t *buf = trace_scratch(t, (size_t)slab * sizeof *buf);
    for (int64_t k = 0; k < n; k += slab) {
        int64_t m = n - k < slab ? n - k : slab;
        if (!buf || entries_read(src, so + k, m, buf) < 0 || entries_write(dst, o + k, m, buf) < 0)
            return -1;
    }
    return 0;
}

// Fill f with tokens [b0, b1) of every column and doc_offsets entries of the
// documents that end there (the final file: entry 0 first), copied from the
// parts that map them. *taken: entries taken from a part that extends past
// b1 (that part keeps the rest).
static int write_range(aha_trace *t, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                       int64_t *taken) {
    int i0 = 0, i1, rc = -1;
    while (i0 < t->n_parts && t->parts[i0].v1 <= b0) i0++;
    i1 = i0;
    while (i1 < t->n_parts && t->parts[i1].v0 < b1) i1++;
    hid_t *src = calloc((size_t)t->n_parts + 1, sizeof *src), dd = -1;
    int64_t *tail = NULL, n_tail = 0, n = final;
    char path[4096];
    if (!src) {
        aha_err("%s: out of memory", fpath);
        return -1;
    }
    for (int i = 0; i < t->n_parts; i++) src[i] = -1;
    for (int i = i0; i < i1; i++) {
        snprintf(path, sizeof path, "%s/%s", t->parts_dir, t->parts[i].name);
        if ((src[i] = file_open(path)) < 0) goto done;
    }
    for (int k = 0; k < t->n_cols; k++) {
        const trace_col *c = &t->cols[k];
        hid_t d = col_create(t, f, c, b1 - b0);
        int e = d < 0 || (final && col_describe(t, d, c) < 0) ||
                (c->type == TY_STR ? copy_strings(t, c, src, i0, d, b0, b1)
                                   : copy_chunks(t, c, src, i0, d, b0, b1));
        h5_drop(d);
        if (e) {
            snprintf(path, sizeof path, "writing %s", c->path);
            trace_h5_fail(fpath, path);
            goto done;
        }
    }
    // Entries: all those of parts inside [b0, b1); of a part reaching past
    // b1 (a piece: few entries) those <= b1.
    const trace_part *p = i1 > i0 && t->parts[i1 - 1].v1 > b1 ? &t->parts[i1 - 1] : NULL;
    if (p) {
        n_tail = p->dv1 - p->dv0;
        if (!(tail = aha_malloc((size_t)n_tail + 1, sizeof *tail, "trace doc_offsets")) ||
            entries_read(src[i1 - 1], p->dv0 - p->d0, n_tail, tail) < 0)
            goto fail_entries;
        int64_t k = 0;
        while (k < n_tail && tail[k] <= b1) k++;
        n_tail = k;
    }
    for (int i = i0; i < i1; i++) n += &t->parts[i] == p ? n_tail : t->parts[i].dv1 - t->parts[i].dv0;
    int64_t zero = 0, o = final;
    if ((dd = doc_create(f, n)) < 0 || (final && entries_write(dd, 0, 1, &zero) < 0) ||
        (final && attr_str(t, dd, "description", doc_desc) < 0))
        goto fail_entries;
    for (int i = i0; i < i1; i++) {
        const trace_part *q = &t->parts[i];
        int64_t m = q == p ? n_tail : q->dv1 - q->dv0;
        if (copy_entries(t, src[i], q->dv0 - q->d0, dd, o, m) < 0) goto fail_entries;
        o += m;
    }
    if (taken) *taken = n_tail;
    rc = 0;
    goto done;
fail_entries:
    trace_h5_fail(fpath, "copying doc_offsets");
done:
    h5_drop(dd);
    for (int i = 0; i < t->n_parts; i++) h5_drop(src[i]);
    free(src);
    free(tail);
    return rc;
}

int trace_write_block(aha_trace *t, const char *tmp, int64_t b0, int64_t b1, int64_t *taken) {
    hid_t f = file_create(tmp);
    if (f < 0) return -1;
    int rc = write_range(t, f, tmp, b0, b1, 0, taken);
    if (file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// ---- the index and the final file ----

// The virtual dataset of column c: the token ranges the parts map.
static int col_virtual(const aha_trace *t, hid_t f, const trace_col *c) {
    static const int32_t i32_fill = -1; // read where a part file is missing
    static const uint8_t u8_fill = 255;
    static const uint32_t u32_fill = 0; // no valid distance is 0
    static const uint16_t f16_fill = 0x7e00;
    static const float f32_fill = NAN;
    const void *fill[] = {&i32_fill, &u8_fill, &u32_fill, &f32_fill, &f16_fill, NULL}; // by TY_*
    hsize_t dims[3];
    int r = col_dims(t, c, t->n_tok, dims), rc = -1;
    hid_t vs = H5Screate_simple(r, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        (fill[c->type] && H5Pset_fill_value(dcpl, ty_mem(t, c->type), fill[c->type]) < 0))
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        char name[4096];
        snprintf(name, sizeof name, "%s/%s", t->parts_rel, p->name);
        col_dims(t, c, p->n_tok, dims);
        hid_t ss = H5Screate_simple(r, dims, NULL);
        int e = ss < 0 || col_select(t, c, vs, p->v0, p->v1 - p->v0) < 0 ||
                col_select(t, c, ss, p->v0 - p->t0, p->v1 - p->v0) < 0 ||
                H5Pset_virtual(dcpl, vs, name, c->path, ss) < 0;
        h5_drop(ss);
        if (e) goto done;
    }
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl >= 0 && H5Sselect_all(vs) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0)
        d = H5Dcreate2(f, c->path, ty_file(t, c->type), vs, lcpl, dcpl, H5P_DEFAULT);
    h5_drop(lcpl);
    rc = d < 0 || col_describe(t, d, c) < 0 ? -1 : 0;
done:
    h5_drop(d);
    h5_drop(dcpl);
    h5_drop(vs);
    return rc;
}

// doc_offsets of the index: entry 0 is the fill value 0; entries 1..n_docs
// come from the parts.
static int doc_virtual(const aha_trace *t, hid_t f) {
    const int64_t zero = 0;
    hsize_t n = (hsize_t)t->n_docs + 1;
    int rc = -1;
    hid_t vs = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = -1;
    if (vs < 0 || dcpl < 0 || H5Pset_layout(dcpl, H5D_VIRTUAL) < 0 ||
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &zero) < 0)
        goto done;
    for (int i = 0; i < t->n_parts; i++) {
        const trace_part *p = &t->parts[i];
        if (p->dv1 == p->dv0) continue;
        char name[4096];
        snprintf(name, sizeof name, "%s/%s", t->parts_rel, p->name);
        hsize_t sn = (hsize_t)p->n_doc, vo = (hsize_t)p->dv0, so = (hsize_t)(p->dv0 - p->d0);
        hsize_t k = (hsize_t)(p->dv1 - p->dv0);
        hid_t ss = H5Screate_simple(1, &sn, NULL);
        int e = ss < 0 || H5Sselect_hyperslab(vs, H5S_SELECT_SET, &vo, NULL, &k, NULL) < 0 ||
                H5Sselect_hyperslab(ss, H5S_SELECT_SET, &so, NULL, &k, NULL) < 0 ||
                H5Pset_virtual(dcpl, vs, name, "doc_offsets", ss) < 0;
        h5_drop(ss);
        if (e) goto done;
    }
    if (H5Sselect_all(vs) >= 0)
        d = H5Dcreate2(f, "doc_offsets", H5T_STD_I64LE, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    rc = d < 0 || attr_str(t, d, "description", doc_desc) < 0 ? -1 : 0;
done:
    h5_drop(d);
    h5_drop(dcpl);
    h5_drop(vs);
    return rc;
}

// Root attributes, provenance and the groups: all but the datasets.
static int write_header(const aha_trace *t, hid_t f, int complete) {
    const aha_trace_meta *m = &t->m;
    const trace_prov *p = &t->prov;
    double eps[m->n_eps + 1];
    int64_t win[m->n_windows + 1];
    for (int i = 0; i < m->n_eps; i++) eps[i] = m->eps[i];
    for (int i = 0; i < m->n_windows; i++) win[i] = m->windows[i];
    hid_t g = -1;
    int rc = 0;
    rc |= attr_str(
        t, f, "description",
        "aha trace: per layer, token and head, attention routing decisions and context-"
        "dependency distances of a transformer over a dataset. Schema: docs/trace-format.md.");
    rc |= attr_str(t, f, "format", TRACE_FORMAT);
    rc |= attr_i64(f, "format_version", TRACE_FORMAT_VERSION);
    rc |= attr_str(t, f, "tool_version", p->version);
    rc |= attr_str(t, f, "git_revision", p->git_revision);
    rc |= attr_str(t, f, "model", m->model_path);
    rc |= attr_str(t, f, "architecture", m->arch);
    rc |= attr_i64(f, "n_layers", m->n_layers);
    rc |= attr_i64(f, "n_heads", m->n_heads);
    rc |= attr_i64(f, "n_kv_heads", m->n_kv_heads);
    rc |= attr_i64(f, "head_dim", m->head_dim);
    rc |= attr_i64(f, "vocab", m->vocab);
    rc |= attr_i64(f, "aha", m->aha);
    rc |= attr_str(t, f, "router", m->router);
    rc |= attr_f64(f, "tau", m->tau);
    rc |= attr_put(f, "eps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->n_eps, eps);
    rc |= attr_put(f, "windows", H5T_STD_I64LE, H5T_NATIVE_INT64, m->n_windows, win);
    rc |= attr_i64(f, "sinks", m->sinks);
    rc |= attr_i64(f, "werr", m->werr);
    rc |= attr_str(t, f, "mode", m->mode);
    rc |= attr_str(t, f, "dataset", m->dataset);
    rc |= attr_str(t, f, "command_line", p->command_line);
    rc |= attr_str(t, f, "created", p->created);
    rc |= attr_i64(f, "complete", complete);
    rc |= attr_i64(f, "n_docs", t->n_docs);
    rc |= attr_i64(f, "n_tokens", t->n_tok);
    rc |= attr_i64(f, "chunk_tokens", t->tc);
    if (rc || group_put(f, "provenance", &g) < 0) goto fail;
    rc |= attr_str(t, g, "description",
                   "How this trace was made: the toolkit build and the libraries.");
    rc |= attr_str(t, g, "version", p->version);
    rc |= attr_str(t, g, "git_revision", p->git_revision);
    rc |= attr_str(t, g, "compiler", p->compiler);
    rc |= attr_str(t, g, "cflags", p->cflags);
    rc |= attr_str(t, g, "host", p->host);
    rc |= attr_str(t, g, "hdf5_version", p->hdf5);
    h5_drop(g);
    if (rc || group_put(f, "dependency", &g) < 0) goto fail;
    rc |= attr_str(t, g, "description",
                   "Dependency distance d_eps per (layer, token, head): one dataset per eps.");
    h5_drop(g);
    if (m->werr) {
        if (rc || group_put(f, "window_error", &g) < 0) goto fail;
        rc |= attr_str(t, g, "description",
                       "Relative error of each head's sliding-window attention output against full "
                       "attention: one dataset per window.");
        h5_drop(g);
    }
    if (rc || group_put(f, "runs", &g) < 0) goto fail;
    rc |= attr_str(
        t, g, "description",
        "One group per run (in the order they were declared): per-token NLL and KL against "
        "full attention, the decisions attention used, and attention FLOP totals.");
    h5_drop(g);
    for (int i = 0; i < t->n_runs && !rc; i++) {
        const trace_run *r = &t->runs[i];
        char path[160], desc[512];
        snprintf(path, sizeof path, "runs/%s", r->name);
        snprintf(
            desc, sizeof desc,
            "Run '%s': attention follows policy '%s' (window %d). flops_executed / flops_full: "
            "attention FLOPs executed and what full attention would have executed, over all "
            "documents.",
            r->name, r->policy, r->window);
        if (group_put(f, path, &g) < 0) goto fail;
        rc |= attr_str(t, g, "description", desc);
        rc |= attr_str(t, g, "policy", r->policy);
        rc |= attr_i64(g, "window", r->window);
        rc |= attr_f64(g, "flops_executed", r->flops_executed);
        rc |= attr_f64(g, "flops_full", r->flops_full);
        h5_drop(g);
    }
    if (!rc) return 0;
fail:
    return -1;
}

int trace_write_index(aha_trace *t, const char *tmp, int final) {
    hid_t f = file_create(tmp);
    if (f < 0) return -1;
    int rc = write_header(t, f, final) < 0 ? trace_h5_fail(tmp, "writing attributes") : 0;
    if (rc == 0 && final) {
        rc = write_range(t, f, tmp, 0, t->n_tok, 1, NULL);
    } else {
        for (int i = 0; i < t->n_cols && rc == 0; i++)
            if (col_virtual(t, f, &t->cols[i]) < 0) rc = trace_h5_fail(tmp, "writing the index");
        if (rc == 0 && doc_virtual(t, f) < 0) rc = trace_h5_fail(tmp, "writing the index");
    }
    if (file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// ---- resume: read an index back ----

static int read_meta(aha_trace *t, hid_t f, aha_trace_meta *m, int64_t *complete) {
    char *format = attr_get_str(t, f, "format");
    int64_t version = 0, v[9];
    int ok = format && strcmp(format, TRACE_FORMAT) == 0;
    free(format);
    if (!ok) {
        aha_err("%s: not an aha trace (no format = \"" TRACE_FORMAT "\" attribute)", t->path);
        return -1;
    }
    if (attr_get_i64(f, "format_version", &version) < 0 || version != TRACE_FORMAT_VERSION) {
        aha_err("%s: trace format version %lld; this build reads version %d", t->path,
                (long long)version, TRACE_FORMAT_VERSION);
        return -1;
    }
    static const char *ints[] = {"n_layers", "n_heads", "n_kv_heads", "head_dim", "vocab",
                                 "aha",      "sinks",   "werr",       "complete"};
    double tau = 0, *eps = NULL;
    int64_t *win = NULL;
    for (int i = 0; i < 9; i++)
        if (attr_get_i64(f, ints[i], &v[i]) < 0) return trace_h5_fail(t->path, ints[i]);
    m->n_layers = (int)v[0], m->n_heads = (int)v[1], m->n_kv_heads = (int)v[2];
    m->head_dim = (int)v[3], m->vocab = (int)v[4], m->aha = (int)v[5], m->sinks = (int)v[6];
    m->werr = (int)v[7];
    *complete = v[8];
    m->model_path = attr_get_str(t, f, "model");
    m->arch = attr_get_str(t, f, "architecture");
    m->router = attr_get_str(t, f, "router");
    m->mode = attr_get_str(t, f, "mode");
    m->dataset = attr_get_str(t, f, "dataset");
    eps = attr_get_array(f, "eps", H5T_NATIVE_DOUBLE, sizeof *eps, &m->n_eps);
    win = attr_get_array(f, "windows", H5T_NATIVE_INT64, sizeof *win, &m->n_windows);
    float *e = malloc((size_t)(m->n_eps > 0 ? m->n_eps : 0) * sizeof *e + 1);
    int *w = malloc((size_t)(m->n_windows > 0 ? m->n_windows : 0) * sizeof *w + 1);
    for (int i = 0; e && eps && i < m->n_eps; i++) e[i] = (float)eps[i];
    for (int i = 0; w && win && i < m->n_windows; i++) w[i] = (int)win[i];
    m->eps = e, m->windows = w;
    ok = m->model_path && m->arch && m->router && m->mode && m->dataset && eps && win && e && w &&
         attr_get(f, "tau", H5T_NATIVE_DOUBLE, &tau) >= 0;
    m->tau = (float)tau;
    free(eps);
    free(win);
    return ok ? 0 : trace_h5_fail(t->path, "reading the root attributes");
}

int trace_read_meta(aha_trace *t, aha_trace_meta *m, int64_t *complete) {
    hid_t f = file_open(t->path);
    if (f < 0) return -1;
    int rc = read_meta(t, f, m, complete);
    H5Fclose(f);
    return rc;
}

// Part list entry for a mapping of file name (relative to the index's
// folder), creating it if new.
static trace_part *part_find(aha_trace *t, const char *name, int add) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (int i = 0; i < t->n_parts; i++)
        if (strcmp(t->parts[i].name, base) == 0) return &t->parts[i];
    size_t len = strlen(base);
    if (!add || len >= sizeof t->parts[0].name) return NULL;
    size_t dir = base > name ? (size_t)(base - name - 1) : 0; // the folder, as the index names it
    if (strlen(t->parts_rel) != dir || strncmp(t->parts_rel, name, dir) != 0) {
        char *rel = strndup(name, dir);
        if (!rel) return NULL;
        free(t->parts_rel);
        t->parts_rel = rel;
    }
    if (t->n_parts == t->cap_parts) {
        int cap = t->cap_parts ? 2 * t->cap_parts : 16;
        trace_part *p = realloc(t->parts, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        t->parts = p, t->cap_parts = cap;
    }
    trace_part *p = &t->parts[t->n_parts++];
    memset(p, 0, sizeof *p);
    memcpy(p->name, base, len + 1);
    return p;
}

// The mappings of a virtual dataset into the part list: token ranges from
// tokens (axis 0), entry ranges from doc_offsets.
static int read_mappings(aha_trace *t, hid_t f, const char *dset, int docs) {
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    size_t n = 0;
    int rc = -1;
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &n) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        char name[4096];
        hsize_t v0, v1, s0, s1, dims;
        hid_t vs = H5Pget_virtual_vspace(dcpl, i), ss = H5Pget_virtual_srcspace(dcpl, i);
        int e = vs < 0 || ss < 0 || H5Pget_virtual_filename(dcpl, i, name, sizeof name) < 0 ||
                H5Sget_select_bounds(vs, &v0, &v1) < 0 || H5Sget_select_bounds(ss, &s0, &s1) < 0 ||
                H5Sget_simple_extent_dims(ss, &dims, NULL) != 1;
        h5_drop(vs);
        h5_drop(ss);
        trace_part *p = e ? NULL : part_find(t, name, !docs);
        if (!p) goto done;
        if (docs) {
            p->d0 = (int64_t)(v0 - s0), p->n_doc = (int64_t)dims;
            p->dv0 = (int64_t)v0, p->dv1 = (int64_t)v1 + 1;
        } else {
            p->t0 = (int64_t)(v0 - s0), p->n_tok = (int64_t)dims;
            p->v0 = (int64_t)v0, p->v1 = (int64_t)v1 + 1;
        }
    }
    rc = 0;
done:
    h5_drop(dcpl);
    h5_drop(d);
    return rc;
}

static int read_index(aha_trace *t, hid_t f) {
    trace_prov *p = &t->prov;
    hid_t g = H5Gopen2(f, "provenance", H5P_DEFAULT);
    int64_t tc = 0;
    int rc = -1;
    if (g < 0 || attr_get_i64(f, "n_docs", &t->n_docs) < 0 ||
        attr_get_i64(f, "n_tokens", &t->n_tok) < 0 || attr_get_i64(f, "chunk_tokens", &tc) < 0 ||
        tc < 1 || !(p->created = attr_get_str(t, f, "created")) ||
        !(p->command_line = attr_get_str(t, f, "command_line")) ||
        !(p->version = attr_get_str(t, g, "version")) ||
        !(p->git_revision = attr_get_str(t, g, "git_revision")) ||
        !(p->compiler = attr_get_str(t, g, "compiler")) ||
        !(p->cflags = attr_get_str(t, g, "cflags")) || !(p->host = attr_get_str(t, g, "host")) ||
        !(p->hdf5 = attr_get_str(t, g, "hdf5_version")))
        goto done;
    t->tc = tc;
    h5_drop(g);
    g = -1;
    if (t->n_docs > 0) { // the runs; a trace without documents takes new ones
        H5G_info_t info;
        if ((g = H5Gopen2(f, "runs", H5P_DEFAULT)) < 0 || H5Gget_info(g, &info) < 0) goto done;
        for (hsize_t i = 0; i < info.nlinks; i++) {
            char name[256];
            int64_t window = 0;
            if (H5Lget_name_by_idx(g, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name, sizeof name,
                                   H5P_DEFAULT) < 0)
                goto done;
            hid_t r = H5Gopen2(g, name, H5P_DEFAULT);
            char *policy = r < 0 ? NULL : attr_get_str(t, r, "policy");
            double fe = 0, ff = 0;
            int e = !policy || attr_get_i64(r, "window", &window) < 0 ||
                    attr_get(r, "flops_executed", H5T_NATIVE_DOUBLE, &fe) < 0 ||
                    attr_get(r, "flops_full", H5T_NATIVE_DOUBLE, &ff) < 0;
            h5_drop(r);
            if (e || trace_run_push(t, name, policy, (int)window) < 0) {
                free(policy);
                goto done;
            }
            free(policy);
            t->runs[t->n_runs - 1].flops_executed = fe;
            t->runs[t->n_runs - 1].flops_full = ff;
        }
    }
    if (read_mappings(t, f, "tokens", 0) < 0 || read_mappings(t, f, "doc_offsets", 1) < 0)
        goto done;
    rc = 0;
done:
    h5_drop(g);
    return rc < 0 ? trace_h5_fail(t->path, "reading the trace index") : 0;
}

int trace_read_index(aha_trace *t) {
    hid_t f = file_open(t->path);
    if (f < 0) return -1;
    int rc = read_index(t, f);
    H5Fclose(f);
    return rc;
}
