// Routed attention: per (query, head), full causal or a window of w keys
// (+ sinks). The work skipped is really skipped: global queries of a head are
// gathered and attend with one sgemm; local queries attend to their band only.
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "ops.h"

#define BLOCK 32 // local queries handled together: one band sgemm per block

// Keys visible to query position p: full causal, or window + sinks.
static int visible(int p, int global, const aha_route *r) {
    if (global || p + 1 <= r->window) return p + 1;
    int lo = p - r->window + 1;
    return r->window + (r->sinks < lo ? r->sinks : lo);
}

// All global queries of head h: gather, one sgemm over keys 0..last, softmax
// with per-row causal length, PV, scatter.
static void head_global(float *out, const float *qh, const float *kh, const float *vh,
                        const aha_attn_shape *s, int p0, const int *idx, int ng, float *buf) {
    const int D = s->head_dim, H = s->n_heads, T = p0 + idx[ng - 1] + 1;
    float *qg = buf, *att = qg + (long)ng * D, *og = att + (long)ng * T;
    for (int g = 0; g < ng; g++) memcpy(qg + (long)g * D, qh + (long)idx[g] * s->q_stride, D * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ng, T, D, aha_attn_scale(s), qg, D,
                kh, s->kv_stride, 0.0f, att, T);
    for (int g = 0; g < ng; g++) {
        float *row = att + (long)g * T;
        int len = p0 + idx[g] + 1;
        if (s->softcap) aha_softcap(row, len, s->softcap);
        aha_softmax(row, len);
        for (int j = len; j < T; j++) row[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ng, D, T, 1.0f, att, T, vh,
                s->kv_stride, 0.0f, og, D);
    for (int g = 0; g < ng; g++) memcpy(out + (long)idx[g] * H * D, og + (long)g * D, D * sizeof(float));
}

// Local queries of one block [b0, b1) of head h: scores against the band of
// keys the block's windows cover (plus sinks), then per-query masked softmax.
static void head_local_block(float *out, const float *qh, const float *kh, const float *vh,
                             const aha_attn_shape *s, int p0, int b0, int b1, const aha_route *r,
                             const uint8_t *gate, int h, float *buf) {
    const int D = s->head_dim, H = s->n_heads, nb = b1 - b0;
    const int lo = p0 + b0 - r->window + 1 > 0 ? p0 + b0 - r->window + 1 : 0, hi = p0 + b1 - 1;
    // Sinks before the last query's window: every query's own sinks are among them.
    const int last_lo = hi - r->window + 1 > 0 ? hi - r->window + 1 : 0;
    const int L = hi - lo + 1, ns = r->sinks < last_lo ? r->sinks : last_lo;
    const float scale = aha_attn_scale(s);
    float *band = buf, *sink = band + (long)nb * L, *row = sink + (long)nb * (ns ? ns : 1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, L, D, scale, qh + (long)b0 * s->q_stride,
                s->q_stride, kh + (long)lo * s->kv_stride, s->kv_stride, 0.0f, band, L);
    if (ns)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, ns, D, scale,
                    qh + (long)b0 * s->q_stride, s->q_stride, kh, s->kv_stride, 0.0f, sink, ns);
    for (int i = b0; i < b1; i++) {
        if (gate[(long)i * H + h]) continue;
        const int p = p0 + i, wlo = p - r->window + 1 > 0 ? p - r->window + 1 : 0;
        const int nsi = r->sinks < wlo ? r->sinks : wlo, nw = p - wlo + 1;
        // row = [sink scores | window scores]
        memcpy(row, sink + (long)(i - b0) * ns, nsi * sizeof(float));
        memcpy(row + nsi, band + (long)(i - b0) * L + (wlo - lo), nw * sizeof(float));
        if (s->softcap) aha_softcap(row, nsi + nw, s->softcap);
        aha_softmax(row, nsi + nw);
        float *o = out + (long)i * H * D;
        memset(o, 0, D * sizeof(float));
        for (int j = 0; j < nsi + nw; j++) {
            const float *vj = vh + (long)(j < nsi ? j : wlo + j - nsi) * s->kv_stride;
            for (int d = 0; d < D; d++) o[d] += row[j] * vj[d];
        }
    }
}

void aha_attention_routed(float *out, const float *q, const float *k, const float *v,
                          const aha_attn_shape *s, int n, int p0, const aha_route *r,
                          aha_attn_flops *flops) {
    const int H = s->n_heads, D = s->head_dim, group = s->n_heads / s->n_kv, T = p0 + n;
    double executed = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++) executed += 4.0 * D * visible(p0 + i, r->gate[(long)i * H + h], r);
    flops->executed += executed;
    flops->full += aha_attention_full_flops(s, n, p0);
    const long band = (long)BLOCK * (r->window + BLOCK + r->sinks + 1) + r->window + r->sinks;
    const long need = (long)n * (2 * D + T) + band; // global gather or one local block
#pragma omp parallel
    {
        float *buf = malloc(need * sizeof(float));
        int *idx = malloc(n * sizeof(int));
#pragma omp for schedule(dynamic, 1)
        for (int h = 0; h < H; h++) {
            const float *qh = q + (long)h * D;
            const float *kh = k + aha_attn_kv_head(s, h / group), *vh = v + aha_attn_kv_head(s, h / group);
            int ng = 0;
            for (int i = 0; i < n; i++)
                if (r->gate[(long)i * H + h]) idx[ng++] = i;
            if (ng == n) { // all global: exactly the full kernel
                aha_attention_head(out + (long)h * D, qh, kh, vh, s, n, p0, buf, NULL, h);
                continue;
            }
            if (ng) head_global(out + (long)h * D, qh, kh, vh, s, p0, idx, ng, buf);
            for (int b0 = 0; b0 < n; b0 += BLOCK) {
                int b1 = b0 + BLOCK < n ? b0 + BLOCK : n, local = 0;
                for (int i = b0; i < b1; i++) local += !r->gate[(long)i * H + h];
                if (local)
                    head_local_block(out + (long)h * D, qh, kh, vh, s, p0, b0, b1, r, r->gate, h, buf);
            }
        }
        free(buf);
        free(idx);
    }
}
