// A run's dataset fingerprint against its documents' (aha_tr_dataset_check,
// trace_read.h): dataset_sha256 is the SHA-256 of every document's digest in
// the dataset's order, so traces that hold every document can be held to it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sha256.h"
#include "trace_read.h"

static int is_sha256(const char *s) { return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64; }

// Every trace's doc_sha256 (NULL for a trace without them) into sha[n]; 0 or -1.
static int read_digests(const aha_tr *trs, int n, char ***sha) {
    for (int k = 0; k < n; k++) {
        if (!trs[k].doc_source || !trs[k].n_docs) continue;
        if (!(sha[k] = aha_calloc((size_t)trs[k].n_docs, sizeof **sha, "doc_sha256")) ||
            aha_tr_read(&trs[k], TD_DOC_SHA256, 0, 0, trs[k].n_docs, sha[k]) != 0)
            return -1;
    }
    return 0;
}

int aha_tr_dataset_check(const aha_tr *trs, int n, int *checked) {
    const aha_trace_meta *m = &trs[0].m;
    *checked = 0;
    for (int k = 0; k < n; k++)
        if (trs[k].m.dataset_sha256[0] && !is_sha256(trs[k].m.dataset_sha256)) {
            aha_err("%s: root attribute dataset_sha256 is not a SHA-256 (64 lowercase hex digits)", trs[k].path);
            return -1;
        }
    int64_t n_all = 0, distinct = 0;
    int unordered = 0, rc = 0;
    char ***sha = aha_calloc((size_t)n, sizeof *sha, "doc_sha256");
    aha_tr_doc *order = sha ? aha_tr_doc_order(trs, n, &n_all, &unordered) : NULL;
    int whole = m->dataset_sha256[0] && m->dataset_docs > 0 && !m->max_tokens && !unordered;
    if (!order || read_digests(trs, n, sha) != 0) rc = -1;
    for (int k = 0; rc == 0 && k < n; k++) whole &= trs[k].complete && (trs[k].doc_source || !trs[k].n_docs);
    aha_sha256 *all = rc == 0 && whole ? aha_sha256_new() : NULL;
    if (whole && !all) rc = -1;
    for (int64_t i = 0; rc == 0 && i < n_all; i++) {
        const aha_tr_doc *o = &order[i], *prev = i ? &order[i - 1] : NULL;
        const char *s = sha[o->k] ? sha[o->k][o->d] : "";
        if (prev && prev->index == o->index && o->index >= 0) { // another context of the same document
            if (strcmp(s, sha[prev->k] ? sha[prev->k][prev->d] : "") != 0) {
                aha_err("%s: document %lld's contexts carry different doc_sha256: the trace was altered",
                        trs[o->k].path, (long long)o->index);
                rc = -1;
            }
            continue;
        }
        whole &= is_sha256(s) && o->index == distinct;
        distinct++;
        if (whole && all && aha_sha256_add(all, s, 64) != 0) rc = -1;
    }
    if (rc == 0 && whole && all && distinct == m->dataset_docs) {
        char hex[AHA_SHA256_HEX];
        if (aha_sha256_end(all, hex) != 0) rc = -1;
        all = NULL;
        if (rc == 0 && strcmp(hex, m->dataset_sha256) != 0) {
            aha_err("%s%s: dataset_sha256 is not the fingerprint of the %lld documents %s (their doc_sha256): a "
                    "document changed while it was recorded, or the trace was altered; record it again",
                    trs[0].path, n > 1 ? " and the other shards" : "", (long long)distinct,
                    n > 1 ? "they hold" : "it holds");
            rc = -1;
        }
        *checked = rc == 0;
    }
    if (all) { // not needed after all: finish it to free it
        char hex[AHA_SHA256_HEX];
        aha_sha256_end(all, hex);
    }
    for (int k = 0; sha && k < n; k++) {
        if (sha[k]) aha_tr_free_text(trs[k].n_docs, sha[k]);
        free(sha[k]);
    }
    free(sha);
    free(order);
    return rc;
}
