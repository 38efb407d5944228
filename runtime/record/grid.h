// aha sweep --policies: a grid of routed runs (policy families, each at a
// list of numbers) x windows, run in lockstep with one full-attention
// reference per context. docs/sweeps.md.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "router.h"

#define AHA_GRID_MAX 64 // points one --policies list holds (a trace holds 64 runs in all)

// Parse "oracle:0.01,0.1 werr:0.05 random:0.1,0.5 topk:2,4 learned:0.5 local"
// (families separated by spaces or ';') into pts[*n], a policy per point
// (oracle: eps; werr: threshold; learned: tau; random: P; topk: k; local:
// NaN). 0, or -1 with a message.
int aha_grid_parse(const char *spec, aha_policy *pts, int max, int *n);
// The grid as one name, its points by family in the order first met:
// "grid oracle:0.1,0.3 learned:0.5 local" (the trace's router attribute).
void aha_grid_describe(const aha_policy *pts, int n, char *buf, size_t size);
// The run's name: "oracle_e0.1_w128", "werr_t0.05_w128", "learned_tau0.5_w128",
// "random_p0.3_w128", "topk_k4_w128", "local_w128".
void aha_grid_name(const aha_policy *p, int window, char *buf, size_t size);
// The router of point p at a window. heads_global: [L, H] topk's heads, 1 =
// global (copied), else NULL. has_aha: the model has router rows (learned).
int aha_grid_router(aha_router *r, const aha_policy *p, int n_layers, int n_heads, int has_aha,
                    uint64_t seed, const uint8_t *heads_global);
// Per (layer, head), how often the observe trace at path routes global by its
// oracle (d at its first eps > w) at each window w[i]: counts[n_w, L, H] over
// every decision; -1 for the heads of a natively local layer (the trace's
// layer_window), which topk then picks last. 0, or -1 with a message (e.g. the
// trace's L, H differ).
int aha_grid_head_counts(const char *path, int n_layers, int n_heads, const int *w, int n_w, int64_t *counts);
// The k heads of counts[L * H] with the most global decisions (ties: the lower
// layer, then head, first) as heads[L * H] = 1.
void aha_grid_topk(const int64_t *counts, int n, int k, uint8_t *heads);
