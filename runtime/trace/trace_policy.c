// The routing policies' traits (trace_policy.h).
#include "trace_policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// A new policy changes this count: give it its row below first.
_Static_assert(AHA_ROUTER_COUNT == 8, "a new routing policy: its row in aha_policies, then update this count");

const aha_policy_traits aha_policies[AHA_ROUTER_COUNT] = {
    // name, --route: route arg, --policies: letter number, numbers: lo hi open integer, needs, full pass, colour
    [AHA_ROUTER_GLOBAL] = {"global", 1, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 8},
    [AHA_ROUTER_LOCAL] = {"local", 1, NULL, "", NULL, 0, 0, 0, 0, 0, 0, 6},
    [AHA_ROUTER_LEARNED] = {"learned", 1, NULL, "tau", "TAU", 0, 1, 1, 0, AHA_NEEDS_LOGITS, 0, 3},
    [AHA_ROUTER_ORACLE] = {"oracle", 1, NULL, "e", "EPS", 0, 1, 0, 0, AHA_NEEDS_DEP, 1, 1},
    [AHA_ROUTER_RANDOM] = {"random", 1, "P", "p", "P", 0, 1, 0, 0, 0, 0, 5},
    [AHA_ROUTER_HEADS] = {"heads", 1, "FILE", NULL, NULL, 0, 0, 0, 0, AHA_NEEDS_HEADS, 0, 7},
    [AHA_ROUTER_WERR] = {"werr", 0, NULL, "t", "THR", 0, INFINITY, 0, 0, AHA_NEEDS_WERR, 1, 2},
    [AHA_ROUTER_TOPK] = {"topk", 0, NULL, "k", "K", 1, 1e9, 0, 1, AHA_NEEDS_HEADS, 0, 4},
};

int aha_policy_find(const char *name, int len) {
    const size_t n = len < 0 ? strlen(name) : (size_t)len;
    for (int k = 0; k < AHA_ROUTER_COUNT; k++)
        if (strlen(aha_policies[k].name) == n && strncmp(aha_policies[k].name, name, n) == 0) return k;
    return -1;
}

void aha_policy_list(int grid, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int k = 0; k < AHA_ROUTER_COUNT && n < size; k++) {
        const aha_policy_traits *p = &aha_policies[k];
        const char *arg = grid ? p->number : p->arg;
        if (grid ? !p->letter : !p->route) continue;
        n += (size_t)snprintf(out + n, size - n, "%s%s%s%s%s", !n ? "" : grid ? " " : ", ", p->name, arg ? ":" : "",
                              arg ? arg : "", arg && grid ? ",.." : "");
    }
}

int aha_policy_takes(int k, double v) {
    const aha_policy_traits *p = &aha_policies[k];
    const int inside = p->open ? v > p->lo && v < p->hi : v >= p->lo && v <= p->hi;
    return inside && (!p->integer || v == floor(v));
}

int aha_policy_full_pass(const char *policy) {
    const char *colon = strchr(policy, ':');
    const int k = aha_policy_find(policy, colon ? (int)(colon - policy) : -1);
    return k >= 0 && aha_policies[k].full_pass;
}
