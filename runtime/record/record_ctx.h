// One context's recorded results (record_ctx) and the thread that writes
// them into the trace while the next context runs (record_writer). aha
// record keeps two contexts' buffers and alternates: context c + 1 is
// computed into one while context c is compressed and written from the other.
#pragma once
#include <pthread.h>
#include <stdint.h>

#include "attention.h"
#include "sha256.h"
#include "tokenizer.h"
#include "trace.h"

typedef struct {
    int L, H, n_eps, n_werr, n_runs; // shapes (n_werr 0: no window errors)
    int n_mass;             // windows of the mass split (0: none)
    int T;                  // tokens of the context held
    int64_t doc_index;      // its document's number in the dataset (the trace's doc_index)
    char *source;           // its document's doc_source ([source_cap] bytes, owned)
    size_t source_cap;
    char sha256[AHA_SHA256_HEX]; // its document's digest (doc_sha256)
    int aha;                // learned router outputs present
    int32_t *ids;           // [ctx]
    uint32_t *dep;          // [n_eps, L, T, H]
    float *werr;            // [n_werr, L, T, H]
    float *mass_far;        // [n_mass, L, T, H] mass on keys sinks..t-w
    float *mass_sink;       // [L, T, H] mass on the sinks
    uint8_t *lgate;         // [L, T, H] learned decisions
    float *llogit;          // [L, T, H] learned router logits
    float **nll, **kl;      // [n_runs][ctx]
    uint8_t **gate;         // [n_runs][L, T, H] decisions followed (routed runs; [0] unused)
    aha_attn_flops *flops;  // [n_runs]
    char *text_buf;         // token pieces, NUL-separated
    size_t text_cap;
    const char **texts;     // [ctx] into text_buf
} record_ctx;

int record_ctx_init(record_ctx *c, int L, int H, int ctx, int n_eps, int n_werr, int n_mass, int n_runs, int aha);
// The context's document: its number, source and digest (copied). 0 or -1 (out of memory).
int record_ctx_doc(record_ctx *c, int64_t doc_index, const char *source, const char *sha256);
void record_ctx_free(record_ctx *c);
// The longest text a token id below vocab has in the trace (its pieces as
// the writer stores them; tok NULL: ids in decimal): the width of the
// trace's fixed-length token_text, into *width. 0, or -1 (out of memory).
int record_text_width(const aha_tokenizer *tok, int vocab, int *width);

typedef struct {
    aha_trace *trace;
    const aha_tokenizer *tok; // NULL: token texts are the ids in decimal
    pthread_t th;
    int busy;               // a context is being written
    record_ctx *job;
    int threads;            // its OpenMP team: the starting thread's (--threads)
    int rc;                 // of the last write
    char err[1024];         // its error
} record_writer;

// Write c into the trace on the writer thread (waits for the previous write
// first; -1 with its error if that failed). c must stay untouched until the
// next record_writer_wait.
int record_writer_start(record_writer *w, record_ctx *c);
// Wait for the write in progress, if any: 0, or -1 with its error.
int record_writer_wait(record_writer *w);
