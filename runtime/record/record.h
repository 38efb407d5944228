// aha record / aha sweep: run a model over a dataset and write a trace.
#pragma once
#include <stdint.h>

#include "attention.h"
#include "grid.h"
#include "router.h"
#include "settings.h"

typedef enum { AHA_MODE_OBSERVE, AHA_MODE_ROUTED, AHA_MODE_SWEEP } aha_record_mode;
extern const aha_enum aha_record_modes; // "observe", "routed", "sweep": the trace's mode

typedef struct {
    aha_run_settings s;               // what decides the numbers, shared with aha fit
    const char *out;                  // -o: the trace
    const char *device, *dtype;       // "cpu" | "cuda"; the device's weight type (NULL = f32)
    int shard_i, shard_n;             // record documents d with d % shard_n == shard_i (n 0: all)
    double eps[AHA_MAX_EPS];          // dependency thresholds as given (the first drives oracle
                                      // routing); the kernels compare with their nearest floats
    int n_eps;
    int windows[AHA_MAX_WINDOWS];     // windows: summaries, --werr, and sweep's routed runs
    int n_windows;
    int werr;                         // record the window-output error
    int mass;                         // record the mass split (far context, sinks) per window
    const char *route;                // NULL = observe; else --route as typed (the trace's router)
    aha_policy policy;                // --route, parsed
    int routed_windows[AHA_MAX_WINDOWS]; // one routed run per window (per grid point)
    int n_routed;
    const aha_policy *grid;           // sweep --policies: a routed run per point and window
    int n_grid;                       // 0: every routed run follows route
    const char *heads_from;           // observe trace that ranks the heads of topk:K
    double tau;                       // learned-router threshold as typed; 0: 0.5, or the router file's
    const char *router_file;          // NULL, or a router file (aha fit) fused into q_proj
    int skip_bad;                     // report bad documents and go on
    int force, resume;                // overwrite an existing trace; continue it
    int quiet;                        // no progress bar or notes
    aha_record_mode mode;
    const char *command_line;
} aha_record_opts;

int aha_record_run(const aha_record_opts *o);
