// Blocks and the final file: tokens of a range copied from the parts that
// map them, compressed chunks byte for byte; and compaction, which merges
// parts into blocks as the trace grows.
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "trace_codec.h"

// Chunk (stored as z) of column c compressed, when it is not: the final
// file holds no uncompressed chunk. Its checksum is verified first. 0, or
// -1 with a message.
static int chunk_final(const aha_trace *t, const trace_col *c, trace_zchunk *z) {
    if (z->mask == 0) return 0;
    size_t rows = trace_col_rank(c) == 3 ? (size_t)t->m.n_layers * (size_t)t->m.n_heads : 1;
    trace_zchunk out;
    int rc = trace_codec_compress_raw(z, rows * (size_t)t->tc * trace_col_size(t, c), trace_col_size(t, c), &out);
    if (rc != 0)
        aha_err("%s: %s: its last chunk %s", t->parts_dir, c->path,
                rc == -2 ? "fails its checksum: a part file is damaged" : "cannot be compressed (out of memory?)");
    else
        *z = out;
    return rc ? -1 : 0;
}

// Copy tokens [b0, b1) of column c into dst, chunk by chunk, compressed
// bytes as they are (final: the uncompressed last chunk compressed);
// parts[i] is the first part that maps b0. 0, or -1 with a message naming
// fpath (HDF5's cause taken before any other call clears it).
static int copy_chunks(aha_trace *t, const trace_col *c, hid_t *src, int i, hid_t dst, int64_t b0,
                       int64_t b1, int final, const char *fpath) {
    hid_t in = -1;
    int cur = -1, rc = 0;
    for (int64_t g = b0; g < b1 && rc == 0; g += t->tc) {
        while (t->parts[i].v1 <= g) i++;
        if (i != cur) {
            trace_h5_drop(in);
            in = H5Dopen2(src[i], c->path, H5P_DEFAULT);
            cur = i;
        }
        hsize_t so[3] = {0, (hsize_t)(g - t->parts[i].t0), 0}, dof[3] = {0, (hsize_t)(g - b0), 0},
                size = 0;
        int r1 = trace_col_rank(c) == 1;
        const hsize_t *s = r1 ? so + 1 : so, *o = r1 ? dof + 1 : dof;
        trace_zchunk z = {NULL, 0, 0};
        if (in < 0 || H5Dget_chunk_storage_size(in, s, &size) < 0 ||
            !(z.data = trace_scratch(t, size)) || H5Dread_chunk(in, H5P_DEFAULT, s, &z.mask, z.data) < 0)
            rc = -1;
        z.size = size;
        if (rc == 0 && final && chunk_final(t, c, &z) < 0) rc = -2;
        if (rc == 0 && H5Dwrite_chunk(dst, H5P_DEFAULT, z.mask, o, z.size, z.data) < 0) rc = -1;
        if (z.data != t->buf) free(z.data);
    }
    if (rc == -1) {
        char what[128];
        snprintf(what, sizeof what, "writing %s", c->path);
        trace_h5_fail(fpath, what);
    }
    trace_h5_drop(in);
    return rc ? -1 : 0;
}

// Copy n entries of per-document dataset id from part src (at so) to dst (at
// o), in slabs.
static int copy_entries(aha_trace *t, trace_dset_id id, hid_t src, int64_t so, hid_t dst, int64_t o, int64_t n) {
    const int64_t slab = 1 << 16;
    int64_t *buf = trace_scratch(t, (size_t)slab * sizeof *buf);
    for (int64_t k = 0; k < n; k += slab) {
        int64_t m = n - k < slab ? n - k : slab;
        if (!buf || trace_entries_read(t, src, id, so + k, m, buf) < 0) return -1;
        int e = trace_entries_write(t, dst, id, o + k, m, buf) < 0;
        trace_entries_free(id, m, buf);
        if (e) return -1;
    }
    return 0;
}

// Fill f with tokens [b0, b1) of every column and the per-document entries of
// the documents that end there (the final file: doc_offsets' entry 0 first),
// copied from the parts that map them. *taken: entries taken from a part that
// extends past b1 (that part keeps the rest).
int trace_write_range(aha_trace *t, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                       int64_t *taken) {
    int i0 = 0, i1, rc = -1;
    while (i0 < t->n_parts && t->parts[i0].v1 <= b0) i0++;
    i1 = i0;
    while (i1 < t->n_parts && t->parts[i1].v0 < b1) i1++;
    hid_t *src = calloc((size_t)t->n_parts + 1, sizeof *src), dd[TRACE_N_DOC_DSETS];
    int64_t *tail = NULL, n_tail = 0, n = final;
    char what[128];
    for (int j = 0; j < TRACE_N_DOC_DSETS; j++) dd[j] = -1;
    if (!src) {
        aha_err("%s: out of memory", fpath);
        return -1;
    }
    for (int i = 0; i < t->n_parts; i++) src[i] = -1;
    for (int i = i0; i < i1; i++)
        if ((src[i] = trace_part_open(t, &t->parts[i])) < 0) goto done;
    for (int k = 0; k < t->n_cols; k++) {
        const trace_col *c = &t->cols[k];
        hid_t d = trace_col_create(t, f, c, b1 - b0);
        int e = d < 0 || (final && trace_col_describe(d, c) < 0);
        if (e) { // reported before a close clears HDF5's error stack
            snprintf(what, sizeof what, "writing %s", c->path);
            trace_h5_fail(fpath, what);
        } else {
            e = copy_chunks(t, c, src, i0, d, b0, b1, final, fpath);
        }
        trace_h5_drop(d);
        if (e) goto done;
    }
    // Entries: all those of parts inside [b0, b1); of a part reaching past
    // b1 (a piece: few entries) those <= b1.
    const trace_part *p = i1 > i0 && t->parts[i1 - 1].v1 > b1 ? &t->parts[i1 - 1] : NULL;
    if (p) {
        n_tail = p->dv1 - p->dv0;
        if (!(tail = aha_malloc((size_t)n_tail + 1, sizeof *tail, "trace doc_offsets")) ||
            trace_entries_read(t, src[i1 - 1], TD_DOC_OFFSETS, p->dv0 - p->d0, n_tail, tail) < 0)
            goto fail_entries;
        int64_t k = 0;
        while (k < n_tail && tail[k] <= b1) k++;
        n_tail = k;
    }
    for (int i = i0; i < i1; i++) n += &t->parts[i] == p ? n_tail : t->parts[i].dv1 - t->parts[i].dv0;
    for (int j = 0; j < TRACE_N_DOC_DSETS; j++) { // doc_offsets: n entries; the doc rows one fewer in the final file
        int64_t zero = 0, o = j ? 0 : final;
        if ((dd[j] = trace_doc_create(t, f, TD_DOC_OFFSETS + j, n - (j ? final : 0))) < 0 ||
            (final && ((!j && trace_entries_write(t, dd[j], TD_DOC_OFFSETS, 0, 1, &zero) < 0) ||
                       trace_doc_describe(dd[j], TD_DOC_OFFSETS + j) < 0)))
            goto fail_entries;
        for (int i = i0; i < i1; i++) {
            const trace_part *q = &t->parts[i];
            int64_t m = q == p ? n_tail : q->dv1 - q->dv0;
            if (copy_entries(t, TD_DOC_OFFSETS + j, src[i], q->dv0 - q->d0, dd[j], o, m) < 0) goto fail_entries;
            o += m;
        }
    }
    if (taken) *taken = n_tail;
    rc = 0;
    goto done;
fail_entries:
    trace_h5_fail(fpath, "copying the documents' entries");
done:
    for (int j = 0; j < TRACE_N_DOC_DSETS; j++) trace_h5_drop(dd[j]);
    for (int i = 0; i < t->n_parts; i++) trace_h5_drop(src[i]);
    free(src);
    free(tail);
    return rc;
}

static int write_block(aha_trace *t, const char *tmp, int64_t b0, int64_t b1, int64_t *taken) {
    hid_t f = trace_file_create(tmp);
    if (f < 0) return -1;
    int rc = trace_write_range(t, f, tmp, b0, b1, 0, taken);
    if (trace_file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// ---- compaction ----

// Write tokens [b0, b1) as one block and let it replace the parts it covers.
static int block(aha_trace *t, int64_t b0, int64_t b1) {
    trace_part b = {
        .level = trace_block_level(t, b1 - b0), .t0 = b0, .n_tok = b1 - b0, .v0 = b0, .v1 = b1};
    char path[4096], tmp[4096];
    int64_t taken = 0;
    trace_part_name(t, b.name, 'b', b0, b1);
    trace_part_paths(t, b.name, path, tmp, sizeof path);
    if (write_block(t, tmp, b0, b1, &taken) < 0 || trace_publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    int i = 0, j;
    while (t->parts[i].v1 <= b0) i++;
    b.d0 = b.dv0 = t->parts[i].dv0;
    for (j = i; j < t->n_parts && t->parts[j].v1 <= b1; j++)
        if (trace_drop_push(t, t->parts[j].name) < 0) return -1;
    if (j < t->n_parts && t->parts[j].v0 < b1) t->parts[j].v0 = b1, t->parts[j].dv0 += taken;
    b.dv1 = j < t->n_parts ? t->parts[j].dv0 : t->n_docs + 1;
    b.n_doc = b.dv1 - b.dv0;
    memmove(t->parts + i, t->parts + j, (size_t)(t->n_parts - j) * sizeof *t->parts);
    t->n_parts -= j - i;
    return trace_parts_insert(t, i, &b);
}

// Keep the part count logarithmic in T: the full chunks after the blocks
// become a level-0 block once there are TRACE_BLOCK_CHUNKS of them, and
// FANOUT blocks of one level become one of the next. Blocks copy compressed
// chunks as stored: a chunk is compressed once and copied O(log T) times.
int trace_compact(aha_trace *t) {
    for (;;) {
        int nb = 0;
        while (nb < t->n_parts && t->parts[nb].level >= 0) nb++;
        int64_t bend = nb ? t->parts[nb - 1].v1 : 0, full = t->n_tok / t->tc * t->tc;
        int same = nb >= TRACE_FANOUT;
        for (int i = nb - TRACE_FANOUT; same && i < nb - 1; i++)
            same = t->parts[i].level == t->parts[nb - 1].level;
        int rc = 0;
        if (same)
            rc = block(t, t->parts[nb - TRACE_FANOUT].v0, bend);
        else if (full - bend >= TRACE_BLOCK_CHUNKS * t->tc)
            rc = block(t, bend, bend + TRACE_BLOCK_CHUNKS * t->tc);
        else
            return 0;
        if (rc < 0) return -1;
    }
}

