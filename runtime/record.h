// aha record / aha sweep: run a model over a dataset and write a trace.
#pragma once
#include <stdint.h>

#include "attention.h"
#include "dataset.h"
#include "grid.h"
#include "model.h"

#define AHA_RECORD_CTX 2048 // the default context: the model's, at most this

typedef struct {
    const char *model, *data, *out;   // paths
    const char *device, *dtype;       // "cpu" | "cuda"; the device's weight type (NULL = f32)
    const char *weights;              // --weights: "stored" | "f32" (NULL = stored)
    int shard_i, shard_n;             // record documents d with d % shard_n == shard_i (n 0: all)
    int ctx;                          // tokens per context, longer documents are split; 0: the
                                      // model's trained context, at most AHA_RECORD_CTX
    int batch;                        // tokens per forward call
    int64_t max_docs, max_tokens;     // 0 = all
    double eps[AHA_MAX_EPS];          // dependency thresholds as given (the first drives oracle
                                      // routing); the kernels compare with their nearest floats
    int n_eps;
    int windows[AHA_MAX_WINDOWS];     // windows: summaries, --werr, and sweep's routed runs
    int n_windows;
    int sinks;                        // always-visible first tokens
    int werr;                         // record the window-output error
    int mass;                         // record the mass split (far context, sinks) per window
    const char *route;                // NULL = observe; else a router policy
    int routed_windows[AHA_MAX_WINDOWS]; // one routed run per window (per grid point)
    int n_routed;
    const aha_grid_point *grid;       // sweep --policies: a routed run per point and window
    int n_grid;                       // 0: every routed run follows route
    const char *heads_from;           // observe trace that ranks the heads of topk:K
    double tau;                       // learned-router threshold as typed; 0: 0.5, or the router file's
    const char *router_file;          // NULL, or a router file (aha fit) fused into q_proj
    uint64_t seed;                    // random router
    const char *format, *text_field;  // dataset format and JSONL field
    int skip_bad, force, resume, quiet;
    const char *mode;                 // "observe", "routed" or "sweep"
    const char *command_line;
} aha_record_opts;

int aha_record_run(const aha_record_opts *o);

// Token ids of one document (with BOS when the tokenizer wants one): *ids
// [*n], owned by the caller. 0 or -1 with an error naming the document.
int aha_doc_ids(const aha_model *m, const aha_doc *doc, int32_t **ids, size_t *n);
