// Blocks and the final file: a range along T copied from the parts that map
// it, compressed chunks byte for byte; and compaction, which merges parts
// into blocks as the store grows.
#include "store_block.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "trace_codec.h"

// Chunk (stored as z) of column c compressed, when it is not: the final
// file holds no uncompressed chunk. Its checksum is verified first. 0, or
// -1 with a message.
static int chunk_final(const trace_store *s, const store_col *c, trace_zchunk *z) {
    if (z->mask == 0) return 0;
    trace_zchunk out;
    int rc = trace_codec_compress_raw(z, store_col_bytes(c, s->tc), c->size, &out);
    if (rc != 0)
        aha_err("%s: %s: its last chunk %s", s->parts_dir, c->c.path,
                rc == -2 ? "fails its checksum: a part file is damaged" : "cannot be compressed (out of memory?)");
    else
        *z = out;
    return rc ? -1 : 0;
}

// Copy [b0, b1) along T of column c into dst, chunk by chunk, compressed
// bytes as they are (final: the uncompressed last chunk compressed);
// parts[i] is the first part that maps b0. 0, or -1 with a message naming
// fpath (HDF5's cause taken before any other call clears it).
static int copy_chunks(trace_store *s, const store_col *c, hid_t *src, int i, hid_t dst, int64_t b0, int64_t b1,
                       int final, const char *fpath) {
    hid_t in = -1;
    int cur = -1;
    int rc = 0;
    for (int64_t g = b0; g < b1 && rc == 0; g += s->tc) {
        while (s->parts[i].v1 <= g) i++;
        if (i != cur) {
            trace_h5_drop(in);
            in = H5Dopen2(src[i], c->c.path, H5P_DEFAULT);
            cur = i;
        }
        hsize_t so[3] = {0, (hsize_t)(g - s->parts[i].t0), 0};
        hsize_t dof[3] = {0, (hsize_t)(g - b0), 0};
        hsize_t size = 0;
        const int r1 = c->c.rank == 1;
        const hsize_t *at = r1 ? so + 1 : so;
        const hsize_t *o = r1 ? dof + 1 : dof;
        trace_zchunk z = {NULL, 0, 0};
        if (in < 0 || H5Dget_chunk_storage_size(in, at, &size) < 0 || !(z.data = store_scratch(s, size)) ||
            H5Dread_chunk(in, H5P_DEFAULT, at, &z.mask, z.data) < 0)
            rc = -1;
        z.size = size;
        if (rc == 0 && final && chunk_final(s, c, &z) < 0) rc = -2;
        if (rc == 0 && H5Dwrite_chunk(dst, H5P_DEFAULT, z.mask, o, z.size, z.data) < 0) rc = -1;
        if (z.data != s->buf) free(z.data);
    }
    if (rc == -1) {
        char what[128];
        snprintf(what, sizeof what, "writing %s", c->c.path);
        trace_h5_fail(fpath, what);
    }
    trace_h5_drop(in);
    return rc ? -1 : 0;
}

// Copy n values of per-record column c from part src (at so) to dst (at o),
// in slabs.
static int copy_recs(trace_store *s, const store_col *c, hid_t src, int64_t so, hid_t dst, int64_t o, int64_t n) {
    const int64_t slab = 1 << 16;
    trace_store_val *v = store_scratch(s, (size_t)slab * sizeof *v);
    for (int64_t k = 0; k < n; k += slab) {
        const int64_t m = n - k < slab ? n - k : slab;
        if (!v || store_recs_read(src, c, so + k, m, v, s->path) < 0) return -1;
        int e = store_recs_write(dst, c, o + k, m, v, s->path) < 0;
        store_recs_free(c, m, v);
        if (e) return -1;
    }
    return 0;
}

// The per-record values of the records that end in [b0, b1) into f, copied
// from parts [i0, i1) (the final file: the ends' value 0 first, every
// column described). *taken: values taken from a part that extends past b1
// (that part keeps the rest). 0, or -1 with a message naming fpath.
static int write_recs(trace_store *s, hid_t f, const char *fpath, const hid_t *src, int i0, int i1, int64_t b1,
                      int final, int64_t *taken) {
    hid_t *dd = calloc((size_t)s->n_recs + 1, sizeof *dd);
    trace_store_val *tail = NULL;
    int64_t n_tail = 0;
    int64_t n = final;
    int rc = -1;
    if (!dd) {
        aha_err("%s: out of memory", fpath);
        return -1;
    }
    for (int j = 0; j < s->n_recs; j++) dd[j] = -1;
    // All values of parts inside [b0, b1); of a part reaching past b1 (a
    // piece: few values) those of records that end by b1.
    const store_part *p = i1 > i0 && s->parts[i1 - 1].v1 > b1 ? &s->parts[i1 - 1] : NULL;
    if (p) {
        n_tail = p->dv1 - p->dv0;
        if (!(tail = aha_malloc((size_t)n_tail + 1, sizeof *tail, "store values")) ||
            store_recs_read(src[i1 - 1], &s->recs[0], p->dv0 - p->d0, n_tail, tail, s->path) < 0)
            goto done;
        int64_t k = 0;
        while (k < n_tail && tail[k].i <= b1) k++;
        n_tail = k;
    }
    for (int i = i0; i < i1; i++) n += &s->parts[i] == p ? n_tail : s->parts[i].dv1 - s->parts[i].dv0;
    for (int j = 0; j < s->n_recs; j++) { // the ends: n values; the others one fewer in the final file
        const store_col *c = &s->recs[j];
        const trace_store_val zero = {.i = 0};
        int64_t o = j ? 0 : final;
        if ((dd[j] = store_col_create(f, c, n - (j ? final : 0), STORE_REC_CHUNK)) < 0) goto done;
        if (final && !j && store_recs_write(dd[j], c, 0, 1, &zero, s->path) < 0) goto done;
        if (final && store_col_describe(dd[j], c) < 0) goto done;
        for (int i = i0; i < i1; i++) {
            const store_part *q = &s->parts[i];
            const int64_t m = q == p ? n_tail : q->dv1 - q->dv0;
            if (copy_recs(s, c, src[i], q->dv0 - q->d0, dd[j], o, m) < 0) goto done;
            o += m;
        }
    }
    if (taken) *taken = n_tail;
    rc = 0;
done:
    if (rc) trace_h5_fail(fpath, "copying the records' values");
    for (int j = 0; j < s->n_recs; j++) trace_h5_drop(dd[j]);
    free(dd);
    free(tail);
    return rc;
}

// Fill f with [b0, b1) along T of every column and the per-record values of
// the records that end there, copied from the parts that map them.
int store_write_range(trace_store *s, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                      int64_t *taken) {
    int i0 = 0;
    int rc = -1;
    while (i0 < s->n_parts && s->parts[i0].v1 <= b0) i0++;
    int i1 = i0;
    while (i1 < s->n_parts && s->parts[i1].v0 < b1) i1++;
    hid_t *src = calloc((size_t)s->n_parts + 1, sizeof *src);
    if (!src) {
        aha_err("%s: out of memory", fpath);
        return -1;
    }
    for (int i = 0; i < s->n_parts; i++) src[i] = -1;
    for (int i = i0; i < i1; i++)
        if ((src[i] = store_part_open(s, &s->parts[i])) < 0) goto done;
    for (int k = 0; k < s->n_cols; k++) {
        const store_col *c = &s->cols[k];
        hid_t d = store_col_create(f, c, b1 - b0, s->tc);
        int e = d < 0 || (final && store_col_describe(d, c) < 0);
        if (e) { // reported before a close clears HDF5's error stack
            char what[128];
            snprintf(what, sizeof what, "writing %s", c->c.path);
            trace_h5_fail(fpath, what);
        } else {
            e = copy_chunks(s, c, src, i0, d, b0, b1, final, fpath);
        }
        trace_h5_drop(d);
        if (e) goto done;
    }
    rc = write_recs(s, f, fpath, src, i0, i1, b1, final, taken);
done:
    for (int i = 0; i < s->n_parts; i++) trace_h5_drop(src[i]);
    free(src);
    return rc;
}

static int write_block(trace_store *s, const char *tmp, int64_t b0, int64_t b1, int64_t *taken) {
    hid_t f = trace_file_create(tmp);
    if (f < 0) return -1;
    int rc = store_write_range(s, f, tmp, b0, b1, 0, taken);
    if (trace_file_close(f, tmp) < 0) rc = -1;
    return rc;
}

// ---- compaction ----

// Write [b0, b1) as one block and let it replace the parts it covers.
static int block(trace_store *s, int64_t b0, int64_t b1) {
    store_part b = {.level = store_block_level(s, b1 - b0), .t0 = b0, .n_tok = b1 - b0, .v0 = b0, .v1 = b1};
    char path[4096], tmp[4096];
    int64_t taken = 0;
    store_part_name(s, b.name, 'b', b0, b1);
    store_part_paths(s, b.name, path, tmp, sizeof path);
    if (write_block(s, tmp, b0, b1, &taken) < 0 || store_publish(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    int i = 0;
    int j;
    while (s->parts[i].v1 <= b0) i++;
    b.d0 = s->parts[i].dv0;
    b.dv0 = b.d0;
    for (j = i; j < s->n_parts && s->parts[j].v1 <= b1; j++)
        if (store_drop_push(s, s->parts[j].name) < 0) return -1;
    if (j < s->n_parts && s->parts[j].v0 < b1) { // a piece past b1 keeps its rest
        s->parts[j].v0 = b1;
        s->parts[j].dv0 += taken;
    }
    b.dv1 = j < s->n_parts ? s->parts[j].dv0 : s->n_rec + 1;
    b.n_doc = b.dv1 - b.dv0;
    memmove(s->parts + i, s->parts + j, (size_t)(s->n_parts - j) * sizeof *s->parts);
    s->n_parts -= j - i;
    return store_parts_insert(s, i, &b);
}

// Keep the part count logarithmic in T: the full chunks after the blocks
// become a level-0 block once there are STORE_BLOCK_CHUNKS of them, and
// FANOUT blocks of one level become one of the next. Blocks copy compressed
// chunks as stored: a chunk is compressed once and copied O(log T) times.
int store_compact(trace_store *s) {
    for (;;) {
        int nb = 0;
        while (nb < s->n_parts && s->parts[nb].level >= 0) nb++;
        const int64_t bend = nb ? s->parts[nb - 1].v1 : 0;
        const int64_t full = s->n_tok / s->tc * s->tc;
        int same = nb >= STORE_FANOUT;
        for (int i = nb - STORE_FANOUT; same && i < nb - 1; i++)
            same = s->parts[i].level == s->parts[nb - 1].level;
        int rc = 0;
        if (same)
            rc = block(s, s->parts[nb - STORE_FANOUT].v0, bend);
        else if (full - bend >= STORE_BLOCK_CHUNKS * s->tc)
            rc = block(s, bend, bend + STORE_BLOCK_CHUNKS * s->tc);
        else
            return 0;
        if (rc < 0) return -1;
    }
}
