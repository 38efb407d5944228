// The routing policies a run can follow, as a trace names them (a run's
// policy attribute): one traits row each, so that the recorder's flags,
// the sweep grid, the routers, the trace and the figures read one table.
// A new policy is its row here (the count below makes the build say so),
// its router (runtime/router.c) and its grid row in docs/sweeps.md.
#pragma once
#include <stddef.h>

typedef enum {
    AHA_ROUTER_GLOBAL,  // every pair global: plain full attention
    AHA_ROUTER_LOCAL,   // every pair local: sliding-window attention
    AHA_ROUTER_LEARNED, // the checkpoint's AHA router: sigmoid(logit) > tau
    AHA_ROUTER_ORACLE,  // global iff d_eps > w (needs the full probabilities)
    AHA_ROUTER_RANDOM,  // global with probability p, seeded and reproducible
    AHA_ROUTER_HEADS,   // a static per-(layer, head) choice: a file, or a sweep's topk:K
    AHA_ROUTER_WERR,    // global iff the full pass's window-output error at w > thr
    AHA_ROUTER_TOPK,    // a sweep's topk:K: the K heads an observe trace ranks first (routes as HEADS)
} aha_router_kind;
#define AHA_ROUTER_COUNT (AHA_ROUTER_TOPK + 1)

enum {                  // what a policy decides from (aha_policy_traits.needs)
    AHA_NEEDS_DEP = 1,  // d_eps at its eps, from the full pass's attention probabilities
    AHA_NEEDS_WERR = 2, // the full pass's window-output errors at its window
    AHA_NEEDS_LOGITS = 4, // router logits: the model's AHA rows or a --router file
    AHA_NEEDS_HEADS = 8,  // a list of global heads: a file, or an observe trace's ranking (--heads-from)
};

typedef struct {
    const char *name;   // as --route, --policies and a run's policy attribute spell it
    int route;          // --route takes it
    const char *arg;    // ... as POLICY:ARG ("P", "FILE"); NULL: as POLICY
    const char *letter; // --policies: before its number in a run's name ("e": oracle_e0.1_w128); "": takes
                        // no number; NULL: not a grid policy
    const char *number; // --policies: what its number is called in messages ("EPS")
    double lo, hi;      // the numbers it takes (--route's ARG, --policies' numbers)
    int open;           // lo and hi themselves excluded
    int integer;        // whole numbers only
    unsigned needs;     // AHA_NEEDS_*
    int full_pass;      // it decides from the full-attention pass, which runs first: its runs count those
                        // FLOPs too (a run's full_pass attribute)
    int colour;         // its line colour in the frontier figure (gnuplot's lc index)
} aha_policy_traits;

extern const aha_policy_traits aha_policies[AHA_ROUTER_COUNT];

// The policy named name[0..len) (len < 0: all of name), or -1.
int aha_policy_find(const char *name, int len);
// The policies --route (grid 0: "global, local, ..., random:P, heads:FILE")
// or --policies (grid 1: "local learned:TAU,.. oracle:EPS,.. ...") takes, as
// their messages list them, into out[size].
void aha_policy_list(int grid, char *out, size_t size);
// v is a number policy k takes: 1 or 0.
int aha_policy_takes(int k, double v);
// 1 when a run of policy (a run's policy attribute: "oracle", "random:0.3",
// ...) decides from the full-attention pass, else 0: the writer records it
// (a run's full_pass attribute), the reader derives it for a trace without.
int aha_policy_full_pass(const char *policy);
