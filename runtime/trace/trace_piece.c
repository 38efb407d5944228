// Pieces: the part file each append writes, its document plus the
// unfinished chunk before it. Full chunks are compressed here, once.
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "f16.h"
#include "trace_codec.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the float16 columns are converted in host order, which must be little-endian"
#endif

// Column c's values are laid out [rows, tokens, w]: [L, T, H] or [1, T, 1].
static void col_shape(const aha_trace *t, const trace_col *c, size_t *rows, size_t *w) {
    int lth = trace_col_rank(c) == 3;
    *rows = lth ? (size_t)t->m.n_layers : 1;
    *w = lth ? (size_t)t->m.n_heads : 1;
}

// Copy document d's values of column c into buf, laid out [rows, len, w],
// at token offset off.
static void col_fill(const aha_trace *t, const trace_col *c, const aha_trace_doc *d, char *buf,
                     int64_t len, int64_t off) {
    size_t n = (size_t)d->n, rows, w, es = trace_col_size(t, c);
    col_shape(t, c, &rows, &w);
    size_t plane = (size_t)t->m.n_layers * n * (size_t)t->m.n_heads; // one [L, n, H] array
    const void *src = NULL;
    switch (c->id) { // the field of aha_trace_doc that fills each row
    case TD_TOKENS: src = d->tokens; break;
    case TD_POSITION:
        for (size_t i = 0; i < n; i++) ((int32_t *)buf)[off + (int64_t)i] = (int32_t)i;
        return;
    case TD_TOKEN_TEXT: // fixed-length, NUL-padded (doc_check made sure each fits)
        for (size_t i = 0; i < n; i++) strncpy(buf + ((size_t)off + i) * es, d->token_text[i], es);
        return;
    case TD_GATE: src = d->gate; break;
    case TD_ROUTER_LOGIT: src = d->router_logit; break;
    case TD_DEP: src = d->dep + (size_t)c->idx * plane; break;
    case TD_WERR: src = d->werr + (size_t)c->idx * plane; break;
    case TD_MASS_FAR: src = d->mass_far + (size_t)c->idx * plane; break;
    case TD_MASS_SINKS: src = d->mass_sink; break;
    case TD_RUN_NLL: src = d->runs[c->idx].nll; break;
    case TD_RUN_KL: src = d->runs[c->idx].kl; break;
    case TD_RUN_GATE: src = d->runs[c->idx].gate; break;
    case TD_DOC_OFFSETS: case TD_DOC_INDEX: case TD_DOC_SOURCE: case TD_DOC_SHA256: case TD_COUNT:
        return; // not a column
    }
    for (size_t r = 0; r < rows; r++) {
        char *dst = buf + ((size_t)r * (size_t)len + (size_t)off) * w * es;
        if (trace_col_type(c) == TY_F16) {
            const float *s = (const float *)src + r * n * w;
            for (size_t j = 0; j < n * w; j++) ((uint16_t *)dst)[j] = aha_f32_to_f16(s[j]);
        } else {
            memcpy(dst, (const char *)src + r * n * w * es, n * w * es);
        }
    }
}

// Bytes of column c over n tokens.
static size_t col_bytes(const aha_trace *t, const trace_col *c, int64_t n) {
    size_t rows, w;
    col_shape(t, c, &rows, &w);
    return rows * w * (size_t)n * trace_col_size(t, c);
}

// Column c of a piece into buf: tokens [a, T) read back from the last part
// (the unfinished chunk), then document d.
static int piece_fill(aha_trace *t, const trace_col *c, const aha_trace_doc *d, hid_t src,
                      int64_t a, char *buf) {
    int64_t back = t->n_tok - a, len = back + d->n;
    if (back > 0) {
        const trace_part *last = &t->parts[t->n_parts - 1];
        hsize_t dims[3];
        hid_t mem = H5Screate_simple(trace_col_dims(t, c, len, dims), dims, NULL);
        hid_t in = H5Dopen2(src, c->path, H5P_DEFAULT), fs = in < 0 ? -1 : H5Dget_space(in);
        int e = mem < 0 || fs < 0 || trace_col_select(t, c, fs, a - last->t0, back) < 0 ||
                trace_col_select(t, c, mem, 0, back) < 0 ||
                H5Dread(in, trace_col_h5type(t, c, 1), mem, fs, H5P_DEFAULT, buf) < 0;
        if (e) trace_h5_fail(t->parts_dir, "reading back the unfinished chunk"); // before the closes
        trace_h5_drop(fs);
        trace_h5_drop(in);
        trace_h5_drop(mem);
        if (e) return -1;
    }
    col_fill(t, c, d, buf, len, back);
    return 0;
}

// Chunk k of column c (values [rows, len, w] in buf) as stored. The
// unfinished chunk at the end (zero padded) is stored uncompressed, with its
// checksum: the next append rewrites it, and so each chunk is compressed
// once, when it is complete (or when the trace is closed).
static int chunk_encode(const aha_trace *t, const trace_col *c, const char *buf, int64_t len,
                        int64_t k, trace_zchunk *z) {
    size_t rows, w;
    col_shape(t, c, &rows, &w);
    size_t es = trace_col_size(t, c), bytes = rows * (size_t)t->tc * w * es;
    int64_t t0 = k * t->tc, m = len - t0 < t->tc ? len - t0 : t->tc;
    char *raw = calloc(bytes, 1);
    if (!raw) return -1;
    for (size_t r = 0; r < rows; r++)
        memcpy(raw + r * (size_t)t->tc * w * es,
               buf + ((size_t)r * (size_t)len + (size_t)t0) * w * es, (size_t)m * w * es);
    int rc = trace_codec_encode(raw, bytes, es, m == t->tc, z);
    free(raw);
    return rc;
}

// Write the piece's columns: values in buf at off[i], len tokens each.
// Chunks are encoded in parallel (the writer's one expensive step), then
// stored as they are.
static int piece_store(aha_trace *t, hid_t f, const char *tmp, const char *buf, const size_t *off,
                       int64_t len) {
    int n_chunks = (int)((len + t->tc - 1) / t->tc), n_tasks = t->n_cols * n_chunks, fail = 0,
        rc = -1;
    trace_zchunk *z = calloc((size_t)n_tasks + 1, sizeof *z);
    if (!z) {
        aha_err("%s: out of memory", tmp);
        return -1;
    }
#pragma omp parallel for schedule(dynamic) reduction(| : fail)
    for (int i = 0; i < n_tasks; i++)
        fail |= chunk_encode(t, &t->cols[i / n_chunks], buf + off[i / n_chunks], len, i % n_chunks, &z[i]) < 0;
    if (fail) {
        aha_err("%s: out of memory compressing chunks", tmp);
        goto done;
    }
    for (int i = 0; i < t->n_cols; i++) {
        const trace_col *c = &t->cols[i];
        hid_t d = trace_col_create(t, f, c, len);
        int e = d < 0;
        for (int k = 0; !e && k < n_chunks; k++) {
            hsize_t o[3] = {0, (hsize_t)k * (hsize_t)t->tc, 0};
            const trace_zchunk *zc = &z[i * n_chunks + k];
            e = H5Dwrite_chunk(d, H5P_DEFAULT, zc->mask, trace_col_rank(c) == 1 ? o + 1 : o,
                               zc->size, zc->data) < 0;
        }
        if (e) { // before a close clears HDF5's error stack
            char what[128];
            snprintf(what, sizeof what, "writing %s", c->path);
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

// The entries of the last part's documents that end past a (they end in the
// unfinished chunk), *n of them: of per-document dataset TD_DOC_OFFSETS + j in
// e[j * stride ...] (stride: room for one more each), in a malloc'ed array.
static int64_t *entries_back(aha_trace *t, hid_t src, int64_t a, int64_t *n, int64_t *stride) {
    const trace_part *last = src < 0 ? NULL : &t->parts[t->n_parts - 1];
    int64_t k = last ? last->dv1 - last->dv0 : 0; // few: the documents of one chunk and one append
    int64_t *e = aha_malloc(TRACE_N_DOC_DSETS * ((size_t)k + 1), sizeof *e, "trace doc_offsets"), i = 0;
    int j = 0;
    if (!e) return NULL;
    *stride = k + 1;
    for (; k > 0 && j < TRACE_N_DOC_DSETS; j++)
        if (trace_entries_read(t, src, TD_DOC_OFFSETS + j, last->dv0 - last->d0, k, e + j * *stride) < 0) break;
    if (k > 0 && j < TRACE_N_DOC_DSETS) {
        while (j--) trace_entries_free(TD_DOC_OFFSETS + j, k, e + j * *stride);
        free(e);
        trace_h5_fail(t->parts_dir, "reading back the documents' entries");
        return NULL;
    }
    while (i < k && e[i] <= a) i++; // doc_offsets: the documents that end before a stay
    for (j = 0; j < TRACE_N_DOC_DSETS; j++) {
        trace_entries_free(TD_DOC_OFFSETS + j, i, e + j * *stride);
        memmove(e + j * *stride, e + j * *stride + i, (size_t)(k - i) * sizeof *e);
    }
    *n = k - i;
    return e;
}

// Document d's entry of per-document dataset id into *v (8 bytes).
static void entry_of(const aha_trace *t, const aha_trace_doc *d, trace_dset_id id, int64_t *v) {
    switch (id) {
    case TD_DOC_OFFSETS: *v = t->n_tok + d->n; break;
    case TD_DOC_INDEX: *v = d->doc_index; break;
    case TD_DOC_SOURCE: memcpy(v, &d->source, sizeof d->source); break;
    default: memcpy(v, &d->sha256, sizeof d->sha256); break; // TD_DOC_SHA256
    }
}

int trace_write_piece(aha_trace *t, const aha_trace_doc *d, int64_t a, const char *tmp,
                      int64_t *n_back) {
    hid_t src = -1, f = -1;
    int64_t *entries = NULL, stride = 0, len = t->n_tok - a + d->n;
    size_t *off = calloc((size_t)t->n_cols + 1, sizeof *off);
    int rc = -1;
    char *buf = NULL;
    if (!off) goto done;
    for (int i = 0; i < t->n_cols; i++) off[i + 1] = off[i] + col_bytes(t, &t->cols[i], len);
    if (!(buf = trace_scratch(t, off[t->n_cols]))) goto done;
    if (a < t->n_tok && (src = trace_part_open(t, &t->parts[t->n_parts - 1])) < 0)
        goto done; // the unfinished chunk is in the last part
    if (!(entries = entries_back(t, src, a, n_back, &stride))) goto done;
    for (int j = 0; j < TRACE_N_DOC_DSETS; j++) entry_of(t, d, TD_DOC_OFFSETS + j, entries + j * stride + *n_back);
    for (int i = 0; i < t->n_cols; i++)
        if (piece_fill(t, &t->cols[i], d, src, a, buf + off[i]) < 0) goto done;
    if ((f = trace_file_create(tmp)) < 0 || piece_store(t, f, tmp, buf, off, len) < 0) goto done;
    for (int j = 0; j < TRACE_N_DOC_DSETS; j++) {
        hid_t dd = trace_doc_create(t, f, TD_DOC_OFFSETS + j, *n_back + 1);
        int e = dd < 0 || trace_entries_write(t, dd, TD_DOC_OFFSETS + j, 0, *n_back + 1, entries + j * stride) < 0;
        trace_h5_drop(dd);
        if (e) {
            trace_h5_fail(tmp, "writing the documents' entries");
            goto done;
        }
    }
    rc = 0;
done:
    for (int j = 0; entries && j < TRACE_N_DOC_DSETS; j++) // those read back (d's are the caller's)
        trace_entries_free(TD_DOC_OFFSETS + j, *n_back, entries + j * stride);
    if (f >= 0 && trace_file_close(f, tmp) < 0) rc = -1;
    trace_h5_drop(src);
    free(entries);
    free(off);
    return rc;
}
