#include "stats.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "f16.h"

// Decisions per slab when the caller does not choose: ~16 MiB of d_eps.
#define SLAB_DECISIONS (4 << 20)

#define JOINT(s, e, l, h, g) ((s)->joint + ((((size_t)(e) * (s)->L + (l)) * (s)->H + (h)) * 2 + (g)) * (s)->nb * (s)->nb)

static int bucket_of(const int *w, int nw, int64_t x, int strict) {
    int b = 0;
    while (b < nw && (strict ? w[b] < x : w[b] <= x)) b++;
    return b;
}

int aha_stats_scan_max(const aha_tr *trs, int n, trace_dset_id ds, int block, int32_t *buf, int32_t *max) {
    *max = 0;
    for (int k = 0; k < n; k++)
        for (int64_t t0 = 0; t0 < trs[k].n_tokens; t0 += block) {
            int64_t m = trs[k].n_tokens - t0 < block ? trs[k].n_tokens - t0 : block;
            if (aha_tr_read(&trs[k], ds, 0, t0, m, buf) != 0) return -1; // checked: >= 0
            for (int64_t i = 0; i < m; i++)
                if (buf[i] > *max) *max = buf[i];
        }
    return 0;
}

typedef struct {              // one slab's buffers
    float *werr;              // [L, block, H] window errors
    int32_t *pos;             // [block]
    int64_t *doc;             // [block] document index (over all shards)
    uint32_t *dep;            // [L, block, H]
    uint8_t *gate;            // [L, block, H]
    float *nll, *kl;          // [block] each
    int32_t *tok_db;          // [threads, block, nb] decisions per token and d bucket, per thread
    int threads;
} slab_buf;

// d_eps of one slab into the histograms, a layer per thread (each owns its
// layer's rows; per-document counts go through per-thread token counts).
// The reader checked 1 <= d <= position + 1 <= max_d. gate: the slab's
// learned decisions, or NULL.
static void add_dep(aha_stats *s, int e, int64_t m, const slab_buf *b, const uint8_t *gate, const int *pbk,
                    const uint8_t *dlut) {
    const int L = s->L, H = s->H, nb = s->nb;
    memset(b->tok_db, 0, (size_t)b->threads * (size_t)m * (size_t)nb * sizeof *b->tok_db);
#pragma omp parallel for schedule(dynamic) num_threads(b->threads)
    for (int l = 0; l < L; l++) {
        int32_t *tok = b->tok_db + (size_t)omp_get_thread_num() * (size_t)m * nb;
        int64_t *hist = s->hist + ((size_t)e * L + l) * (s->max_d + 1);
        int64_t *joint = JOINT(s, e, l, 0, 0);
        const int global = !aha_trace_layer_window(&s->meta.m, l); // per-document counts: global layers only
        for (int64_t i = 0; i < m; i++) {
            const uint32_t *d = b->dep + ((size_t)l * m + i) * H;
            const uint8_t *g = gate ? gate + ((size_t)l * m + i) * H : NULL;
            int64_t *jp = joint + pbk[i] * nb;
            for (int h = 0; h < H; h++) {
                int db = dlut[d[h]];
                hist[d[h]]++;
                jp[((size_t)h * 2 + (g ? g[h] != 0 : 0)) * nb * nb + db]++;
                tok[i * nb + db] += global;
            }
        }
    }
    for (int th = 0; th < b->threads; th++)
        for (int64_t i = 0; i < m; i++) {
            int64_t *dd = s->doc_dep + ((size_t)e * s->meta.n_docs + b->doc[i]) * nb;
            for (int db = 0; db < nb; db++) dd[db] += b->tok_db[((size_t)th * m + i) * nb + db];
        }
}

// Window-output errors of one slab into the histograms.
static int add_werr(aha_stats *s, const aha_tr *tr, int i, int64_t t0, int64_t m, const slab_buf *b) {
    if (aha_tr_read(tr, TD_WERR, i, t0, m, b->werr) != 0) return -1;
    int64_t *hist = s->werr_hist + (size_t)i * AHA_WERR_BINS;
    const size_t n = (size_t)s->L * (size_t)m * (size_t)s->H;
    for (size_t k = 0; k < n; k++) {
        if (aha_trace_layer_window(&s->meta.m, (int)(k / s->H / (size_t)m))) continue; // global layers only
        if (!(b->werr[k] >= 0)) {
            char name[64];
            aha_err("%s: %s is %g at layer %zu token %lld head %zu (not an error >= 0)", tr->path,
                    aha_tr_name(tr, TD_WERR, i, name, sizeof name),
                    b->werr[k], k / s->H / (size_t)m, (long long)(t0 + (int64_t)(k / s->H % (size_t)m)), k % s->H);
            return -1;
        }
        hist[aha_f32_to_f16(b->werr[k]) & 0x7fff]++; // exact: the file holds float16; -0 is 0
        s->werr_sum[i] += b->werr[k];
    }
    return 0;
}

// Per-token NLL / KL and the run's own decisions, at every position and at
// t >= the run's window (b->pos: the slab's positions).
static int add_run(aha_stats *s, const aha_tr *tr, int r, int64_t t0, int64_t m, slab_buf *b) {
    aha_run_stats *rs = &s->runs[r];
    // the shards' runs are the first's (aha_tr_check_same)
    if (aha_tr_read(tr, TD_RUN_NLL, r, t0, m, b->nll) != 0 || aha_tr_read(tr, TD_RUN_KL, r, t0, m, b->kl) != 0)
        return -1;
    aha_trace_quality_add(&rs->q, b->nll, b->kl, m);
    const int w = rs->info.window;
    for (int64_t i = 0; i < m; i++) rs->tok_tw += b->pos[i] >= w;
    if (!rs->gate_l) return 0;
    if (aha_tr_read(tr, TD_RUN_GATE, r, t0, m, b->gate) != 0) return -1;
    for (int l = 0; l < s->L; l++)
        for (int64_t i = 0; !aha_trace_layer_window(&s->meta.m, l) && i < m; i++) { // global layers only
            const uint8_t *g = b->gate + ((size_t)l * m + i) * s->H;
            int64_t c = 0;
            for (int h = 0; h < s->H; h++) c += g[h] != 0;
            rs->gate_l[l] += c;
            rs->gate_l[s->L + l] += b->pos[i] >= w ? c : 0;
        }
    return 0;
}

// One trace (its document d is row row[d] of all) into s, slab by slab:
// position, then the learned gate, then d_eps per eps, then each run.
static int add_trace(aha_stats *s, const aha_tr *tr, const int64_t *row, int64_t block, slab_buf *b,
                     int *pbk, const uint8_t *dlut) {
    const int nb = s->nb;
    const int64_t *offs = tr->doc_offsets, nd = tr->n_docs;
    int64_t cur = 0;
    int rc = 0;
    for (int64_t t0 = 0; rc == 0 && t0 < tr->n_tokens; t0 += block) {
        int64_t m = tr->n_tokens - t0 < block ? tr->n_tokens - t0 : block;
        if ((rc = aha_tr_read(tr, TD_POSITION, 0, t0, m, b->pos)) != 0) break;
        for (int64_t i = 0; i < m; i++) {
            while (cur < nd - 1 && t0 + i >= offs[cur + 1]) cur++;
            b->doc[i] = row[cur];
            pbk[i] = bucket_of(s->meta.m.windows, s->nw, b->pos[i], 0);
            s->pos_n[pbk[i]]++;
            s->doc_n[b->doc[i] * nb + pbk[i]]++;
        }
        if (s->meta.m.aha) {
            if ((rc = aha_tr_read(tr, TD_GATE, 0, t0, m, b->gate)) != 0) break;
            for (int l = 0; l < s->L; l++)
                for (int64_t i = 0; !aha_trace_layer_window(&s->meta.m, l) && i < m; i++) { // global layers only
                    const uint8_t *g = b->gate + ((size_t)l * m + i) * s->H;
                    for (int h = 0; h < s->H; h++) s->doc_gate[b->doc[i] * nb + pbk[i]] += g[h] != 0;
                }
        }
        for (int e = 0; rc == 0 && e < s->n_eps; e++)
            if ((rc = aha_tr_read(tr, TD_DEP, e, t0, m, b->dep)) == 0)
                add_dep(s, e, m, b, s->meta.m.aha ? b->gate : NULL, pbk, dlut);
        for (int i = 0; rc == 0 && s->has_werr && i < s->nw; i++) rc = add_werr(s, tr, i, t0, m, b);
        for (int r = 0; rc == 0 && r < s->n_runs; r++) rc = add_run(s, tr, r, t0, m, b);
    }
    return rc ? -1 : 0;
}

// The per-document rows of trs[0..n) in the dataset's order: s->docs, and
// *rows (malloc'd): trace k's document d is row (*rows)[base_k + d], base_k
// the documents of the traces before k. 0 or -1.
static int doc_rows(aha_stats *s, const aha_tr *trs, int n, int64_t **rows) {
    int64_t n_all = 0, *base = aha_calloc((size_t)n + 1, sizeof *base, "traces");
    int unordered;
    aha_tr_doc *order = base ? aha_tr_doc_order(trs, n, &n_all, &unordered) : NULL;
    char **src = NULL;
    int rc = order && (*rows = aha_malloc((size_t)n_all + 1, sizeof **rows, "document rows")) &&
                     (s->docs = aha_calloc((size_t)n_all + 1, sizeof *s->docs, "documents"))
                 ? 0
                 : -1;
    for (int k = 1; k <= n; k++) base[k] = base[k - 1] + trs[k - 1].n_docs;
    for (int64_t i = 0; rc == 0 && i < n_all; i++) {
        (*rows)[base[order[i].k] + order[i].d] = i;
        s->docs[i].index = order[i].index;
    }
    for (int k = 0; rc == 0 && k < n; k++) { // each row's source
        if (!(src = aha_calloc((size_t)trs[k].n_docs + 1, sizeof *src, "doc_source")) ||
            (trs[k].doc_source && trs[k].n_docs && aha_tr_read(&trs[k], TD_DOC_SOURCE, 0, 0, trs[k].n_docs, src) != 0))
            rc = -1;
        for (int64_t d = 0; rc == 0 && d < trs[k].n_docs; d++)
            if (!(s->docs[(*rows)[base[k] + d]].source = strdup(src[d] ? src[d] : ""))) {
                aha_err("out of memory");
                rc = -1;
            }
        if (src) aha_tr_free_text(trs[k].n_docs, src);
        free(src);
        src = NULL;
    }
    free(base);
    free(order);
    return rc;
}

static int alloc_all(aha_stats *s) {
    size_t L = (size_t)s->L, H = (size_t)s->H, nb = (size_t)s->nb, E = (size_t)s->n_eps;
    size_t nd = (size_t)s->meta.n_docs;
    s->hist = aha_calloc(E * L * ((size_t)s->max_d + 1), sizeof(int64_t), "d_eps histogram");
    s->joint = aha_calloc(E * L * H * 2 * nb * nb, sizeof(int64_t), "decision counts");
    s->pos_n = aha_calloc(nb, sizeof(int64_t), "position counts");
    s->doc_n = aha_calloc(nd * nb, sizeof(int64_t), "per-document counts");
    s->doc_dep = aha_calloc(E * nd * nb, sizeof(int64_t), "per-document counts");
    s->doc_gate = aha_calloc(nd * nb, sizeof(int64_t), "per-document counts");
    int ok = s->hist && s->joint && s->pos_n && s->doc_n && s->doc_dep && s->doc_gate;
    if (ok && s->has_werr)
        ok = (s->werr_hist = aha_calloc((size_t)s->nw * AHA_WERR_BINS, sizeof(int64_t), "error counts")) &&
             (s->werr_sum = aha_calloc((size_t)s->nw, sizeof(double), "error sums"));
    for (int r = 0; ok && r < s->n_runs; r++)
        if (s->runs[r].info.has_gate)
            ok = (s->runs[r].gate_l = aha_calloc(2 * (size_t)L, sizeof(int64_t), "run counts")) != NULL;
    return ok ? 0 : -1;
}

int aha_stats_gather(aha_stats *s, const char *const *paths, int n, int block) {
    memset(s, 0, sizeof *s);
    aha_tr *trs = aha_calloc((size_t)n, sizeof *trs, "traces");
    if (!trs) return -1;
    int rc = -1, opened = 0;
    for (; opened < n; opened++)
        if (aha_tr_open(&trs[opened], paths[opened]) != 0 ||
            (opened > 0 && aha_tr_check_same(&trs[0], &trs[opened]) != 0)) {
            opened++; // aha_tr_close is safe on a failed open
            goto done;
        }
    rc = aha_stats_gather_open(s, trs, n, paths, block);
done:
    for (int k = 0; k < opened; k++) aha_tr_close(&trs[k]);
    free(trs);
    return rc;
}

int aha_stats_gather_open(aha_stats *s, const aha_tr *trs, int n, const char *const *paths, int block) {
    memset(s, 0, sizeof *s);
    int rc = -1;
    slab_buf b = {0};
    int *pbk = NULL;
    uint8_t *dlut = NULL;
    int64_t *rows = NULL; // [documents] each one's row in the dataset's order
    int checked;
    if (aha_tr_check_shards(trs, n, &s->shards, &s->shards_missing) != 0 ||
        aha_tr_dataset_check(trs, n, &checked) != 0 || aha_tr_dup(&s->meta, &trs[0]) != 0 ||
        doc_rows(s, trs, n, &rows) != 0)
        goto done;
    s->paths = paths;
    s->n_files = n;
    s->L = s->meta.m.n_layers;
    s->H = s->meta.m.n_heads;
    s->n_eps = s->meta.m.n_eps;
    s->nw = s->meta.m.n_windows;
    s->nb = s->nw + 1;
    s->has_werr = s->meta.m.werr;
    s->n_global = aha_trace_n_global(&s->meta.m);
    s->meta.n_docs = 0;
    s->meta.n_tokens = 0;
    s->meta.complete = 1;
    for (int k = 0; k < n; k++) {
        s->meta.n_docs += trs[k].n_docs;
        s->meta.n_tokens += trs[k].n_tokens;
        s->meta.complete &= trs[k].complete;
    }
    s->n_runs = s->meta.n_runs;
    for (int r = 0; r < s->n_runs; r++) {
        s->runs[r].info = s->meta.runs[r];
        s->runs[r].info.flops_executed = 0;
        s->runs[r].info.flops_full = 0;
        for (int k = 0; k < n; k++) {
            s->runs[r].info.flops_executed += trs[k].runs[r].flops_executed;
            s->runs[r].info.flops_full += trs[k].runs[r].flops_full;
        }
    }
    if (block <= 0) { // whole chunks, about SLAB_DECISIONS decisions
        int c = s->meta.chunk_tokens;
        int64_t per = (int64_t)s->L * s->H;
        block = (int)((SLAB_DECISIONS / per + c - 1) / c * c);
    }
    int32_t max_pos;
    b.threads = omp_get_max_threads() < s->L ? omp_get_max_threads() : s->L;
    size_t lth = (size_t)s->L * (size_t)block * (size_t)s->H;
    if (!(b.pos = aha_malloc((size_t)block, sizeof *b.pos, "slab")) ||
        aha_stats_scan_max(trs, n, TD_POSITION, block, b.pos, &max_pos) != 0)
        goto done;
    s->max_d = max_pos + 1;
    if (alloc_all(s) != 0 || !(b.doc = aha_malloc((size_t)block, sizeof *b.doc, "slab")) ||
        !(b.dep = aha_malloc(lth, sizeof *b.dep, "slab")) || !(b.gate = aha_malloc(lth, 1, "slab")) ||
        !(b.nll = aha_malloc((size_t)block, sizeof *b.nll, "slab")) ||
        !(b.kl = aha_malloc((size_t)block, sizeof *b.kl, "slab")) ||
        !(b.werr = aha_malloc(s->has_werr ? lth : 1, sizeof *b.werr, "slab")) ||
        !(b.tok_db = aha_malloc((size_t)b.threads * (size_t)block * (size_t)s->nb, sizeof *b.tok_db, "slab")) ||
        !(pbk = aha_malloc((size_t)block, sizeof *pbk, "slab")) ||
        !(dlut = aha_malloc((size_t)s->max_d + 1, 1, "slab")))
        goto done;
    for (int d = 0; d <= s->max_d; d++) dlut[d] = (uint8_t)bucket_of(s->meta.m.windows, s->nw, d, 1);
    int64_t base = 0;
    for (int k = 0; k < n; base += trs[k].n_docs, k++)
        if (add_trace(s, &trs[k], rows + base, block, &b, pbk, dlut) != 0) goto done;
    rc = 0;
done:
    free(rows);
    free(b.werr);
    free(b.pos);
    free(b.doc);
    free(b.dep);
    free(b.gate);
    free(b.nll);
    free(b.kl);
    free(b.tok_db);
    free(pbk);
    free(dlut);
    if (rc != 0) aha_stats_free(s);
    return rc;
}

void aha_stats_free(aha_stats *s) {
    for (int64_t d = 0; s->docs && d < s->meta.n_docs; d++) free(s->docs[d].source);
    free(s->docs);
    free(s->hist);
    free(s->joint);
    free(s->pos_n);
    free(s->doc_n);
    free(s->doc_dep);
    free(s->doc_gate);
    free(s->werr_hist);
    free(s->werr_sum);
    for (int r = 0; r < s->n_runs; r++) free(s->runs[r].gate_l);
    aha_tr_close(&s->meta);
    free(s->shards);
    memset(s, 0, sizeof *s);
}

int aha_stats_window_index(const aha_stats *s, int w) {
    for (int i = 0; i < s->nw; i++)
        if (s->meta.m.windows[i] == w) return i;
    return -1;
}

// Layer li is one of layer selector l's: l itself, or (l < 0) every global layer.
static int layer_in(const aha_stats *s, int l, int li) {
    return l >= 0 ? li == l : !aha_trace_layer_window(&s->meta.m, li);
}

aha_frac aha_stats_frac(const aha_stats *s, int e, int i, int l, int h, int tw) {
    aha_frac f = {0, 0};
    int nb = s->nb;
    for (int li = l < 0 ? 0 : l; li < (l < 0 ? s->L : l + 1); li++)
        if (layer_in(s, l, li))
        for (int hi = h < 0 ? 0 : h; hi < (h < 0 ? s->H : h + 1); hi++)
            for (int g = 0; g < 2; g++) {
                const int64_t *j = JOINT(s, e < 0 ? 0 : e, li, hi, g);
                for (int pb = tw ? i + 1 : 0; pb < nb; pb++)
                    for (int db = 0; db < nb; db++) {
                        f.total += j[pb * nb + db];
                        if (e < 0 ? g : db > i) f.global += j[pb * nb + db];
                    }
            }
    return f;
}

aha_frac aha_stats_doc_frac(const aha_stats *s, int e, int i, int64_t doc, int tw) {
    aha_frac f = {0, 0};
    int nb = s->nb;
    const int64_t *n = s->doc_n + doc * nb;
    const int64_t *dd = e < 0 ? s->doc_gate + doc * nb : s->doc_dep + ((size_t)e * s->meta.n_docs + doc) * nb;
    for (int b = tw ? i + 1 : 0; b < nb; b++) f.total += n[b] * s->n_global * s->H;
    // oracle: d > w_i implies t >= w_i, so the count is the same for both
    for (int b = e < 0 ? (tw ? i + 1 : 0) : i + 1; b < nb; b++) f.global += dd[b];
    return f;
}

aha_confusion aha_stats_confusion(const aha_stats *s, int e, int i, int l, int h, int tw) {
    aha_confusion c = {0, 0, 0, 0};
    int nb = s->nb;
    for (int li = l < 0 ? 0 : l; li < (l < 0 ? s->L : l + 1); li++)
        if (layer_in(s, l, li))
        for (int hi = h < 0 ? 0 : h; hi < (h < 0 ? s->H : h + 1); hi++)
            for (int g = 0; g < 2; g++) {
                const int64_t *j = JOINT(s, e, li, hi, g);
                for (int pb = tw ? i + 1 : 0; pb < nb; pb++)
                    for (int db = 0; db < nb; db++) {
                        int64_t x = j[pb * nb + db];
                        int oracle = db > i;
                        if (g && oracle) c.tp += x;
                        else if (g) c.fp += x;
                        else if (oracle) c.fn += x;
                        else c.tn += x;
                    }
            }
    return c;
}

// Decisions of layer l (-1 = every global one) with d_eps <= w, and all of them.
static void count_le(const aha_stats *s, int e, int l, int w, int64_t *le, int64_t *all) {
    *le = 0;
    *all = 0;
    for (int li = l < 0 ? 0 : l; li < (l < 0 ? s->L : l + 1); li++) {
        if (!layer_in(s, l, li)) continue;
        const int64_t *hist = s->hist + ((size_t)e * s->L + li) * (s->max_d + 1);
        for (int d = 1; d <= s->max_d; d++) {
            *all += hist[d];
            if (d <= w) *le += hist[d];
        }
    }
}

void aha_stats_ccdf(const aha_stats *s, int e, int l, double *out) {
    int64_t le, all;
    count_le(s, e, l, s->max_d, &le, &all);
    int64_t above = all;
    for (int w = 0; w <= s->max_d; w++) {
        for (int li = l < 0 ? 0 : l; w > 0 && li < (l < 0 ? s->L : l + 1); li++)
            if (layer_in(s, l, li)) above -= s->hist[((size_t)e * s->L + li) * (s->max_d + 1) + w];
        out[w] = all ? (double)above / (double)all : 0;
    }
}

int aha_stats_quantile(const aha_stats *s, int e, int l, double q) {
    int64_t le, all, acc = 0;
    count_le(s, e, l, s->max_d, &le, &all);
    for (int d = 1; d <= s->max_d; d++) {
        for (int li = l < 0 ? 0 : l; li < (l < 0 ? s->L : l + 1); li++)
            if (layer_in(s, l, li)) acc += s->hist[((size_t)e * s->L + li) * (s->max_d + 1) + d];
        if ((double)acc >= q * (double)all) return d;
    }
    return s->max_d;
}

double aha_stats_ppl(const aha_stats *s, int r) {
    const aha_run_stats *rs = &s->runs[r];
    return aha_trace_ppl(&rs->q);
}

int aha_stats_full_run(const aha_stats *s) {
    for (int r = 0; r < s->n_runs; r++)
        if (!s->runs[r].info.has_gate && s->runs[r].info.window == 0) return r; // no gates: full attention
    return -1;
}

double aha_stats_werr_quantile(const aha_stats *s, int i, double q) {
    const int64_t *hist = s->werr_hist + (size_t)i * AHA_WERR_BINS;
    int64_t total = 0, cum = 0;
    for (int b = 0; b < AHA_WERR_BINS; b++) total += hist[b];
    if (total == 0) return NAN;
    for (int b = 0; b < AHA_WERR_BINS; b++)
        if ((cum += hist[b]) >= q * (double)total) return aha_f16_to_f32(b);
    return aha_f16_to_f32(AHA_WERR_BINS - 1);
}

double aha_stats_werr_mean(const aha_stats *s, int i) {
    int64_t total = 0;
    for (int b = 0; b < AHA_WERR_BINS; b++) total += s->werr_hist[(size_t)i * AHA_WERR_BINS + b];
    return total ? s->werr_sum[i] / (double)total : NAN;
}

aha_frac aha_stats_werr_above(const aha_stats *s, int i, double thr) {
    aha_frac f = {0, 0};
    for (int b = 0; b < AHA_WERR_BINS; b++) {
        int64_t c = s->werr_hist[(size_t)i * AHA_WERR_BINS + b];
        f.total += c;
        if (aha_f16_to_f32(b) > thr) f.global += c;
    }
    return f;
}
