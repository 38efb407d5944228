// Routers: who decides, per (layer, token, head), between full causal
// attention (gate 1, "global") and a sliding window (gate 0, "local").
#pragma once
#include <stdint.h>

#include "trace_policy.h" // the policies (aha_router_kind) and their traits

typedef struct {        // a routing policy as the command line gives it, parsed once
    aha_router_kind kind;
    double param;       // its number: random's P; in a sweep grid also oracle's eps,
                        // werr's threshold, learned's tau, topk's k; NaN: none
    const char *file;   // heads: the file of global heads (into the parsed text)
} aha_policy;

typedef struct {
    aha_router_kind kind;
    float tau;        // learned threshold on sigmoid(logit)
    float eps;        // oracle out-of-window mass threshold
    float p;          // random: probability of global
    float thr;        // werr: threshold on the relative window-output error
    uint64_t seed;    // random: seed
    uint8_t *heads;   // [L, H] heads: 1 = global (owned)
    int n_layers, n_heads;
    char spec[256];   // the policy as the command line names it: "random:0.3", "heads:FILE"
} aha_router;

// --route's policy: global | local | learned | oracle | random:P | heads:FILE
// into *p (file points into spec). 0, or -1 with an error naming flag.
int aha_policy_parse(const char *flag, const char *spec, aha_policy *p);
// The router of policy p for a model of n_layers x n_heads (has_aha: it has
// router rows, which learned needs). tau, eps: learned's and oracle's when p
// has no number of its own. A heads file lists global heads as "layer head"
// lines ('#' comments); topk's heads are the caller's (aha_grid_router).
// 0, or -1 with an error naming flag and the policy.
int aha_router_init(aha_router *r, const aha_policy *p, const char *flag, int n_layers, int n_heads, int has_aha,
                    float tau, float eps, uint64_t seed);
void aha_router_free(aha_router *r);

// Decisions for n tokens of one layer at document positions pos0..pos0+n-1:
// gate[n, H]. logits: the router logits [n, logit_stride] (learned); dep: d_eps
// [n, H] for r->eps (oracle); werr: the full-attention pass's window-output
// errors [n, H] at this window (werr; compared as the float16 the trace
// stores, so the trace reproduces every decision); doc: the context's index in
// the dataset (random), so that resumed and sharded runs decide as one
// uninterrupted run.
void aha_router_decide(const aha_router *r, int layer, int n, int pos0, int64_t doc, int window,
                       const float *logits, int logit_stride, const uint32_t *dep, const float *werr,
                       uint8_t *gate);

// splitmix64's finaliser: reproducible hashes (random routing, aha fit's split).
uint64_t aha_splitmix64(uint64_t x);
