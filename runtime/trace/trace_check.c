// Checks of values as the reader reads them (trace_check.h).
#include "trace_check.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"

// A fill value where an unfinished trace's index maps a part file that is
// not there (trace-format.md: "Unfinished traces"): say so.
static int missing_part(const aha_tr *tr, const char *name, const char *at, long long i, long long v) {
    aha_err("%s: no data at %s %lld (%s %lld): a part file of this unfinished trace is missing; keep %s.parts/ "
            "beside it", tr->path, at, i, name, v, tr->path);
    return -1;
}

// doc_offsets, all n_docs + 1 entries: 0 first, each document 1..ctx
// tokens, T last.
static int check_offsets(const aha_tr *tr, const int64_t *o) {
    const int64_t n = tr->n_docs;
    int64_t d = 0;
    while (d < n && o[d + 1] > o[d] && (tr->m.ctx <= 0 || o[d + 1] - o[d] <= tr->m.ctx)) d++;
    if (o[0] == 0 && d == n && o[n] == tr->n_tokens) return 0;
    if (o[0] != 0) {
        aha_err("%s: doc_offsets[0] is %lld, not 0", tr->path, (long long)o[0]);
    } else if (d < n && o[d + 1] <= o[d]) {
        if (!tr->complete && o[d + 1] == 0) return missing_part(tr, "doc_offsets", "entry", d + 1, 0);
        aha_err("%s: doc_offsets[%lld] = %lld is not above doc_offsets[%lld] = %lld (a document is 1 or more tokens)",
                tr->path, (long long)d + 1, (long long)o[d + 1], (long long)d, (long long)o[d]);
    } else if (d < n) {
        aha_err("%s: doc_offsets: document %lld is tokens [%lld, %lld), longer than ctx %d", tr->path, (long long)d,
                (long long)o[d], (long long)o[d + 1], tr->m.ctx);
    } else {
        aha_err("%s: doc_offsets ends at %lld, not at the trace's %lld tokens", tr->path, (long long)o[n],
                (long long)tr->n_tokens);
    }
    return -1;
}

// The document of token t: the last d with doc_offsets[d] <= t.
static int64_t doc_of(const aha_tr *tr, int64_t t) {
    int64_t lo = 0, hi = tr->n_docs - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (tr->doc_offsets[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Each token's position in its document, by doc_offsets, into pos[n] for
// tokens [t0, t0+n).
static void positions(const aha_tr *tr, int64_t t0, int64_t n, int64_t *pos) {
    int64_t d = doc_of(tr, t0);
    for (int64_t i = 0; i < n; i++) {
        while (d + 1 < tr->n_docs && tr->doc_offsets[d + 1] <= t0 + i) d++;
        pos[i] = t0 + i - tr->doc_offsets[d];
    }
}

static int check_tokens(const aha_tr *tr, int64_t t0, int64_t n, const int32_t *v) {
    for (int64_t i = 0; i < n; i++) {
        if (v[i] >= 0 && (tr->m.vocab <= 0 || v[i] < tr->m.vocab)) continue;
        if (!tr->complete && v[i] == -1) return missing_part(tr, "tokens", "token", t0 + i, v[i]);
        if (v[i] < 0) aha_err("%s: token id %d at token %lld is negative", tr->path, v[i], (long long)(t0 + i));
        else aha_err("%s: token id %d at token %lld is not below vocab %d", tr->path, v[i], (long long)(t0 + i),
                     tr->m.vocab);
        return -1;
    }
    return 0;
}

static int check_position(const aha_tr *tr, int64_t t0, int64_t n, const int32_t *v, int64_t *pos) {
    positions(tr, t0, n, pos);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] == pos[i]) continue;
        if (!tr->complete && v[i] == -1) return missing_part(tr, "position", "token", t0 + i, v[i]);
        aha_err("%s: position at token %lld is %d; doc_offsets puts the token at position %lld of its document",
                tr->path, (long long)(t0 + i), v[i], (long long)pos[i]);
        return -1;
    }
    return 0;
}

// d_eps, [L, n, H]: 1..position+1, and at most a natively local layer's window.
static int check_dep(const aha_tr *tr, const char *name, int64_t t0, int64_t n, const uint32_t *v, int64_t *pos) {
    const int L = tr->m.n_layers, H = tr->m.n_heads;
    int64_t bad = -1; // the first bad value, as its index in v
    positions(tr, t0, n, pos);
#pragma omp parallel for schedule(static)
    for (int l = 0; l < L; l++) {
        const int64_t lw = aha_trace_layer_window(&tr->m, l);
        for (int64_t i = 0; i < n; i++) {
            const uint32_t *d = v + ((size_t)l * (size_t)n + (size_t)i) * (size_t)H;
            const int64_t most = lw && lw < pos[i] + 1 ? lw : pos[i] + 1;
            for (int h = 0; h < H; h++)
                if (d[h] < 1 || d[h] > most) {
                    int64_t k = ((int64_t)l * n + i) * H + h;
#pragma omp critical(trace_check_dep)
                    if (bad < 0 || k < bad) bad = k;
                }
        }
    }
    if (bad < 0) return 0;
    const long long l = bad / H / n, t = t0 + bad / H % n, h = bad % H, p = pos[bad / H % n];
    if (!tr->complete && v[bad] == 0) return missing_part(tr, name, "token", t, 0);
    if (v[bad] < 1 || v[bad] > p + 1)
        aha_err("%s: %s: d_eps %u outside 1..position+1 at layer %lld token %lld head %lld (position %lld)", tr->path,
                name, v[bad], l, t, h, p);
    else
        aha_err("%s: %s: d_eps %u at layer %lld token %lld head %lld is beyond the layer's native window %d",
                tr->path, name, v[bad], l, t, h, aha_trace_layer_window(&tr->m, (int)l));
    return -1;
}

// Gates, [L, n, H]: 0 or 1.
static int check_gate(const aha_tr *tr, const char *name, int64_t t0, int64_t n, const uint8_t *v) {
    const int H = tr->m.n_heads;
    const size_t k = (size_t)tr->m.n_layers * (size_t)n * (size_t)H;
    size_t j = 0;
    while (j < k && v[j] <= 1) j++;
    if (j == k) return 0;
    const long long l = (long long)(j / (size_t)H / (size_t)n), t = t0 + (long long)(j / (size_t)H % (size_t)n);
    if (!tr->complete && v[j] == 255) return missing_part(tr, name, "token", t, 255);
    aha_err("%s: %s: %u at layer %lld token %lld head %lld is not 0 or 1", tr->path, name, v[j], l, t,
            (long long)(j % (size_t)H));
    return -1;
}

// doc_index: -1 (not known) or more; ascending where every number is known.
static int check_doc_index(const aha_tr *tr, int64_t t0, int64_t n, const int64_t *v) {
    int known = 1;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < -1) {
            aha_err("%s: doc_index[%lld] is %lld (a document's number is -1 or more)", tr->path, (long long)(t0 + i),
                    (long long)v[i]);
            return -1;
        }
        known &= v[i] >= 0;
    }
    for (int64_t i = 1; known && i < n; i++)
        if (v[i] < v[i - 1]) {
            aha_err("%s: doc_index[%lld] = %lld is below doc_index[%lld] = %lld: not ascending", tr->path,
                    (long long)(t0 + i), (long long)v[i], (long long)(t0 + i - 1), (long long)v[i - 1]);
            return -1;
        }
    return 0;
}

// A run's NLL and KL, [T]: finite, but for the NaN of a document's last
// token when nothing follows it (a context's last token still has a target:
// the next context's first). A NaN anywhere else is a result the writer
// refuses to store, so a trace that holds one was edited or damaged.
static int check_scores(const aha_tr *tr, const char *name, int kl, int64_t t0, int64_t n, const float *v) {
    int64_t d = tr->doc_offsets ? doc_of(tr, t0) : 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = t0 + i;
        while (tr->doc_offsets && d + 1 < tr->n_docs && tr->doc_offsets[d + 1] <= t) d++;
        const int last = !tr->doc_offsets || tr->doc_offsets[d + 1] == t + 1; // without offsets: no rule
        if (isfinite(v[i]) || (isnan(v[i]) && !kl && last)) continue;
        if (!tr->complete && isnan(v[i])) return missing_part(tr, name, "token", t, 0);
        aha_err("%s: %s: %s at token %lld%s: a NaN or Inf is never a result (the trace was edited or damaged)", tr->path,
                name, isnan(v[i]) ? "NaN" : "Inf", (long long)t, isnan(v[i]) ? ", not its document's last" : "");
        return -1;
    }
    return 0;
}

int trace_check_values(const aha_tr *tr, trace_dset_id id, const char *name, int64_t t0, int64_t n, const void *buf) {
    int need_pos = (id == TD_POSITION || id == TD_DEP) && tr->doc_offsets; // positions come from doc_offsets
    int64_t *pos = need_pos ? aha_malloc((size_t)n, sizeof *pos, tr->path) : NULL;
    int rc = 0;
    if (need_pos && !pos) return -1;
    switch (id) {
    case TD_DOC_OFFSETS: rc = t0 == 0 && n == tr->n_docs + 1 ? check_offsets(tr, buf) : 0; break;
    case TD_DOC_INDEX: rc = check_doc_index(tr, t0, n, buf); break;
    case TD_TOKENS: rc = check_tokens(tr, t0, n, buf); break;
    case TD_POSITION: rc = pos ? check_position(tr, t0, n, buf, pos) : 0; break;
    case TD_DEP: rc = pos ? check_dep(tr, name, t0, n, buf, pos) : 0; break;
    case TD_GATE: case TD_RUN_GATE: rc = check_gate(tr, name, t0, n, buf); break;
    case TD_RUN_NLL: case TD_RUN_KL: rc = check_scores(tr, name, id == TD_RUN_KL, t0, n, buf); break;
    default: break; // floats and strings: any value is one (strings: checked as read)
    }
    free(pos);
    return rc;
}
