// Traces into one (aha_trace_merge, trace.h): every document of each, read
// with the reader and appended through the writer in the dataset's order
// (doc_index), so the result is an ordinary trace, as crash-safe to write as a
// recording, and the merge of a run's shards is its single-process trace.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "err.h"
#include "trace.h"
#include "trace_read.h"

typedef struct {       // one document's values, sized for the longest
    char *v[TD_COUNT]; // each row along the tokens: [instances][n] or [instances][L, n, H], as the
                       // reader gives them (float16: as float; text: char *)
} doc_buf;

// Bytes of one value of row id as the reader gives it.
static size_t read_size(trace_dset_id id) {
    const trace_type ty = trace_dsets[id].type;
    return ty == TY_F16 ? sizeof(float) : trace_types[ty].size;
}

// Where instance i of row id starts in b (a document of n tokens).
static char *at(const doc_buf *b, const aha_tr *tr, trace_dset_id id, int i, int n) {
    return b->v[id] + (size_t)i * (size_t)trace_row_elems(id, &tr->m, n) * read_size(id);
}

// Document doc of tr, at tokens [t0, t0+n), into the writer: every row tr
// has read (position too, checked by the reader; the writer numbers
// positions itself), and the document's fields pointed where each row says;
// first: the first of tr's written, which carries tr's FLOP totals.
static int copy_doc(aha_trace *out, const aha_tr *tr, int64_t t0, int n, const aha_tr_doc *doc, int first, doc_buf *b) {
    aha_trace_doc d = {.n = n, .source = "", .sha256 = ""};
    aha_trace_run_doc rd[AHA_TRACE_MAX_RUNS] = {{0}};
    char *text[TD_COUNT] = {0}; // the per-document strings read (freed below)
    int rc = 0;
    d.runs = rd;
    for (int id = 0; id < TD_COUNT && !rc; id++) {
        const trace_dset *ds = &trace_dsets[id];
        const int along = ds->shape == SH_T || ds->shape == SH_LTH;
        for (int i = 0; !rc && ds->from != FROM_ENDS && i < aha_tr_n_instances(tr, id); i++) {
            if (!aha_tr_has(tr, id, i)) continue;
            if (!along) { // one value per document: a string, or the number itself into its field
                void *v = ds->type == TY_STR ? (void *)&text[id] : (void *)((char *)&d + ds->at);
                rc = aha_tr_read(tr, id, i, doc->d, 1, v);
                if (ds->type == TY_STR) *(const char **)((char *)&d + ds->at) = text[id];
                continue;
            }
            rc = aha_tr_read(tr, id, i, t0, n, at(b, tr, id, i, n));
            if (ds->from == FROM_RUN) *(const void **)((char *)&rd[i] + ds->at) = at(b, tr, id, i, n);
            if (ds->from == FROM_DOC) *(const void **)((char *)&d + ds->at) = b->v[id]; // from its first instance
        }
    }
    d.doc_index = doc->index; // the order's: also for a trace written before doc_index
    // FLOPs are kept per run, not per document: the trace's totals ride on its first
    for (int r = 0; r < tr->n_runs; r++) {
        rd[r].flops_executed = first ? tr->runs[r].flops_executed : 0;
        rd[r].flops_full = first ? tr->runs[r].flops_full : 0;
    }
    if (!rc) rc = aha_trace_append(out, &d);
    for (int id = 0; id < TD_COUNT; id++) {
        if (trace_dsets[id].type != TY_STR) continue;
        if (trace_dsets[id].shape == SH_T && aha_tr_has(tr, id, 0)) aha_tr_free_text(n, (char **)b->v[id]);
        free(text[id]);
    }
    return rc ? -1 : 0;
}

// The longest document of tr, at least *len, into *len.
static void longest_doc(const aha_tr *tr, int *len) {
    for (int64_t d = 0; d < tr->n_docs; d++)
        if (tr->doc_offsets[d + 1] - tr->doc_offsets[d] > *len) *len = (int)(tr->doc_offsets[d + 1] - tr->doc_offsets[d]);
}

// The width of string row id's values in trs[0..n), the widest, into the
// meta m: a version-1 input's variable-length strings (width 0) are
// measured, block tokens at a time.
static int merge_width(const aha_tr *trs, int n, trace_dset_id id, aha_trace_meta *m) {
    if (!trace_str_width_off[id]) return 0; // a row of one width in every trace
    int *w = aha_trace_str_width_at(m, id), block = 1 << 16;
    char **text = aha_calloc((size_t)block, sizeof *text, "merge");
    *w = 1;
    for (int k = 0; text && k < n; k++) {
        if (!aha_tr_has(&trs[k], id, 0)) continue; // written before the row: its strings are ""
        int have = aha_trace_str_width(&trs[k].m, id);
        if (have > *w) *w = have;
        for (int64_t t0 = 0; !have && t0 < aha_tr_len(&trs[k], id); t0 += block) {
            int64_t b = aha_tr_len(&trs[k], id) - t0 < block ? aha_tr_len(&trs[k], id) - t0 : block;
            if (aha_tr_read(&trs[k], id, 0, t0, b, text) != 0) {
                free(text);
                return -1;
            }
            for (int64_t i = 0; i < b; i++)
                if (strlen(text[i]) > (size_t)*w) *w = (int)strlen(text[i]);
            aha_tr_free_text(b, text);
        }
    }
    free(text);
    if (*w > AHA_TRACE_MAX_WIDTH) aha_err("%s: %s holds a string of %d bytes, more than a trace's %d", trs[0].path,
                                          trace_dsets[id].path, *w, AHA_TRACE_MAX_WIDTH);
    return text && *w <= AHA_TRACE_MAX_WIDTH ? 0 : -1;
}

static int doc_buf_init(doc_buf *b, const aha_tr *tr, int n) {
    for (int id = 0; id < TD_COUNT; id++) {
        const int k = aha_tr_n_instances(tr, id);
        if (trace_dsets[id].shape != SH_T && trace_dsets[id].shape != SH_LTH) continue;
        const size_t elems = (size_t)(k > 0 ? k : 1) * (size_t)trace_row_elems(id, &tr->m, n);
        if (!(b->v[id] = aha_calloc(elems, read_size(id), "merge"))) return -1;
    }
    return 0;
}

static void doc_buf_free(doc_buf *b) {
    for (int id = 0; id < TD_COUNT; id++) free(b->v[id]);
}

// Room for the merge on out's file system, checked before anything is
// written: the merged trace is about as large as its inputs together, and
// the writer's peak is aha_trace_peak_bytes of that; an old trace at out
// (--force) is freed first. 0, or -1 with the figures.
static int space_check(const char *out, const aha_tr *trs, int n, const aha_trace_meta *m) {
    int64_t inputs = 0, old = 0;
    struct stat st;
    for (int k = 0; k < n; k++) inputs += stat(trs[k].path, &st) == 0 ? (int64_t)st.st_size : 0;
    if (stat(out, &st) == 0) old = (int64_t)st.st_size;
    char dir[4096];
    const char *slash = strrchr(out, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (slash == out ? 1 : (int)(slash - out)) : 1, slash ? out : ".");
    struct statvfs fs;
    int64_t need = aha_trace_peak_bytes(m, trs[0].runs, trs[0].n_runs, inputs);
    if (need < 0 || statvfs(dir, &fs) != 0) return need < 0 ? -1 : 0; // a file system that does not say: try
    const int64_t avail = (int64_t)fs.f_bavail * (int64_t)fs.f_frsize + old;
    if (avail >= need) return 0;
    aha_err("%s: merging needs about %.1f MB free there at its peak (the merged trace about %.1f MB, as its inputs; "
            "docs/trace-format.md, \"Disk space\"), and %.1f MB are free: nothing written",
            out, need / 1e6, inputs / 1e6, avail / 1e6);
    return -1;
}

// An input that did not finish is refused, naming how far it got and how to
// finish it: a merge writes a complete trace, which must not hide a gap.
static int check_finished(const aha_tr *tr) {
    if (tr->complete) return 0;
    aha_tr_attrs a;
    const char *cmd = aha_tr_attrs_read(tr, &a) == 0 && a.root.command_line ? a.root.command_line : NULL;
    aha_err("%s: unfinished (%lld contexts, %lld tokens recorded; the run stopped before its end): finish it "
            "first with aha record --resume and its settings%s%s%s, then merge",
            tr->path, (long long)tr->n_docs, (long long)tr->n_tokens, cmd ? " (its command was: " : "", cmd ? cmd : "",
            cmd ? ")" : "");
    if (cmd) aha_tr_attrs_free(&a);
    return -1;
}

int aha_trace_merge(const char *out, const char *const *in, int n, const char *command_line, int force,
                    int *missing, int *unordered) {
    aha_tr *trs = aha_calloc((size_t)n, sizeof *trs, "traces");
    aha_trace *t = NULL;
    doc_buf b = {0};
    char *shards = NULL;
    aha_tr_doc *order = NULL;
    unsigned char *started = aha_calloc((size_t)n, 1, "traces"); // an input's first document is written
    int64_t n_all = 0;
    int opened = 0, len = 1, rc = -1;
    for (; trs && opened < n; opened++) {
        if (aha_tr_open(&trs[opened], in[opened]) != 0 || check_finished(&trs[opened]) != 0 ||
            (opened && aha_tr_check_same(&trs[0], &trs[opened]) != 0)) {
            opened++; // aha_tr_close is safe on a failed open
            goto done;
        }
        longest_doc(&trs[opened], &len);
    }
    aha_trace_meta m = trs ? trs[0].m : (aha_trace_meta){0};
    int checked;
    if (!trs || !started || aha_tr_check_shards(trs, n, &shards, missing) != 0 ||
        aha_tr_dataset_check(trs, n, &checked) != 0 || !(order = aha_tr_doc_order(trs, n, &n_all, unordered)))
        goto done;
    m.command_line = command_line;
    m.shard = shards;
    m.chunk_tokens = 0;
    for (int id = 0; id < TD_COUNT; id++)
        if (trace_dsets[id].type == TY_STR && merge_width(trs, n, id, &m) != 0) goto done;
    if (space_check(out, trs, n, &m) != 0 || doc_buf_init(&b, &trs[0], len) != 0 ||
        aha_trace_create(&t, out, &m, force) != 0)
        goto done;
    for (int r = 0; r < trs[0].n_runs; r++)
        if (aha_trace_add_run_param(t, trs[0].runs[r].name, trs[0].runs[r].policy, trs[0].runs[r].window,
                                    trs[0].runs[r].param) != 0)
            goto done;
    for (int64_t i = 0; i < n_all; i++) {
        const aha_tr_doc *o = &order[i];
        const int64_t *of = trs[o->k].doc_offsets;
        if (copy_doc(t, &trs[o->k], of[o->d], (int)(of[o->d + 1] - of[o->d]), o, !started[o->k], &b) != 0)
            goto done;
        started[o->k] = 1;
    }
    rc = aha_trace_close(t);
    t = NULL;
done:
    aha_trace_discard(t); // an input failed: no partial output
    doc_buf_free(&b);
    for (int k = 0; k < opened; k++) aha_tr_close(&trs[k]);
    free(trs);
    free(shards);
    free(order);
    free(started);
    return rc;
}

void aha_trace_merge_unordered(const char *out, int unordered, int n) {
    fprintf(stderr, "aha: warning: %s: %d of the %d traces have no doc_index (written by an older aha): their "
                    "documents are in the order given, not the dataset's\n", out, unordered, n);
}
