// aha fit. Pass 1 streams the training documents through the observed
// full-attention forward pass and accumulates, per layer and head, the
// weighted normal equations of a bias-free linear probe on the attention
// input (target +1 global, -1 local; memory L * H * dim^2 doubles, or
// L * dim^2 unweighted, whatever the dataset's size). A Cholesky solve gives
// the weights. Pass 2 computes the router logits of every document: the
// training ones set the threshold (--target-global), the held-out ones
// score it against their labels.
#include "fit.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "buf.h"
#include "dataset.h"
#include "dependency.h"
#include "err.h"
#include "forward.h"
#include "model.h"
#include "ops.h"
#include "router.h"
#include "router_file.h"
#include "run.h"
#include "version.h"

extern void dposv_(const char *uplo, const int *n, const int *nrhs, double *a, const int *lda, double *b,
                   const int *ldb, int *info);

static const char *const label_names[] = {"werr", "deps", "learned"}, *const weight_names[] = {"cost", "none"},
                         *const regress_names[] = {"label", "log-error"};
const aha_enum aha_fit_labels = AHA_ENUM(label_names), aha_fit_weights = AHA_ENUM(weight_names),
               aha_fit_regressions = AHA_ENUM(regress_names);

// --regress log-error: the target ln(error / threshold), clipped to +-LOG_CLIP
// (errors below threshold * e^-4 are all "small"; their differences carry no cost)
#define LOG_CLIP 4.0

typedef struct { // a growing float array
    float *v;
    size_t n, cap;
} fvec;

static int fvec_push(fvec *a, float x) {
    if (a->n == a->cap && aha_grow(&a->v, &a->cap, a->n + 1, sizeof *a->v, "router logits") != 0) return -1;
    a->v[a->n++] = x;
    return 0;
}

typedef struct { // a training decision as pass 2 sees it
    float logit, err; // router logit; window error (--budget, --layer-cuts; else 0)
} decision;

typedef struct { // a growing array of decisions
    decision *v;
    size_t n, cap;
} dvec;

static int dvec_push(dvec *a, float logit, float err) {
    if (a->n == a->cap && aha_grow(&a->v, &a->cap, a->n + 1, sizeof *a->v, "router logits") != 0) return -1;
    a->v[a->n++] = (decision){logit, err};
    return 0;
}

typedef struct {
    const aha_fit_opts *o;
    aha_model m;
    aha_state st;
    int L, H, dim, ctx, B;
    int Lg, *gl;       // [Lg] the global layers: a natively local one (m.layers[l].window > 0) runs its
                       // window whatever the router says, so its router rows are neither fitted nor evaluated
    int hg;            // Gram matrices per layer: H (weighted or IRLS) or 1 (shared by the heads)
    int d1;            // columns of the regression: dim, + 1 (the intercept's ones) with --bias
    int cost;          // --weight cost with werr labels: misses weigh their error
    int log_err;       // --regress log-error: least squares on ln(error / threshold)
    double *G;         // [L, hg, d1, d1] sum of w x x^T (upper triangle, row-major)
    double *b;         // [L, H, d1] sum of w y x
    float *w;          // [L, H, dim] the fitted routers
    float *bias;       // [L, H] their intercepts, less the per-head cuts; NULL without --bias / --per-head
    float *attn_in;    // [L, B, dim] a call's attention inputs
    uint32_t *dep;     // [L, 1, B, H] d_eps
    float *werr;       // [L, 1, B, H] window-output errors
    double *xd, *xs;   // [B, d1] one layer's rows, as they are and scaled by sqrt(S)
    double *ss, *ys;   // [B, H] S and r of the normal equations (accumulate)
    float *lg;         // [B, H] one layer's router logits
    float eps;
    dvec train;        // pass 2: the training decisions (their window errors with --budget)
    int n_grp;         // cut groups: L * H (--per-head), L (--layer-cuts), 0 (one shared threshold)
    dvec *grp;         // [n_grp] pass 2 with groups: the training decisions of each group
    fvec held;         // pass 2: held-out logits, (token, layer, head) order
    uint8_t *held_y;   // [held_cap] their labels
    size_t held_cap;
    aha_router route;  // --exposed: the learned policy routing the passes (kind LEARNED), at the last threshold
    float **fused;     // --exposed: the routers attention follows, fused into q_proj; NULL: full attention
    float **exported;  // --export: the routers fused to write the checkpoint (freed after the model, as fused)
    uint8_t *gate;     // [L, B, H] --exposed: the decisions of a call
    int say;           // the threshold is the final one: print it (--exposed's earlier rounds do not)
    const char *id_key[8];  // the model's identity for the router file, taken before --exposed fuses
    char id_val[8][64];     // routers into it (a fused model counts its router rows apart)
    int n_id;
    int64_t n_train, n_pos;            // the last least-squares pass: training decisions (t >= W), global labels
    int64_t tok[2], docs[2];           // tokens / documents: train, held out
    double t0;
} fitter;

// The layer of held-out decision i ((token, global layer, head) order).
static int held_layer(const fitter *f, size_t i) { return f->gl[i / f->H % f->Lg]; }

// The cut group of head h of layer l (--per-head: the head, --layer-cuts: the layer).
static size_t group_of(const fitter *f, int l, int h) {
    return f->o->per_head ? (size_t)l * f->H + h : (size_t)l;
}

// The document split: held out iff a seeded hash of its ordinal is < holdout.
static int held_out(const aha_fit_opts *o, int64_t doc) {
    uint64_t x = aha_splitmix64((uint64_t)o->s.seed ^ ((uint64_t)doc * 0x9E3779B97F4A7C15ull));
    return (x >> 11) * (1.0 / 9007199254740992.0) < o->holdout;
}

// The window error of decision (l, i, h) of a call of n tokens (werr labels).
static double werr_of(const fitter *f, int l, int i, int h, int n) {
    return f->werr[((size_t)l * n + i) * f->H + h];
}

// The label and its weight (what a miss costs) of decision (l, i, h) of a call of n tokens.
static int label_of(const fitter *f, int l, int i, int h, int n, double *weight) {
    const aha_fit_opts *o = f->o;
    *weight = 1;
    if (o->label == AHA_LABEL_DEPS) return f->dep[((size_t)l * n + i) * f->H + h] > (uint32_t)o->window;
    if (o->label == AHA_LABEL_LEARNED) return f->st.router[((size_t)i * f->L + l) * f->H + h] > 0;
    double e = werr_of(f, l, i, h, n);
    int y = e > o->threshold;
    // a missed global decision costs its window error, in units of the
    // threshold (at most 10); a needless global one costs compute, 1
    if (y && f->cost) *weight = fmin(e / o->threshold, 10);
    return y;
}

// lg[m, H]: layer l's router logits of m attention inputs x [m, dim].
static void logits_of(fitter *f, int l, const float *x, int m) {
    aha_matmul(f->lg, x, f->w + (size_t)l * f->H * f->dim, f->bias ? f->bias + (size_t)l * f->H : NULL, m, f->dim,
               f->H);
}

// Add m decisions of layer l (attention inputs x [m, dim], call rows i0..)
// to the normal equations: G += X^T S X, b[h] += X^T r[:, h]. Least squares
// (target +-1 or the clipped log error, S the weights); irls: a Newton step of the weighted logistic
// loss at the current weights, S = c p (1 - p), r = S z + c (y - p).
static void accumulate(fitter *f, int l, const float *x, int m, int i0, int n, int irls) {
    const int H = f->H, dim = f->d1;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < dim; j++) f->xd[(size_t)i * dim + j] = j < f->dim ? x[(size_t)i * f->dim + j] : 1;
    if (irls) logits_of(f, l, x, m);
    for (int i = 0; i < m; i++)
        for (int h = 0; h < H; h++) {
            double c, s, r;
            int y = label_of(f, l, i0 + i, h, n, &c);
            size_t at = (size_t)i * H + h;
            if (irls) {
                double z = f->lg[at], p = 1 / (1 + exp(-z));
                s = c * p * (1 - p), r = s * z + c * (y - p);
            } else {
                f->n_pos += y;
                double z = y ? 1 : -1;
                if (f->log_err) z = fmax(-LOG_CLIP, fmin(LOG_CLIP, log(werr_of(f, l, i0 + i, h, n) / f->o->threshold)));
                s = c, r = c * z;
            }
            f->ss[at] = s, f->ys[at] = r;
        }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, dim, m, 1, f->ys, H, f->xd, dim, 1,
                f->b + (size_t)l * H * dim, dim);
    for (int k = 0; k < f->hg; k++) { // hg 1: unweighted least squares, one X^T X for every head
        const double *X = f->xd;
        if (f->hg > 1) {
            for (int i = 0; i < m; i++) {
                double q = sqrt(f->ss[(size_t)i * H + k]);
                for (int j = 0; j < dim; j++) f->xs[(size_t)i * dim + j] = q * f->xd[(size_t)i * dim + j];
            }
            X = f->xs;
        }
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, m, 1, X, dim, 1,
                    f->G + ((size_t)l * f->hg + k) * dim * dim, dim);
    }
}

// One call of n tokens at context positions p0.. (mode 0: pass 1, 1: pass 2
// training, 2: pass 2 held out, 3: an IRLS pass).
static int fit_call(fitter *f, const int32_t *ids, int n, int p0, int mode) {
    const aha_fit_opts *o = f->o;
    const int L = f->L, H = f->H, dim = f->dim, W = o->window;
    aha_probe p = {0};
    p.sinks = o->s.sinks, p.attn_in = f->attn_in;
    if (f->fused) p.router = &f->route, p.window = W, p.gate = f->gate; // --exposed: the labels under the routed upstream
    const int errs = o->budget >= 0 || o->layer_cuts; // pass 2 keeps the training decisions' window errors
    if (mode != 1 || errs) { // the labels: the dependency pass at W
        p.eps = &f->eps, p.n_eps = 1, p.dep = f->dep;
        if (o->label == AHA_LABEL_WERR) p.werr_windows = &o->window, p.n_werr = 1, p.werr = f->werr;
    }
    if (aha_forward_probe(&f->m, &f->st, ids, n, 0, &p) != 0) return -1;
    const int i0 = p0 >= W ? 0 : W - p0; // t < W: both branches are the same, no information
    const int m = n - i0;
    if (m <= 0) return 0;
    for (int l = 0; l < L; l++) {
        if (f->m.layers[l].window) continue; // natively local: not the router's
        const float *x = f->attn_in + ((size_t)l * n + i0) * dim;
        if (mode == 0 || mode == 3) {
            accumulate(f, l, x, m, i0, n, mode == 3);
            continue;
        }
        logits_of(f, l, x, m);
        for (int i = 0; mode == 1 && i < m * H; i++)
            if (dvec_push(f->grp ? &f->grp[group_of(f, l, i % H)] : &f->train, f->lg[i],
                          errs ? (float)werr_of(f, l, i0 + i / H, i % H, n) : 0) != 0)
                return -1;
    }
    if (mode == 0) f->n_train += (int64_t)f->Lg * m * H;
    for (int i = 0; mode == 2 && i < m; i++) // held out: every global layer of token i, in order
        for (int j = 0; j < f->Lg; j++) {
            const int l = f->gl[j];
            logits_of(f, l, f->attn_in + ((size_t)l * n + i0 + i) * dim, 1);
            for (int h = 0; h < H; h++) {
                double wt;
                if (fvec_push(&f->held, f->lg[h]) != 0 ||
                    aha_grow(&f->held_y, &f->held_cap, f->held.n, sizeof *f->held_y, "held-out labels") != 0)
                    return -1;
                size_t at = f->held.n - 1;
                f->held_y[at] = (uint8_t)label_of(f, l, i0 + i, h, n, &wt);
            }
        }
    return 0;
}

static void progress(const fitter *f, int pass, int final) {
    const int n_pass = 2 + f->o->irls + 2 * f->o->exposed;
    static double last;
    double now = aha_now_s();
    if (f->o->quiet || !isatty(2) || (!final && now - last < 0.25)) return;
    last = now;
    int64_t done = f->tok[0] + f->tok[1];
    double el = now - f->t0;
    fprintf(stderr, "\rfit pass %d/%d: %lld docs, %lld tokens, %.0f tok/s   ", pass, n_pass,
            (long long)(f->docs[0] + f->docs[1]), (long long)done, done / (el > 0 ? el : 1e-9));
    if (final) fprintf(stderr, "\n");
}

// One pass over the dataset: mode 0 (least squares) and 3 (IRLS) read the
// training documents, mode 1 all (held-out ones in mode 2). pass: its number.
static int fit_pass(fitter *f, int pass, int mode) {
    const aha_fit_opts *o = f->o;
    aha_ds_opts dso = {.format = o->s.format, .text_field = o->s.text_field, .max_docs = o->s.max_docs};
    aha_dataset *ds;
    if (aha_ds_open(&ds, o->s.data, &dso) != 0) return -1;
    memset(f->tok, 0, sizeof f->tok), memset(f->docs, 0, sizeof f->docs);
    if (mode == 0) f->n_train = f->n_pos = 0;
    f->t0 = aha_now_s();
    aha_doc doc;
    int more, rc = -1;
    int64_t doc_no = -1, seen = 0;
    while ((more = aha_ds_next(ds, &doc)) == 1) {
        const int ho = held_out(o, ++doc_no);
        int32_t *ids;
        size_t n;
        if (aha_doc_ids(&f->m, &doc, &ids, &n) != 0) goto out;
        for (size_t c0 = 0; c0 < n; c0 += (size_t)f->ctx) {
            int T = (int)(n - c0 < (size_t)f->ctx ? n - c0 : (size_t)f->ctx);
            if (o->s.max_tokens && seen + T > o->s.max_tokens) T = (int)(o->s.max_tokens - seen);
            if (T <= 0) break;
            seen += T;
            if (mode != 1 && ho) continue;
            aha_state_reset(&f->st, &f->m, T);
            for (int b0 = 0; b0 < T; b0 += f->B) {
                int k = T - b0 < f->B ? T - b0 : f->B;
                if (fit_call(f, ids + c0 + b0, k, b0, mode == 1 && ho ? 2 : mode) != 0) {
                    free(ids);
                    goto out;
                }
            }
            f->tok[ho] += T;
            progress(f, pass, 0);
        }
        f->docs[ho] += !(mode != 1 && ho);
        free(ids);
        if (o->s.max_tokens && seen >= o->s.max_tokens) break;
    }
    rc = more < 0 ? -1 : 0;
    progress(f, pass, 1);
out:
    aha_ds_close(ds);
    return rc;
}

// Ridge solve per (layer, head): (G + lambda * mean(diag G) * I) w = b; with
// --bias the last column is the intercept.
static int fit_solve(fitter *f) {
    const int dim = f->d1, H = f->H;
    double *A = aha_malloc((size_t)dim * dim, sizeof(double), "normal equations");
    double *rhs = aha_malloc((size_t)dim * H, sizeof(double), "normal equations");
    if (!A || !rhs) {
        free(A), free(rhs);
        return -1;
    }
    int rc = 0;
    for (int l = 0; rc == 0 && l < f->L; l++)
        for (int k = 0; rc == 0 && !f->m.layers[l].window && k < f->hg; k++) { // natively local: rows stay 0
            memcpy(A, f->G + ((size_t)l * f->hg + k) * dim * dim, sizeof(double) * dim * dim);
            double tr = 0;
            for (int j = 0; j < dim; j++) tr += A[(size_t)j * dim + j];
            double lam = f->o->ridge * (tr > 0 ? tr / dim : 1) + 1e-12;
            for (int j = 0; j < dim; j++) A[(size_t)j * dim + j] += lam;
            int nrhs = f->hg == 1 ? H : 1, info = 0;
            const double *b = f->b + ((size_t)l * H + (f->hg == 1 ? 0 : k)) * dim;
            memcpy(rhs, b, sizeof(double) * dim * nrhs); // [nrhs, dim] row-major = [dim, nrhs] col-major
            // row-major upper = column-major lower
            dposv_("L", &dim, &nrhs, A, &dim, rhs, &dim, &info);
            if (info != 0) {
                aha_err("layer %d: the normal equations are not positive definite (raise --ridge)", l);
                rc = -1;
            }
            for (int r = 0; r < nrhs; r++) {
                const size_t lh = (size_t)l * H + (f->hg == 1 ? r : k);
                for (int j = 0; j < f->dim; j++) f->w[lh * f->dim + j] = (float)rhs[(size_t)r * dim + j];
                if (f->bias) f->bias[lh] = dim > f->dim ? (float)rhs[(size_t)r * dim + f->dim] : 0;
            }
        }
    free(A), free(rhs);
    return rc;
}

static int cmp_decision(const void *a, const void *b) {
    float x = ((const decision *)a)->logit, y = ((const decision *)b)->logit;
    return (x > y) - (x < y);
}

// The threshold on N logits sorted ascending with k of them above it
// (between the two that straddle it, as a float keeps them apart).
static double cut_at(const decision *s, size_t N, size_t k) {
    if (k == 0) return (double)s[N - 1].logit + 1;
    if (k == N) return (double)s[0].logit - 1;
    double cut = ((double)s[N - k - 1].logit + s[N - k].logit) / 2;
    return (float)cut >= s[N - k].logit || (float)cut < s[N - k - 1].logit ? s[N - k - 1].logit : cut;
}

// Sort n decisions by logit, ascending.
static void sort_decisions(decision *s, size_t n) { qsort(s, n, sizeof *s, cmp_decision); }

typedef struct { // a stretch of a layer's hull: its next decisions to turn global
    double slope;  // the window error they save per decision (the layer's marginal cost there)
    int g;         // the layer's group
    size_t k0, k1; // the layer's global decisions before and after the stretch
} stretch;

static int cmp_stretch(const void *a, const void *b) {
    const stretch *x = a, *y = b;
    if (x->slope != y->slope) return x->slope < y->slope ? 1 : -1; // steepest first
    if (x->g != y->g) return x->g - y->g;
    return (x->k0 > y->k0) - (x->k0 < y->k0);
}

// The stretches of the upper concave hull of S(k), the window error a layer
// saves with its k highest logits global (n decisions s sorted ascending; k
// at the ends of groups of equal logits, which a threshold cannot split), into
// st; their count. hk, hs: room for n + 1 hull points.
static size_t hull_stretches(const decision *s, size_t n, int g, size_t *hk, double *hs, stretch *st) {
    size_t h = 0, k = 0;
    double S = 0;
    hk[0] = 0, hs[0] = 0;
    while (k < n) {
        const float z = s[n - 1 - k].logit;
        do S += s[n - 1 - k].err, k++;
        while (k < n && s[n - 1 - k].logit == z);
        // drop the last point while it is not above the chord to the new one (the hull stays concave)
        while (h >= 1 && (hs[h] - hs[h - 1]) * (double)(k - hk[h - 1]) <= (S - hs[h - 1]) * (double)(hk[h] - hk[h - 1]))
            h--;
        hk[++h] = k, hs[h] = S;
    }
    for (size_t j = 1; j <= h; j++)
        st[j - 1] = (stretch){(hs[j] - hs[j - 1]) / (double)(hk[j] - hk[j - 1]), g, hk[j - 1], hk[j]};
    return h;
}

// --layer-cuts: k[g], how many of layer group g's training decisions (sorted
// ascending) go global, round(F * N) in all, for the least window error left
// local: the stretches of every layer's hull are taken steepest first (the
// layer whose next decisions save the most error per decision), the last in
// part, so the marginal costs are equal across layers at the cuts. 0 or -1.
static int layer_budgets(const fitter *f, size_t *k) {
    size_t N = 0, most = 0;
    for (int g = 0; g < f->n_grp; g++) N += f->grp[g].n, most = f->grp[g].n > most ? f->grp[g].n : most;
    stretch *st = aha_malloc(N ? N : 1, sizeof *st, "layer cuts");
    size_t *hk = aha_malloc(most + 1, sizeof *hk, "layer cuts");
    double *hs = aha_malloc(most + 1, sizeof *hs, "layer cuts");
    int rc = st && hk && hs ? 0 : -1;
    size_t ns = 0;
    for (int g = 0; rc == 0 && g < f->n_grp; g++) ns += hull_stretches(f->grp[g].v, f->grp[g].n, g, hk, hs, st + ns);
    if (rc == 0) qsort(st, ns, sizeof *st, cmp_stretch);
    size_t left = (size_t)llround(f->o->target * (double)N);
    for (int g = 0; g < f->n_grp; g++) k[g] = 0;
    for (size_t i = 0; rc == 0 && i < ns && left > 0; i++) {
        size_t take = st[i].k1 - st[i].k0 < left ? st[i].k1 - st[i].k0 : left;
        k[st[i].g] = st[i].k0 + take, left -= take;
    }
    free(st), free(hk), free(hs);
    return rc;
}

// The window error the n decisions s (sorted ascending) leave local with their
// k highest logits global.
static double error_left(const decision *s, size_t n, size_t k) {
    double e = 0;
    for (size_t i = 0; i + k < n; i++) e += s[i].err;
    return e;
}

// --layer-cuts: each layer's cut and fraction, and the window error left
// local beside one shared threshold's at the same total.
static int print_layer_cuts(const fitter *f, const double *cut, const size_t *k) {
    size_t N = 0, K = 0, at = 0;
    double e = 0;
    for (int g = 0; g < f->n_grp; g++) N += f->grp[g].n, K += k[g], e += error_left(f->grp[g].v, f->grp[g].n, k[g]);
    decision *all = aha_malloc(N ? N : 1, sizeof *all, "layer cuts");
    if (!all) return -1;
    for (int g = 0; g < f->n_grp; g++)
        memcpy(all + at, f->grp[g].v, f->grp[g].n * sizeof *all), at += f->grp[g].n;
    sort_decisions(all, N);
    printf("--layer-cuts: one cut per layer, %zu of %zu training decisions global (%.6f)\n", K, N,
           N ? (double)K / N : 0);
    printf("%-6s %12s %9s %9s\n", "layer", "cut", "global", "fraction");
    for (int j = 0; j < f->Lg; j++) {
        const int l = f->gl[j];
        const size_t n = f->grp[l].n;
        printf("%-6d %12.6g %9zu %9.4f\n", l, cut[l], k[l], n ? (double)k[l] / n : 0);
    }
    printf("window error left local on the fitting data: %.6g (one shared threshold at the same total: %.6g)\n", e,
           error_left(all, N, K));
    free(all);
    return 0;
}

// --per-head / --layer-cuts: each group's own cut (--per-head: each head
// global on fraction --target-global of its training decisions;
// --layer-cuts: layer_budgets), folded into the bias of its heads (the shared
// threshold is then 0); the training and held-out logits are shifted the same way.
static int group_cuts(fitter *f) {
    const int G = f->n_grp;
    double *cut = aha_calloc((size_t)G, sizeof *cut, "cuts");
    size_t *k = aha_calloc((size_t)G, sizeof *k, "cuts");
    int rc = cut && k ? 0 : -1;
    for (int g = 0; rc == 0 && g < G; g++) {
        sort_decisions(f->grp[g].v, f->grp[g].n);
        k[g] = (size_t)llround(f->o->target * (double)f->grp[g].n);
    }
    if (rc == 0 && f->o->layer_cuts) rc = layer_budgets(f, k);
    for (int g = 0; rc == 0 && g < G; g++)
        if (f->grp[g].n) cut[g] = cut_at(f->grp[g].v, f->grp[g].n, k[g]);
    if (rc == 0 && f->o->layer_cuts && f->say) rc = print_layer_cuts(f, cut, k);
    for (int l = 0; rc == 0 && l < f->L; l++)
        for (int h = 0; h < f->H; h++) f->bias[(size_t)l * f->H + h] -= (float)cut[group_of(f, l, h)];
    for (int g = 0; rc == 0 && g < G; g++) { // each group moves into the shared list, freed as it goes
        for (size_t i = 0; rc == 0 && i < f->grp[g].n; i++)
            rc = dvec_push(&f->train, (float)(f->grp[g].v[i].logit - cut[g]), f->grp[g].v[i].err);
        free(f->grp[g].v);
        f->grp[g] = (dvec){0};
    }
    for (size_t i = 0; rc == 0 && i < f->held.n; i++) // (token, layer, head) order
        f->held.v[i] = (float)(f->held.v[i] - cut[group_of(f, held_layer(f, i), (int)(i % f->H))]);
    free(cut), free(k);
    return rc;
}

// The threshold on the logits: 0 (also with --per-head); the one giving
// fraction --target-global of the training decisions global; or (--budget E) the sparsest one whose
// local decisions' window errors sum to at most E * N (a mean error E over
// every decision, the global ones counting 0). Also prints the tau that
// would give each of a few fractions, the numbers a grid of learned:TAU needs.
static double pick_threshold(fitter *f) {
    const aha_fit_opts *o = f->o;
    const size_t N = f->train.n;
    if (N == 0) return 0;
    decision *s = f->train.v;
    sort_decisions(s, N);
    double cut = 0;
    if (o->target >= 0 && !f->grp) cut = cut_at(s, N, (size_t)llround(o->target * (double)N));
    if (o->budget >= 0) {
        double sum = 0, cap = o->budget * (double)N;
        size_t j = 0; // the local decisions: the j lowest logits
        while (j < N && sum + s[j].err <= cap) sum += s[j++].err;
        while (j > 0 && j < N && s[j].logit == s[j - 1].logit) sum -= s[--j].err; // a threshold cannot split ties
        cut = cut_at(s, N, N - j);
        if (f->say)
            printf("--budget %g: %zu of %zu training decisions local, mean window error %.6g over all\n",
                   o->budget, j, N, sum / (double)N);
    }
    if (!f->say) return cut;
    static const double frac[] = {0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8};
    printf("--tau for each fraction global on the fitting data (fraction:tau):");
    for (size_t i = 0; i < sizeof frac / sizeof *frac; i++)
        printf(" %g:%.6g", frac[i], 1 / (1 + exp(-cut_at(s, N, (size_t)llround(frac[i] * (double)N)))));
    printf("\n");
    return cut;
}

static void print_metrics(const fitter *f, double cut) {
    const int L = f->L;
    printf("held-out (%lld tokens in %lld documents, decisions with t >= %d), global = logit > %.6g:\n",
           (long long)f->tok[1], (long long)f->docs[1], f->o->window, cut);
    printf("%-6s %9s %9s %9s %9s %9s\n", "layer", "accuracy", "precision", "recall", "global", "labelled");
    int64_t tot[4] = {0}; // tp fp fn tn
    for (int l = 0; l <= L; l++) {
        int64_t c[4] = {0};
        if (l == L) memcpy(c, tot, sizeof c);
        for (size_t i = 0; l < L && i < f->held.n; i++) {
            if (held_layer(f, i) != l) continue;
            int p = f->held.v[i] > cut, y = f->held_y[i];
            c[p ? (y ? 0 : 1) : (y ? 2 : 3)]++;
        }
        for (int j = 0; l < L && j < 4; j++) tot[j] += c[j];
        int64_t n = c[0] + c[1] + c[2] + c[3];
        if (!n) continue;
        char name[16];
        snprintf(name, sizeof name, l < L ? "%d" : "all", l);
        printf("%-6s %9.4f %9.4f %9.4f %9.4f %9.4f\n", name, (double)(c[0] + c[3]) / n,
               c[0] + c[1] ? (double)c[0] / (c[0] + c[1]) : NAN, c[0] + c[2] ? (double)c[0] / (c[0] + c[2]) : NAN,
               (double)(c[0] + c[1]) / n, (double)(c[0] + c[2]) / n);
    }
}

static int fit_save(const fitter *f, double cut, double frac) {
    const aha_fit_opts *o = f->o;
    const char *key[AHA_ROUTER_META_MAX], *val[AHA_ROUTER_META_MAX];
    char buf[AHA_ROUTER_META_MAX][64];
    int n = f->n_id;
    for (int i = 0; i < n; i++) key[i] = f->id_key[i], val[i] = f->id_val[i];
#define META(k, ...) (key[n] = k, snprintf(buf[n], 64, __VA_ARGS__), val[n] = buf[n], n++)
#define META_S(k, v) (key[n] = k, val[n] = v, n++)
    META_S("format", "aha-router");
    META_S("aha_version", aha_version());
    META_S("model", o->s.model);
    META("window", "%d", o->window);
    META_S("label", aha_enum_name(&aha_fit_labels, o->label));
    META("label_threshold", "%.9g", o->threshold);
    META("eps", "%.9g", o->eps);
    META("sinks", "%d", o->s.sinks);
    META_S("weight", aha_enum_name(&aha_fit_weights, o->weight));
    META("ridge", "%.9g", o->ridge);
    META("irls", "%d", o->irls);
    META("exposed", "%d", o->exposed);
    META_S("regress", aha_enum_name(&aha_fit_regressions, o->regress));
    META("bias", "%d", o->bias);
    META("per_head", "%d", o->per_head);
    META("layer_cuts", "%d", o->layer_cuts);
    META("budget", "%.9g", o->budget);
    META("target_global", "%.9g", o->target);
    META("threshold", "%.17g", cut);
    META("tau", "%.9g", 1 / (1 + exp(-cut)));
    META("fraction_global_fit", "%.9g", frac);
    META_S("data", o->s.data);
    META("ctx", "%d", f->ctx);
    META("tokens_train", "%lld", (long long)f->tok[0]);
    META("tokens_heldout", "%lld", (long long)f->tok[1]);
    META("holdout", "%.9g", o->holdout);
    META("seed", "%llu", (unsigned long long)o->s.seed);
    META("max_tokens", "%lld", (long long)o->s.max_tokens);
    META_S("command_line", o->command_line ? o->command_line : "");
#undef META
#undef META_S
    return aha_router_file_save(o->out_tmp ? o->out_tmp : o->out, f->w, f->bias, f->L, f->H, f->dim, key, val, n);
}

// The fitted routers fused into q_proj, written as an AHA checkpoint.
static int fit_export(fitter *f, double cut) {
    aha_router_file rf = {.L = f->L, .H = f->H, .dim = f->dim, .w = f->w, .bias = f->bias, .threshold = cut};
    if (aha_router_fuse(&rf, &f->m, &f->exported) != 0) return -1;
    char tau[64], thr[64];
    snprintf(thr, sizeof thr, "%.17g", cut);
    snprintf(tau, sizeof tau, "%.9g", 1 / (1 + exp(-cut)));
    const char *key[] = {"format", "aha_router", "aha_router_threshold", "aha_tau"};
    const char *val[] = {"pt", f->o->out, thr, tau};
    int rc = aha_router_export(&f->m, f->o->export_tmp ? f->o->export_tmp : f->o->export_dir, key, val, 4);
    if (rc == 0)
        printf("exported %s: an AHA checkpoint (q_proj with %d router rows per layer); its decisions are the "
               "router file's with --tau %s\n", f->o->export_dir, f->H, tau);
    return rc;
}

static int fitter_init(fitter *f, const aha_fit_opts *o) {
    memset(f, 0, sizeof *f);
    f->o = o;
    if (aha_model_load_as(&f->m, o->s.model, o->s.weights) != 0) return -1;
    const aha_config *c = &f->m.cfg;
    if (o->label == AHA_LABEL_LEARNED && !c->aha) {
        aha_err("--label learned: %s has no AHA router rows in q_proj", o->s.model);
        return -1;
    }
    if (o->export_dir && strcmp(f->m.format, "safetensors") != 0) {
        aha_err("--export: %s is not a Hugging Face folder (a GGUF's tensors are laid out for llama.cpp); "
                "the router file works with it as it is", o->s.model);
        return -1;
    }
    if (o->label == AHA_LABEL_WERR && c->head_dim > AHA_WERR_MAX_DIM) {
        aha_err("--label werr takes head_dim <= %d; this model's is %d (--label deps)", AHA_WERR_MAX_DIM,
                c->head_dim);
        return -1;
    }
    if (aha_settings_resolve(&o->s, &f->m, &f->ctx) != 0) return -1;
    f->n_id = aha_router_identity(&f->m, f->id_key, f->id_val);
    f->L = c->n_layers, f->H = c->n_heads, f->dim = c->dim, f->eps = (float)o->eps;
    if (!(f->gl = aha_calloc((size_t)f->L, sizeof *f->gl, "layers"))) return -1;
    for (int l = 0; l < f->L; l++)
        if (!f->m.layers[l].window) f->gl[f->Lg++] = l;
    if (f->Lg == 0) {
        aha_err("%s: every layer is natively local (a sliding window it runs in every mode): no router to fit", o->s.model);
        return -1;
    }
    f->B = o->s.batch < f->ctx ? o->s.batch : f->ctx;
    f->cost = o->weight == AHA_WEIGHT_COST && o->label == AHA_LABEL_WERR;
    f->log_err = o->regress == AHA_REGRESS_LOG_ERROR;
    f->hg = f->cost || o->irls > 0 ? f->H : 1;
    if (aha_state_init(&f->st, &f->m, f->ctx, f->B) != 0) return -1;
    const size_t L = f->L, H = f->H, dim = f->dim, B = f->B;
    const size_t d1 = f->d1 = f->dim + (o->bias != 0);
    f->G = aha_calloc(L * f->hg * d1, d1 * sizeof(double), "normal equations");
    f->b = aha_calloc(L * H * d1, sizeof(double), "normal equations");
    f->n_grp = o->per_head ? (int)(L * H) : o->layer_cuts ? (int)L : 0;
    if (o->bias || f->n_grp) f->bias = aha_calloc(L * H, sizeof(float), "router biases");
    if (f->n_grp) f->grp = aha_calloc((size_t)f->n_grp, sizeof *f->grp, "cut groups");
    f->w = aha_calloc(L * H * dim, sizeof(float), "router weights");
    f->attn_in = aha_malloc(L * B * dim, sizeof(float), "attention inputs");
    f->dep = aha_malloc(L * B * H, sizeof(uint32_t), "labels");
    f->werr = aha_malloc(L * B * H, sizeof(float), "labels");
    f->xs = aha_malloc(B * d1, sizeof(double), "rows");
    f->xd = aha_malloc(B * d1, sizeof(double), "rows");
    f->ss = aha_malloc(B * H, sizeof(double), "rows");
    f->ys = aha_malloc(B * H, sizeof(double), "rows");
    f->lg = aha_malloc(B * H, sizeof(float), "logits");
    if (o->exposed && !(f->gate = aha_malloc(L * B * H, 1, "decisions"))) return -1;
    if ((o->bias || f->n_grp) && !f->bias) return -1;
    if (f->n_grp && !f->grp) return -1;
    return f->G && f->b && f->w && f->attn_in && f->dep && f->werr && f->xs && f->xd && f->ss && f->ys && f->lg ? 0 : -1;
}

static void fitter_free(fitter *f) {
    aha_state_free(&f->st);
    free(f->G), free(f->b), free(f->w), free(f->attn_in), free(f->dep), free(f->werr);
    free(f->xs), free(f->xd), free(f->ss), free(f->ys), free(f->lg), free(f->train.v);
    free(f->held.v), free(f->held_y), free(f->bias), free(f->gl), free(f->gate);
    for (int i = 0; f->grp && i < f->n_grp; i++) free(f->grp[i].v);
    free(f->grp);
    aha_model_free(&f->m);
    aha_router_unfuse(f->fused, f->L); // after the model's last use
    aha_router_unfuse(f->exported, f->L);
    aha_router_free(&f->route);
}

// Before a pass that accumulates them anew (IRLS, --exposed).
static void clear_normal_equations(fitter *f) {
    memset(f->G, 0, (size_t)f->L * f->hg * f->d1 * f->d1 * sizeof(double));
    memset(f->b, 0, (size_t)f->L * f->H * f->d1 * sizeof(double));
}

// Pass 2 (number pass): the logits of every document; the training ones set
// the threshold *cut, the held-out ones are scored against it.
static int fit_threshold(fitter *f, int pass, double *cut) {
    f->train.n = 0, f->held.n = 0;
    if (fit_pass(f, pass, 1) != 0 || (f->grp && group_cuts(f) != 0)) return -1;
    *cut = pick_threshold(f);
    return 0;
}

// --exposed, one round (passes pass and pass + 1): attention follows the
// routers so far at threshold *cut, fused into q_proj (as record --router
// --route learned runs them); every layer's normal equations are rebuilt from
// the attention inputs and labels of that routed pass and solved; pass 2,
// routed the same way, sets *cut again.
static int exposed_round(fitter *f, int pass, double *cut) {
    aha_router_file rf = {.L = f->L, .H = f->H, .dim = f->dim, .w = f->w, .bias = f->bias, .threshold = *cut};
    float **fused;
    const int first = !f->fused;
    if (aha_router_fuse(&rf, &f->m, &fused) != 0) return -1; // q_proj's rows read from the last fusion's
    aha_router_unfuse(f->fused, f->L);
    f->fused = fused;
    aha_router_free(&f->route);
    const aha_policy learned = {.kind = AHA_ROUTER_LEARNED, .param = NAN};
    if (aha_router_init(&f->route, &learned, "--exposed", f->L, f->H, 1, (float)(1 / (1 + exp(-*cut))), f->eps, 0) != 0)
        return -1;
    if (first) { // the query rows grew by the router's
        aha_state_free(&f->st);
        if (aha_state_init(&f->st, &f->m, f->ctx, f->B) != 0) return -1;
    }
    clear_normal_equations(f);
    if (fit_pass(f, pass, 0) != 0 || fit_solve(f) != 0) return -1;
    printf("exposed round %d: routed by the last routers at tau %.6g, %lld training decisions labelled global %.4f\n",
           (pass - 1) / 2, f->route.tau, (long long)f->n_train, (double)f->n_pos / (double)(f->n_train ? f->n_train : 1));
    return fit_threshold(f, pass + 1, cut);
}

int aha_fit_run(const aha_fit_opts *o) {
    fitter f;
    int rc = -1;
    double t_start = aha_now_s(), cut;
    if (fitter_init(&f, o) != 0) goto out;
    if (fit_pass(&f, 1, 0) != 0) goto out;
    if (f.n_train == 0) {
        aha_err("%s: no training decisions with t >= %d (%lld training tokens; more data, a lower --holdout "
                "or a smaller --window)", o->s.data, o->window, (long long)f.tok[0]);
        goto out;
    }
    double t1 = aha_now_s();
    if (fit_solve(&f) != 0) goto out;
    for (int it = 0; it < o->irls; it++) { // Newton steps on the logistic loss
        clear_normal_equations(&f);
        if (fit_pass(&f, 2 + it, 3) != 0 || fit_solve(&f) != 0) goto out;
    }
    double t2 = aha_now_s();
    f.say = o->exposed == 0;
    if (fit_threshold(&f, 2 + o->irls, &cut) != 0) goto out;
    double t3 = aha_now_s();
    for (int r = 1; r <= o->exposed; r++) {
        f.say = r == o->exposed;
        if (exposed_round(&f, 1 + 2 * r, &cut) != 0) goto out;
    }
    double t4 = aha_now_s();
    int64_t above = 0;
    for (size_t i = 0; i < f.train.n; i++) above += f.train.v[i].logit > cut;
    double frac = f.train.n ? (double)above / f.train.n : 0;
    printf("fit %s on %s: window %d, label %s", o->s.model, o->s.data, o->window,
           aha_enum_name(&aha_fit_labels, o->label));
    if (o->label == AHA_LABEL_WERR) printf(" > %g", o->threshold);
    if (o->label == AHA_LABEL_DEPS) printf(" (eps %g)", o->eps);
    printf(", sinks %d, ctx %d, weight %s, %s\n", o->s.sinks, f.ctx, f.cost ? "cost" : "none",
           f.log_err ? "least squares on ln(error / threshold)" : o->irls ? "least squares + IRLS" : "least squares");
    if (o->irls) printf("IRLS: %d Newton steps on the logistic loss\n", o->irls);
    if (o->exposed)
        printf("exposed: %d rounds; each layer refitted on the attention inputs, and labelled by its own full "
               "attention against its window on them, of the forward pass routed by the last round's routers\n",
               o->exposed);
    if (f.bias)
        printf("router with a bias per head (--bias, --per-head, --layer-cuts): it runs in record and sweep but "
               "cannot be exported as an AHA checkpoint\n");
    if (f.Lg < f.L) {
        printf("global layers only: %d of %d; natively local (they run their window whatever the router says; "
               "their router rows stay 0):", f.Lg, f.L);
        for (int l = 0, k = 0; l < f.L; l++)
            if (f.m.layers[l].window) printf("%s %d (window %d)", k++ ? "," : "", l, f.m.layers[l].window);
        printf("\n");
    }
    printf("training: %lld tokens in %lld documents, %lld decisions with t >= %d, labelled global %.4f\n",
           (long long)f.tok[0], (long long)f.docs[0], (long long)f.n_train, o->window,
           (double)f.n_pos / f.n_train);
    printf("fraction global on the fitting data (decisions with t >= %d): %.6f (threshold %.6g on the logits, "
           "tau %.6g)\n", o->window, frac, cut, 1 / (1 + exp(-cut)));
    if (f.held.n) print_metrics(&f, cut);
    else printf("held-out: no decisions (no document held out, or all shorter than the window)\n");
    if (fit_save(&f, cut, frac) != 0 || (o->export_dir && fit_export(&f, cut) != 0)) goto out;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double el = aha_now_s() - t_start;
    printf("wrote %s: %d layers x [%d, %d]; %.1f s (pass 1 %.1f s, solve %.1f s, pass 2 %.1f s, exposed rounds "
           "%.1f s), %.0f tok/s, peak RSS %.0f MiB\n", o->out, f.L, f.H, f.dim, el, t1 - t_start, t2 - t1, t3 - t2,
           t4 - t3, (f.tok[0] + f.tok[1]) / (el > 0 ? el : 1), ru.ru_maxrss / 1024.0);
    rc = 0;
out:
    fitter_free(&f);
    return rc;
}
