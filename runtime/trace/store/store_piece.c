// Pieces: the part file each append writes, its record plus the unfinished
// chunk before it. Full chunks are compressed here, once.
#include "store_piece.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "trace_codec.h"

// Column c's values are laid out [rows, T, w]: [rows, T, width] or [1, T, 1].
static void col_shape(const store_col *c, size_t *rows, size_t *w) {
    const int r3 = c->c.rank == 3;
    *rows = r3 ? (size_t)c->c.rows : 1;
    *w = r3 ? (size_t)c->c.width : 1;
}

// Column c of a piece into buf, laid out [rows, len, w]: [a, T) read back
// from the last part (the unfinished chunk), then the record's values v
// ([rows, n, w]).
static int piece_fill(trace_store *s, const store_col *c, const void *v, int64_t n, hid_t src, int64_t a,
                      char *buf) {
    const int64_t back = s->n_tok - a;
    const int64_t len = back + n;
    if (back > 0) {
        const store_part *last = &s->parts[s->n_parts - 1];
        hsize_t dims[3];
        hid_t mem = H5Screate_simple(store_col_dims(c, len, dims), dims, NULL);
        hid_t in = H5Dopen2(src, c->c.path, H5P_DEFAULT);
        hid_t fs = in < 0 ? -1 : H5Dget_space(in);
        int e = mem < 0 || fs < 0 || store_col_select(c, fs, a - last->t0, back) < 0 ||
                store_col_select(c, mem, 0, back) < 0 || H5Dread(in, c->c.mtype, mem, fs, H5P_DEFAULT, buf) < 0;
        if (e) trace_h5_fail(s->parts_dir, "reading back the unfinished chunk"); // before the closes
        trace_h5_drop(fs);
        trace_h5_drop(in);
        trace_h5_drop(mem);
        if (e) return -1;
    }
    size_t rows, w;
    col_shape(c, &rows, &w);
    const size_t row = (size_t)n * w * c->size; // bytes of one row of the record
    for (size_t r = 0; r < rows; r++)
        memcpy(buf + (r * (size_t)len + (size_t)back) * w * c->size, (const char *)v + r * row, row);
    return 0;
}

// Chunk k of column c (values [rows, len, w] in buf) as stored. The
// unfinished chunk at the end (zero padded) is stored uncompressed, with its
// checksum: the next append rewrites it, and so each chunk is compressed
// once, when it is complete (or when the store is closed).
static int chunk_encode(const trace_store *s, const store_col *c, const char *buf, int64_t len, int64_t k,
                        trace_zchunk *z) {
    size_t rows, w;
    col_shape(c, &rows, &w);
    const size_t es = c->size;
    const size_t bytes = rows * (size_t)s->tc * w * es;
    const int64_t t0 = k * s->tc;
    const int64_t m = len - t0 < s->tc ? len - t0 : s->tc;
    char *raw = calloc(bytes, 1);
    if (!raw) return -1;
    for (size_t r = 0; r < rows; r++)
        memcpy(raw + r * (size_t)s->tc * w * es, buf + ((size_t)r * (size_t)len + (size_t)t0) * w * es,
               (size_t)m * w * es);
    int rc = trace_codec_encode(raw, bytes, es, m == s->tc, z);
    free(raw);
    return rc;
}

// Write the piece's columns: values in buf at off[i], len elements along T
// each. Chunks are encoded in parallel (the writer's one expensive step),
// then stored as they are.
static int piece_store(trace_store *s, hid_t f, const char *tmp, const char *buf, const size_t *off, int64_t len) {
    const int n_chunks = (int)((len + s->tc - 1) / s->tc);
    const int n_tasks = s->n_cols * n_chunks;
    int fail = 0;
    int rc = -1;
    trace_zchunk *z = calloc((size_t)n_tasks + 1, sizeof *z);
    if (!z) {
        aha_err("%s: out of memory", tmp);
        return -1;
    }
#pragma omp parallel for schedule(dynamic) reduction(| : fail)
    for (int i = 0; i < n_tasks; i++)
        fail |= chunk_encode(s, &s->cols[i / n_chunks], buf + off[i / n_chunks], len, i % n_chunks, &z[i]) < 0;
    if (fail) {
        aha_err("%s: out of memory compressing chunks", tmp);
        goto done;
    }
    for (int i = 0; i < s->n_cols; i++) {
        const store_col *c = &s->cols[i];
        hid_t d = store_col_create(f, c, len, s->tc);
        int e = d < 0;
        for (int k = 0; !e && k < n_chunks; k++) {
            hsize_t o[3] = {0, (hsize_t)k * (hsize_t)s->tc, 0};
            const trace_zchunk *zc = &z[i * n_chunks + k];
            e = H5Dwrite_chunk(d, H5P_DEFAULT, zc->mask, c->c.rank == 1 ? o + 1 : o, zc->size, zc->data) < 0;
        }
        if (e) { // before a close clears HDF5's error stack
            char what[128];
            snprintf(what, sizeof what, "writing %s", c->c.path);
            trace_h5_fail(tmp, what);
        }
        trace_h5_drop(d);
        if (e) goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < n_tasks; i++) free(z[i].data);
    free(z);
    return rc;
}

// The values of the last part's records that end past a (they end in the
// unfinished chunk), *n of them: of per-record column j in
// v[j * stride ...] (stride: room for one more each), in a malloc'ed array.
static trace_store_val *recs_back(trace_store *s, hid_t src, int64_t a, int64_t *n, int64_t *stride) {
    const store_part *last = src < 0 ? NULL : &s->parts[s->n_parts - 1];
    const int64_t k = last ? last->dv1 - last->dv0 : 0; // few: the records of one chunk and one append
    trace_store_val *v = aha_malloc((size_t)s->n_recs * ((size_t)k + 1), sizeof *v, "store values");
    int64_t i = 0;
    int j = 0;
    if (!v) return NULL;
    *stride = k + 1;
    for (; k > 0 && j < s->n_recs; j++)
        if (store_recs_read(src, &s->recs[j], last->dv0 - last->d0, k, v + j * *stride, s->path) < 0) break;
    if (k > 0 && j < s->n_recs) {
        while (j--) store_recs_free(&s->recs[j], k, v + j * *stride);
        free(v);
        trace_h5_fail(s->parts_dir, "reading back the records' values");
        return NULL;
    }
    while (i < k && v[i].i <= a) i++; // the ends: the records that end before a stay
    for (j = 0; j < s->n_recs; j++) {
        store_recs_free(&s->recs[j], i, v + j * *stride);
        memmove(v + j * *stride, v + j * *stride + i, (size_t)(k - i) * sizeof *v);
    }
    *n = k - i;
    return v;
}

int store_write_piece(trace_store *s, const trace_store_rec *r, int64_t a, const char *tmp, int64_t *n_back) {
    hid_t src = -1;
    hid_t f = -1;
    trace_store_val *v = NULL;
    int64_t stride = 0;
    const int64_t len = s->n_tok - a + r->n;
    size_t *off = calloc((size_t)s->n_cols + 1, sizeof *off);
    int rc = -1;
    char *buf = NULL;
    if (!off) goto done;
    for (int i = 0; i < s->n_cols; i++) off[i + 1] = off[i] + store_col_bytes(&s->cols[i], len);
    if (!(buf = store_scratch(s, off[s->n_cols]))) goto done;
    if (a < s->n_tok && (src = store_part_open(s, &s->parts[s->n_parts - 1])) < 0)
        goto done; // the unfinished chunk is in the last part
    if (!(v = recs_back(s, src, a, n_back, &stride))) goto done;
    v[*n_back].i = s->n_tok + r->n; // the record's end, then its values
    for (int j = 1; j < s->n_recs; j++) v[j * stride + *n_back] = r->recs[j - 1];
    for (int i = 0; i < s->n_cols; i++)
        if (piece_fill(s, &s->cols[i], r->values[i], r->n, src, a, buf + off[i]) < 0) goto done;
    if ((f = trace_file_create(tmp)) < 0 || piece_store(s, f, tmp, buf, off, len) < 0) goto done;
    for (int j = 0; j < s->n_recs; j++) {
        hid_t dd = store_col_create(f, &s->recs[j], *n_back + 1, STORE_REC_CHUNK);
        int e = dd < 0 || store_recs_write(dd, &s->recs[j], 0, *n_back + 1, v + j * stride, s->path) < 0;
        trace_h5_drop(dd);
        if (e) {
            trace_h5_fail(tmp, "writing the records' values");
            goto done;
        }
    }
    rc = 0;
done:
    for (int j = 0; v && j < s->n_recs; j++) // those read back (the record's are the caller's)
        store_recs_free(&s->recs[j], *n_back, v + j * stride);
    if (f >= 0 && trace_file_close(f, tmp) < 0) rc = -1;
    trace_h5_drop(src);
    free(v);
    free(off);
    return rc;
}
