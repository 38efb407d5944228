#include "router.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "f16.h"

static int parse_heads(aha_router *r, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        aha_err("%s: cannot open head list", path);
        return -1;
    }
    r->heads = aha_calloc((size_t)r->n_layers * r->n_heads, 1, "head list");
    char line[256];
    int lineno = 0, listed = 0, rc = r->heads ? 0 : -1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *c = strchr(line, '#');
        if (c) *c = '\0';
        int l, h, used = 0;
        if (sscanf(line, " %n", &used) == 0 && line[used] == '\0') continue; // blank
        if (sscanf(line, "%d %d %n", &l, &h, &used) != 2 || line[used] != '\0') {
            aha_err("%s:%d: expected \"layer head\"", path, lineno);
            rc = -1;
        } else if (l < 0 || l >= r->n_layers || h < 0 || h >= r->n_heads) {
            aha_err("%s:%d: layer %d head %d out of range (%d layers, %d heads)", path, lineno, l,
                    h, r->n_layers, r->n_heads);
            rc = -1;
        } else {
            r->heads[l * r->n_heads + h] = 1;
            listed++;
        }
    }
    fclose(f);
    if (rc == 0 && !listed) { // routes every head locally: --route local says so
        aha_err("%s: lists no heads (\"layer head\" lines; --route local routes every head locally)", path);
        rc = -1;
    }
    return rc;
}

int aha_policy_parse(const char *flag, const char *spec, aha_policy *p) {
    const char *colon = strchr(spec, ':');
    int kind = aha_policy_find(spec, colon ? (int)(colon - spec) : -1);
    *p = (aha_policy){.param = NAN};
    if (kind >= 0 && (!aha_policies[kind].route || !aha_policies[kind].arg != !colon))
        kind = -1; // not --route's, or P, FILE missing or given to another
    if (kind < 0) {
        char list[256];
        aha_policy_list(0, list, sizeof list);
        aha_err("%s: unknown router '%s' (%s)", flag, spec, list);
        return -1;
    }
    p->kind = (aha_router_kind)kind;
    if (kind == AHA_ROUTER_HEADS) p->file = colon + 1;
    if (kind != AHA_ROUTER_RANDOM) return 0;
    char *end;
    p->param = strtof(colon + 1, &end); // a float, as the router keeps it
    if (end == colon + 1 || *end || !aha_policy_takes(kind, p->param)) {
        aha_err("%s %s: P must be a number in [0, 1]", flag, spec);
        return -1;
    }
    return 0;
}

int aha_router_init(aha_router *r, const aha_policy *p, const char *flag, int n_layers, int n_heads, int has_aha,
                    float tau, float eps, uint64_t seed) {
    const int own = !isnan(p->param); // the policy's own number
    memset(r, 0, sizeof *r);
    r->kind = p->kind;
    r->n_layers = n_layers;
    r->n_heads = n_heads;
    r->tau = p->kind == AHA_ROUTER_LEARNED && own ? (float)p->param : tau;
    r->eps = p->kind == AHA_ROUTER_ORACLE && own ? (float)p->param : eps;
    r->p = p->kind == AHA_ROUTER_RANDOM ? (float)p->param : 0;
    r->thr = p->kind == AHA_ROUTER_WERR ? (float)p->param : 0;
    r->seed = seed;
    const char *name = aha_policies[p->kind].name;
    if (p->kind == AHA_ROUTER_HEADS) snprintf(r->spec, sizeof r->spec, "%s:%s", name, p->file);
    else if (own) snprintf(r->spec, sizeof r->spec, "%s:%g", name, p->param);
    else snprintf(r->spec, sizeof r->spec, "%s", name);
    if (p->kind == AHA_ROUTER_LEARNED && !has_aha) {
        aha_err("%s %s: the model has no AHA router rows in q_proj", flag, r->spec);
        return -1;
    }
    if (p->kind == AHA_ROUTER_HEADS) return parse_heads(r, p->file);
    if (p->kind == AHA_ROUTER_TOPK) r->kind = AHA_ROUTER_HEADS; // its heads: the caller's
    if (!(r->tau > 0 && r->tau < 1)) {
        aha_err("--tau must be in (0, 1) (got %g)", r->tau);
        return -1;
    }
    if (!(r->eps >= 0 && r->eps <= 1)) {
        aha_err("--eps must be in [0, 1] (got %g)", r->eps);
        return -1;
    }
    return 0;
}

void aha_router_free(aha_router *r) {
    free(r->heads);
    r->heads = NULL;
}

uint64_t aha_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A reproducible uniform draw per (seed, doc, layer, pos, head).
static double draw(uint64_t seed, int64_t doc, int layer, int pos, int head) {
    uint64_t x = seed ^ ((uint64_t)doc * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)layer << 48) ^
                 ((uint64_t)pos << 16) ^ (uint64_t)head;
    return (aha_splitmix64(x) >> 11) * (1.0 / 9007199254740992.0);
}

void aha_router_decide(const aha_router *r, int layer, int n, int pos0, int64_t doc, int window,
                       const float *logits, int logit_stride, const uint32_t *dep, const float *werr,
                       uint8_t *gate) {
    const int H = r->n_heads;
    // sigmoid(x) > tau  <=>  x > log(tau / (1 - tau))
    const float cut = logf(r->tau / (1 - r->tau));
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++) {
            uint8_t g = 0;
            switch (r->kind) {
            case AHA_ROUTER_GLOBAL: g = 1; break;
            case AHA_ROUTER_LOCAL: g = 0; break;
            case AHA_ROUTER_LEARNED: g = logits[(long)i * logit_stride + h] > cut; break;
            case AHA_ROUTER_ORACLE: g = dep[(long)i * H + h] > (uint32_t)window; break;
            case AHA_ROUTER_RANDOM: g = draw(r->seed, doc, layer, pos0 + i, h) < r->p; break;
            case AHA_ROUTER_HEADS:
            case AHA_ROUTER_TOPK: g = r->heads[layer * H + h]; break;
            case AHA_ROUTER_WERR: g = aha_f16_to_f32(aha_f32_to_f16(werr[(long)i * H + h])) > r->thr; break;
            }
            gate[(long)i * H + h] = g;
        }
}
