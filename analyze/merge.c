// aha merge: shards of one run (aha record --shard, or any traces aha report
// would combine) into one trace file, document by document through the
// trace writer -- so the result is an ordinary trace (the notebook and h5py
// read one file) and as crash-safe to write as a recording.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "report.h"
#include "trace.h"
#include "trace_read.h"

typedef struct {               // one document's buffers, sized for the longest
    int32_t *tokens;           // [n]
    char **text;               // [n]
    uint32_t *dep;             // [n_eps, L, n, H]
    float *werr;               // [n_windows, L, n, H]
    uint8_t *gate;             // [L, n, H]
    float *logit;              // [L, n, H]
    float *nll, *kl;           // [n_runs, n]
    uint8_t *run_gate;         // [n_runs, L, n, H]
} doc_buf;

// Document d of tr (tokens [t0, t0+n)) into the writer.
static int copy_doc(aha_trace *out, const aha_tr *tr, int64_t t0, int n, int first, doc_buf *b) {
    const size_t lnh = (size_t)tr->n_layers * n * tr->n_heads;
    char name[160];
    int rc = aha_tr_read_1d(tr, "tokens", t0, n, 'i', b->tokens) || aha_tr_read_text(tr, t0, n, b->text);
    if (rc) return -1;
    for (int e = 0; !rc && e < tr->n_eps; e++)
        rc = aha_tr_read_lth(tr, aha_tr_dep_name(tr, e, name, sizeof name), t0, n, 0, b->dep + e * lnh);
    for (int w = 0; !rc && tr->has_werr && w < tr->n_windows; w++)
        rc = aha_tr_read_lth_f32(tr, aha_tr_werr_name(tr, w, name, sizeof name), t0, n, b->werr + w * lnh);
    if (!rc && tr->has_gate)
        rc = aha_tr_read_lth(tr, "gate", t0, n, 1, b->gate) || aha_tr_read_lth_f32(tr, "router_logit", t0, n, b->logit);
    aha_trace_run_doc rd[AHA_TR_MAX_RUNS];
    for (int r = 0; !rc && r < tr->n_runs; r++) {
        const aha_tr_run *run = &tr->runs[r];
        float *nll = b->nll + (size_t)r * n, *kl = b->kl + (size_t)r * n;
        uint8_t *g = run->has_gate ? b->run_gate + r * lnh : NULL;
        snprintf(name, sizeof name, "runs/%s/nll", run->name);
        rc = aha_tr_read_1d(tr, name, t0, n, 'f', nll);
        snprintf(name, sizeof name, "runs/%s/kl", run->name);
        rc = rc || aha_tr_read_1d(tr, name, t0, n, 'f', kl);
        snprintf(name, sizeof name, "runs/%s/gate", run->name);
        rc = rc || (g && aha_tr_read_lth(tr, name, t0, n, 1, g));
        // FLOPs are kept per run, not per document: the shard's totals ride on its first
        rd[r] = (aha_trace_run_doc){nll, kl, g, first ? run->flops_executed : 0, first ? run->flops_full : 0};
    }
    if (!rc) {
        aha_trace_doc d = {n, b->tokens, (const char *const *)b->text, tr->has_gate ? b->gate : NULL,
                           tr->has_gate ? b->logit : NULL, b->dep, tr->has_werr ? b->werr : NULL, rd};
        rc = aha_trace_append(out, &d);
    }
    aha_tr_free_text(tr, n, b->text);
    return rc ? -1 : 0;
}

// Every document of tr (offsets: its doc_offsets) into the writer.
static int merge_one(aha_trace *out, const aha_tr *tr, const int64_t *offs, doc_buf *b) {
    for (int64_t d = 0; d < tr->n_docs; d++)
        if (copy_doc(out, tr, offs[d], (int)(offs[d + 1] - offs[d]), d == 0, b) != 0) return -1;
    return 0;
}

// doc_offsets of tr (malloc'd), and the longest document into *len.
static int64_t *read_offsets(const aha_tr *tr, int *len) {
    int64_t *offs = aha_malloc((size_t)tr->n_docs + 1, sizeof *offs, "doc_offsets");
    if (!offs || aha_tr_read_1d(tr, "doc_offsets", 0, tr->n_docs + 1, 'l', offs) != 0) {
        free(offs);
        return NULL;
    }
    for (int64_t d = 0; d < tr->n_docs; d++)
        if (offs[d + 1] - offs[d] > *len) *len = (int)(offs[d + 1] - offs[d]);
    return offs;
}

static int doc_buf_init(doc_buf *b, const aha_tr *tr, int n) {
    const size_t lnh = (size_t)tr->n_layers * n * tr->n_heads, R = (size_t)tr->n_runs;
    b->tokens = aha_malloc((size_t)n, sizeof *b->tokens, "merge");
    b->text = aha_calloc((size_t)n, sizeof *b->text, "merge");
    b->dep = aha_malloc((size_t)(tr->n_eps ? tr->n_eps : 1) * lnh, sizeof *b->dep, "merge");
    b->werr = aha_malloc((size_t)(tr->has_werr ? tr->n_windows : 1) * lnh, sizeof *b->werr, "merge");
    b->gate = aha_malloc(lnh, 1, "merge");
    b->logit = aha_malloc(lnh, sizeof *b->logit, "merge");
    b->nll = aha_malloc((R ? R : 1) * (size_t)n, sizeof *b->nll, "merge");
    b->kl = aha_malloc((R ? R : 1) * (size_t)n, sizeof *b->kl, "merge");
    b->run_gate = aha_malloc((R ? R : 1) * lnh, 1, "merge");
    return b->tokens && b->text && b->dep && b->werr && b->gate && b->logit && b->nll && b->kl && b->run_gate
               ? 0 : -1;
}

static void doc_buf_free(doc_buf *b) {
    free(b->tokens), free(b->text), free(b->dep), free(b->werr), free(b->gate), free(b->logit);
    free(b->nll), free(b->kl), free(b->run_gate);
}

int aha_cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    int force = 0;
    const aha_flag flags[] = {{"-o", FLAG_STR, &out, "the merged trace (required)"},
                              {"--force", FLAG_BOOL, &force, "overwrite an existing file"},
                              {NULL, 0, NULL, NULL}};
    const char *pos[AHA_MAX_TRACES];
    int n;
    int rc = aha_traces_parse(argc, argv, "usage: aha merge SHARD... -o merged.h5", flags, pos, &n);
    if (rc) return rc < 0 ? 0 : rc;
    if (!out) {
        aha_err("-o FILE is required");
        return aha_cli_fail();
    }
    aha_tr *trs = aha_calloc((size_t)n, sizeof *trs, "traces");
    int64_t *offs[AHA_MAX_TRACES] = {0};
    aha_trace *t = NULL;
    doc_buf b = {0};
    int opened = 0, len = 1;
    rc = -1;
    for (; trs && opened < n; opened++)
        if (aha_tr_open(&trs[opened], pos[opened]) != 0 || (opened && aha_tr_check_same(&trs[0], &trs[opened]) != 0) ||
            !(offs[opened] = read_offsets(&trs[opened], &len))) {
            opened += trs[opened].file >= 0;
            goto done;
        }
    const aha_tr *f = &trs[0];
    float eps[AHA_TR_MAX_EPS];
    for (int e = 0; e < f->n_eps; e++) eps[e] = (float)f->eps[e];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "aha merge of %d traces, the first %s", n, pos[0]);
    aha_trace_meta m = {f->model, f->arch, f->n_layers, f->n_heads, f->n_kv_heads, f->head_dim, f->vocab,
                        f->has_gate, f->router, (float)f->tau, eps, f->n_eps, f->windows, f->n_windows, f->sinks,
                        f->has_werr, f->mode, f->dataset, cmd, f->device, "", 0};
    if (doc_buf_init(&b, f, len) != 0 || aha_trace_create(&t, out, &m, force) != 0) goto done;
    for (int r = 0; r < f->n_runs; r++)
        if (aha_trace_add_run(t, f->runs[r].name, f->runs[r].policy, f->runs[r].window) != 0) goto done;
    for (int k = 0; k < n; k++)
        if (merge_one(t, &trs[k], offs[k], &b) != 0) goto done;
    rc = aha_trace_close(t);
    t = NULL;
done:
    aha_trace_free(t);
    doc_buf_free(&b);
    for (int k = 0; k < opened; k++) aha_tr_close(&trs[k]), free(offs[k]);
    free(trs);
    if (rc != 0) return aha_cli_fail();
    printf("merged %d traces into %s\n", n, out);
    return 0;
}
