#include "grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "flags.h"
#include "trace_read.h"

static const char *name_of(aha_router_kind k) { return aha_policies[k].name; }

// What numbers grid policy k takes, for a message.
static const char *numbers_of(int k) {
    const aha_policy_traits *p = &aha_policies[k];
    if (p->integer) return "whole numbers >= 1";
    if (isinf(p->hi)) return "numbers >= 0";
    return p->open ? "numbers in (0, 1)" : "numbers in [0, 1]";
}

static int add_point(aha_policy *pts, int max, int *n, aha_router_kind kind, double v) {
    for (int i = 0; i < *n; i++)
        if (pts[i].kind == kind && (pts[i].param == v || (isnan(v) && isnan(pts[i].param)))) {
            aha_err("--policies: %s:%g is listed twice", name_of(kind), v);
            return -1;
        }
    if (*n == max) {
        aha_err("--policies: more than %d points", max);
        return -1;
    }
    pts[(*n)++] = (aha_policy){.kind = kind, .param = v};
    return 0;
}

int aha_grid_parse(const char *spec, aha_policy *pts, int max, int *n) {
    char buf[2048];
    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) {
        aha_err("--policies: too long");
        return -1;
    }
    *n = 0;
    for (char *save, *tok = strtok_r(buf, " \t;", &save); tok; tok = strtok_r(NULL, " \t;", &save)) {
        char *colon = strchr(tok, ':');
        const int k = aha_policy_find(tok, colon ? (int)(colon - tok) : -1);
        if (k < 0 || !aha_policies[k].letter) {
            char list[256];
            aha_policy_list(1, list, sizeof list);
            aha_err("--policies: unknown policy '%s' (%s)", tok, list);
            return -1;
        }
        if (!aha_policies[k].number) { // takes no number (local)
            if (colon) {
                aha_err("--policies: %s takes no numbers ('%s')", name_of(k), tok);
                return -1;
            }
            if (add_point(pts, max, n, (aha_router_kind)k, NAN) != 0) return -1;
            continue;
        }
        if (!colon || !colon[1]) {
            aha_err("--policies: '%s' needs a list of numbers, e.g. %s:0.1,0.3", tok, name_of(k));
            return -1;
        }
        if (aha_flag_list_check("--policies", colon + 1) != 0) return -1;
        for (char *s2, *v = strtok_r(colon + 1, ",", &s2); v; v = strtok_r(NULL, ",", &s2)) {
            char *end;
            const double x = strtod(v, &end);
            if (end == v || *end || !aha_policy_takes(k, x)) {
                aha_err("--policies: %s:%s: %s takes %s", name_of(k), v, name_of(k), numbers_of(k));
                return -1;
            }
            if (add_point(pts, max, n, (aha_router_kind)k, x) != 0) return -1;
        }
    }
    if (*n == 0) {
        aha_err("--policies: empty list");
        return -1;
    }
    return 0;
}

void aha_grid_describe(const aha_policy *pts, int n, char *buf, size_t size) {
    size_t k = (size_t)snprintf(buf, size, "grid");
    for (int i = 0; i < n; i++) {
        int first = 1; // a family is listed once, at its first point
        for (int j = 0; j < i; j++) first &= pts[j].kind != pts[i].kind;
        for (int j = i; first && j < n && k < size; j++) {
            if (pts[j].kind != pts[i].kind) continue;
            if (j == i) k += (size_t)snprintf(buf + k, size - k, " %s%s", name_of(pts[j].kind), isnan(pts[j].param) ? "" : ":");
            else k += (size_t)snprintf(buf + k, size - k, ",");
            if (!isnan(pts[j].param) && k < size) k += (size_t)snprintf(buf + k, size - k, "%g", pts[j].param);
        }
    }
}

void aha_grid_name(const aha_policy *p, int window, char *buf, size_t size) {
    if (isnan(p->param)) snprintf(buf, size, "%s_w%d", name_of(p->kind), window);
    else snprintf(buf, size, "%s_%s%g_w%d", name_of(p->kind), aha_policies[p->kind].letter, p->param, window);
}

int aha_grid_router(aha_router *r, const aha_policy *p, int n_layers, int n_heads, int has_aha,
                    uint64_t seed, const uint8_t *heads_global) {
    // learned: the checkpoint's fused router rows, or a fitted router file's
    // (aha fit, --router FILE), the other source of the same logits
    if (aha_router_init(r, p, "--policies", n_layers, n_heads, has_aha, 0.5f, 0.01f, seed) != 0) return -1;
    if (p->kind != AHA_ROUTER_TOPK) return 0;
    r->heads = aha_malloc((size_t)n_layers * n_heads, 1, "head list");
    if (!r->heads) return -1;
    memcpy(r->heads, heads_global, (size_t)n_layers * n_heads);
    return 0;
}

int aha_grid_head_counts(const char *path, int n_layers, int n_heads, const int *w, int n_w, int64_t *counts) {
    aha_tr tr;
    if (aha_tr_open(&tr, path) != 0) return -1;
    int rc = -1;
    const int L = n_layers, H = n_heads;
    const int64_t B = 4096;
    uint32_t *d = NULL;
    if (tr.m.n_layers != L || tr.m.n_heads != H) {
        aha_err("%s: --heads-from: the trace has %d layers x %d heads, the model %d x %d", path, tr.m.n_layers,
                tr.m.n_heads, L, H);
        goto out;
    }
    if (tr.n_tokens == 0) { // every head's count would be 0: no ranking
        aha_err("%s: --heads-from: the trace holds no documents (a shard that had none): nothing ranks the heads", path);
        goto out;
    }
    if (!(d = aha_malloc((size_t)L * B * H, sizeof *d, "head counts"))) goto out;
    memset(counts, 0, sizeof *counts * (size_t)n_w * L * H);
    for (int64_t t0 = 0; t0 < tr.n_tokens; t0 += B) {
        const int64_t n = tr.n_tokens - t0 < B ? tr.n_tokens - t0 : B;
        if (aha_tr_read(&tr, TD_DEP, 0, t0, n, d) != 0) goto out;
        for (int i = 0; i < n_w; i++)
            for (int l = 0; l < L; l++)
                for (int64_t t = 0; t < n; t++)
                    for (int h = 0; h < H; h++)
                        counts[((size_t)i * L + l) * H + h] += d[((size_t)l * n + t) * H + h] > (uint32_t)w[i];
    }
    for (int i = 0; i < n_w; i++) // a natively local layer's heads run its window whatever is picked: last
        for (int l = 0; l < L; l++)
            for (int h = 0; aha_trace_layer_window(&tr.m, l) && h < H; h++) counts[((size_t)i * L + l) * H + h] = -1;
    rc = 0;
out:
    free(d);
    aha_tr_close(&tr);
    return rc;
}

void aha_grid_topk(const int64_t *counts, int n, int k, uint8_t *heads) {
    memset(heads, 0, (size_t)n);
    for (int j = 0; j < k && j < n; j++) { // k picks of the largest left: n is L * H, small
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!heads[i] && (best < 0 || counts[i] > counts[best])) best = i;
        heads[best] = 1;
    }
}
