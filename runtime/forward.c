#include "forward.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "dependency.h"
#include "err.h"
#include "ops.h"
#include "weight.h"

int aha_state_init(aha_state *s, const aha_model *m, int max_ctx, int max_batch) {
    const aha_config *c = &m->cfg;
    memset(s, 0, sizeof *s);
    if (max_ctx <= 0 || max_batch <= 0) {
        aha_err("context (%d) and batch (%d) must be positive", max_ctx, max_batch);
        return -1;
    }
    s->max_ctx = max_ctx;
    s->max_batch = max_batch < max_ctx ? max_batch : max_ctx;
    s->threads = omp_get_max_threads();
    size_t B = (size_t)s->max_batch, L = (size_t)c->n_layers, H = (size_t)c->n_heads;
    size_t kvd = (size_t)c->n_kv_heads * c->head_dim, hd = H * c->head_dim;
    s->k_cache = aha_calloc(L * max_ctx, kvd * sizeof(float), "key cache");
    s->v_cache = aha_calloc(L * max_ctx, kvd * sizeof(float), "value cache");
    s->kv_new = aha_calloc(2 * B, kvd * sizeof(float), "new keys and values");
    s->x = aha_calloc(B, (size_t)c->dim * sizeof(float), "activations");
    s->xn = aha_calloc(B, (size_t)c->dim * sizeof(float), "activations");
    s->q = aha_calloc(B, (hd + H) * sizeof(float), "activations");
    s->att = aha_calloc(B, hd * sizeof(float), "activations");
    size_t widest = (size_t)c->ffn_dim; // of the dense MLP, an expert and the shared expert
    if (c->n_experts && (size_t)c->moe_ffn_dim > widest) widest = (size_t)c->moe_ffn_dim;
    if (c->n_experts && (size_t)c->shared_ffn_dim > widest) widest = (size_t)c->shared_ffn_dim;
    s->ffn_gate = aha_calloc(B, widest * sizeof(float), "activations");
    s->ffn_up = aha_calloc(B, widest * sizeof(float), "activations");
    if (c->n_experts) {
        const size_t E = (size_t)c->n_experts, K = (size_t)c->n_experts_used, dim = (size_t)c->dim;
        s->moe_prob = aha_calloc(B, E * sizeof(float), "router probabilities");
        s->moe_pick = aha_calloc(B, K * sizeof(int), "expert choices");
        s->moe_w = aha_calloc(B, K * sizeof(float), "expert weights");
        s->moe_rows = aha_calloc(B, sizeof(int), "expert rows");
        s->moe_rw = aha_calloc(B, sizeof(float), "expert rows");
        s->moe_x = aha_calloc(B, dim * sizeof(float), "expert inputs");
        s->moe_y = aha_calloc(B, dim * sizeof(float), "expert outputs");
        s->moe_out = aha_calloc(B, dim * sizeof(float), "expert outputs");
        if (!s->moe_prob || !s->moe_pick || !s->moe_w || !s->moe_rows || !s->moe_rw || !s->moe_x || !s->moe_y ||
            !s->moe_out) {
            aha_state_free(s);
            return -1;
        }
    }
    // the larger of a full batch and a decode step at the end of the context
    const int few = s->max_batch < AHA_ATTN_FEW_MAX ? s->max_batch : AHA_ATTN_FEW_MAX;
    size_t sa = aha_attention_scratch(c->n_heads, s->max_batch, max_ctx - s->max_batch),
           sb = aha_attention_scratch(c->n_heads, few, max_ctx - few);
    s->scratch = aha_calloc(sa > sb ? sa : sb, sizeof(float), "attention scratch");
    s->logits = aha_calloc(B, (size_t)c->vocab * sizeof(float), "logits");
    s->router = aha_calloc(B, L * H * sizeof(float), "router logits");
    s->dep_scratch = aha_calloc(B, H * sizeof(uint32_t), "oracle distances");
    if (!s->k_cache || !s->v_cache || !s->kv_new || !s->x || !s->xn || !s->q || !s->att ||
        !s->ffn_gate || !s->ffn_up || !s->scratch || !s->logits || !s->router || !s->dep_scratch) {
        aha_state_free(s);
        return -1;
    }
    return 0;
}

void aha_state_free(aha_state *s) {
    free(s->k_cache);
    free(s->v_cache);
    free(s->kv_new);
    free(s->x);
    free(s->xn);
    free(s->q);
    free(s->att);
    free(s->ffn_gate);
    free(s->ffn_up);
    free(s->scratch);
    free(s->logits);
    free(s->router);
    free(s->dep_scratch);
    free(s->moe_prob);
    free(s->moe_pick);
    free(s->moe_w);
    free(s->moe_rows);
    free(s->moe_rw);
    free(s->moe_x);
    free(s->moe_y);
    free(s->moe_out);
    memset(s, 0, sizeof *s);
}

int aha_rope_long(const aha_model *m, int len) {
    return m->cfg.rope_scaling == AHA_SCALING_LONGROPE && len > m->cfg.rope_orig_ctx;
}

void aha_state_reset(aha_state *s, const aha_model *m, int len) {
    s->n_past = 0;
    s->rope_long = aha_rope_long(m, len);
}

// y = x w^T: f32 products, or under --dtype bf16 the bf16 product (its
// activations rounded to bf16); a failure is reported when the call ends.
static void project(aha_state *s, float *y, const float *x, const aha_weight *w, const float *bias, int n) {
    if (!s->bf16) aha_matmul_w(y, x, w, bias, n);
    else if (aha_mm_bf16_run(s->bf16, y, x, w, bias, n) != 0) s->bf16_failed = 1;
}

// What probe asks to observe of layer l's full attention (n tokens, H heads):
// the dependency pass, window errors, mass split; none: .eps NULL.
static aha_observe observe_of(const aha_probe *probe, int l, int n, int H) {
    if (!probe || !probe->n_eps) return (aha_observe){0};
    return (aha_observe){.eps = probe->eps, .n_eps = probe->n_eps, .windows = probe->werr_windows,
                         .n_windows = probe->n_werr, .sinks = probe->sinks,
                         .dep = probe->dep + (size_t)l * probe->n_eps * n * H,
                         .werr = probe->werr ? probe->werr + (size_t)l * probe->n_werr * n * H : NULL,
                         .mass_windows = probe->mass_windows, .n_mass = probe->n_mass,
                         .far = probe->n_mass ? probe->mass_far + (size_t)l * probe->n_mass * n * H : NULL,
                         .sink = probe->n_mass ? probe->mass_sink + (size_t)l * n * H : NULL};
}

int aha_nonfinite_err(const aha_model *m, int stage, long i, int is_nan, int pos0) {
    const aha_config *c = &m->cfg;
    const int L = c->n_layers, l = (stage - 1) / 3, hd = c->n_heads * c->head_dim;
    static const char *const block[] = {"attention output", "attention block output", "MLP block output"};
    const long per_token = stage == AHA_STAGE_LOGITS(L) ? c->vocab : stage % 3 == 1 && stage < AHA_STAGE_LOGITS(L) ? hd : c->dim;
    char where[96];
    if (stage == 0) snprintf(where, sizeof where, "the token embeddings");
    else if (stage == AHA_STAGE_LOGITS(L)) snprintf(where, sizeof where, "the logits");
    else if (stage % 3 == 1) snprintf(where, sizeof where, "layer %d's attention output, head %ld,", l, i % hd / c->head_dim);
    else snprintf(where, sizeof where, "layer %d's %s", l, block[(stage - 1) % 3]);
    aha_err("%s: %s in %s at position %ld: the run stops rather than record it", m->path, is_nan ? "NaN" : "Inf",
            where, pos0 + i / per_token);
    return -1;
}

// Stage's array x[0..n) is finite, or the error naming where (above).
static int check_finite(const aha_model *m, int pos0, const float *x, long n, int stage) {
    const long i = aha_nonfinite(x, n);
    return i < 0 ? 0 : aha_nonfinite_err(m, stage, i, isnan(x[i]), pos0);
}

// Attention sub-block: projections, router logits, q/k norms, RoPE, cache,
// attention, output projection. Input xn [n, dim]; output into xn.
static int attention_block(const aha_model *m, aha_state *s, int l, int n, aha_probe *probe) {
    const aha_config *c = &m->cfg;
    const aha_layer *L = &m->layers[l];
    const int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, dim = c->dim;
    const int hd = H * D, kvd = KV * D, qw = hd + (c->aha ? H : 0), p0 = s->n_past;
    float *kc = s->kv_new, *vc = s->kv_new + (size_t)s->max_batch * kvd; // [n, KV*D] each
    // The cache of the layer, head-major: each head's keys one contiguous
    // stream (decode reads them at memory speed, not a stride that defeats
    // the prefetchers).
    float *K = s->k_cache + (size_t)l * s->max_ctx * kvd, *V = s->v_cache + (size_t)l * s->max_ctx * kvd;
    const size_t hs = (size_t)s->max_ctx * D;
    if (probe && probe->attn_in)
        memcpy(probe->attn_in + (size_t)l * n * dim, s->xn, (size_t)n * dim * sizeof(float));
    project(s, s->q, s->xn, &L->wq, NULL, n);
    project(s, kc, s->xn, &L->wk, L->bk, n);
    project(s, vc, s->xn, &L->wv, L->bv, n);
    const float *inv = s->rope_long && L->inv_freq_long ? L->inv_freq_long : L->inv_freq;
    const int adjacent = c->rope_pairing == AHA_ROPE_ADJACENT;
#pragma omp parallel for
    for (int t = 0; t < n; t++) {
        float *q = s->q + (size_t)t * qw, *k = kc + (size_t)t * kvd;
        if (c->aha) { // raw projection rows (+ a fitted router's bias), before any norm or RoPE
            for (int h = 0; L->br && h < H; h++) q[hd + h] += L->br[h];
            memcpy(s->router + ((size_t)t * c->n_layers + l) * H, q + hd, H * sizeof(float));
        }
        if (L->bq)
            for (int i = 0; i < hd; i++) q[i] += L->bq[i];
        if (c->qk_norm == AHA_QK_NORM_FULL) { // over all heads at once
            aha_rmsnorm(q, q, L->q_norm, hd, c->norm_eps);
            aha_rmsnorm(k, k, L->k_norm, kvd, c->norm_eps);
        } else if (c->qk_norm == AHA_QK_NORM_HEAD) {
            for (int h = 0; h < H; h++) aha_rmsnorm(q + h * D, q + h * D, L->q_norm, D, c->norm_eps);
            for (int h = 0; h < KV; h++) aha_rmsnorm(k + h * D, k + h * D, L->k_norm, D, c->norm_eps);
        }
        if (inv) { // NULL: a NoPE layer
            aha_rope(q, H, D, p0 + t, inv, adjacent);
            aha_rope(k, KV, D, p0 + t, inv, adjacent);
        }
        for (int g = 0; g < KV; g++) {
            memcpy(K + g * hs + (size_t)(p0 + t) * D, k + g * D, D * sizeof(float));
            memcpy(V + g * hs + (size_t)(p0 + t) * D, vc + (size_t)t * kvd + g * D, D * sizeof(float));
        }
    }
    aha_attn_shape shape = {H, KV, D, qw, D, L->scale, c->attn_softcap, L->window, (long)hs};
    // Routed policies act on the global layers only: a natively local layer
    // (Gemma-2/3, Mistral, Qwen2 sliding windows) runs its own window in every
    // mode, the router decides nothing there, and its gate is written 0 (local).
    const aha_observe obs = observe_of(probe, l, n, H);
    if (!probe || !probe->router || L->window) {
        aha_attention(s->att, s->q, K, V, &shape, n, p0, s->scratch, obs.eps ? &obs : NULL);
        if (probe) {
            double f = aha_attention_full_flops(&shape, n, p0);
            probe->flops.executed += f;
            probe->flops.full += f;
            if (probe->router) memset(probe->gate + (size_t)l * n * H, 0, (size_t)n * H);
        }
    } else {
        const aha_router *r = probe->router;
        uint8_t *gate = probe->gate + (size_t)l * n * H;
        uint32_t *dep = NULL;
        if (obs.eps) // observed as well: the layer's full attention under the routed layers before it
            aha_attention(s->att, s->q, K, V, &shape, n, p0, s->scratch, &obs);
        if (r->kind == AHA_ROUTER_ORACLE) { // the full probabilities decide
            dep = s->dep_scratch;
            aha_observe od = {.eps = &r->eps, .n_eps = 1, .sinks = probe->sinks, .dep = dep};
            aha_attention(s->att, s->q, K, V, &shape, n, p0, s->scratch, &od);
        }
        const float *werr = r->kind == AHA_ROUTER_WERR ? probe->werr_ref + (size_t)l * probe->werr_ref_lstride : NULL;
        aha_router_decide(r, l, n, p0, probe->doc, probe->window, s->q + hd, qw, dep, werr, gate);
        aha_route route = {probe->window, probe->sinks, gate};
        aha_attention_routed(s->att, s->q, K, V, &shape, n, p0, &route, &probe->flops);
    }
    if (check_finite(m, p0, s->att, (long)n * hd, 1 + 3 * l) != 0) return -1;
    project(s, s->xn, s->att, &L->wo, NULL, n);
    return 0;
}

// A token's experts: softmax over the router's logits (a dot per expert, so
// equal router rows give equal logits), the n_experts_used most probable,
// the lower index among equal ones, their weights renormalised where the
// model does.
static void moe_route(const aha_config *c, const aha_moe *x, const float *xt, float *p, int *pick, float *w) {
    const int E = c->n_experts, K = c->n_experts_used;
    float mx = -INFINITY, sum = 0;
    for (int e = 0; e < E; e++) {
        p[e] = aha_weight_dot(&x->router, e, xt);
        mx = p[e] > mx ? p[e] : mx;
    }
    for (int e = 0; e < E; e++) {
        p[e] = expf(p[e] - mx);
        sum += p[e];
    }
    for (int e = 0; e < E; e++) p[e] /= sum;
    float top = 0;
    for (int k = 0; k < K; k++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= pick[j] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        pick[k] = best;
        w[k] = p[best];
        top += w[k];
    }
    for (int k = 0; c->moe_norm_topk && k < K; k++) w[k] /= top;
}

// One expert's SwiGLU MLP over rows [m, dim] of in, into out [m, dim].
static void expert_mlp(aha_state *s, const aha_weight *gate, const aha_weight *up, const aha_weight *down,
                       const float *in, float *out, int m) {
    project(s, s->ffn_gate, in, gate, NULL, m);
    project(s, s->ffn_up, in, up, NULL, m);
    aha_swiglu(s->ffn_gate, s->ffn_up, m * gate->rows);
    project(s, out, s->ffn_gate, down, NULL, m);
}

// The mixture-of-experts MLP block (HF's sparse MoE block): each expert
// runs on the tokens routed to it, its outputs weighted and summed in expert
// order (as HF's index_add over the experts hit), then the shared expert's
// output times its sigmoid gate. Input xn [n, dim]; output into xn.
static void moe_block(const aha_model *m, aha_state *s, const aha_moe *x, int n) {
    const aha_config *c = &m->cfg;
    const int E = c->n_experts, K = c->n_experts_used, dim = c->dim;
#pragma omp parallel for
    for (int t = 0; t < n; t++)
        moe_route(c, x, s->xn + (size_t)t * dim, s->moe_prob + (size_t)t * E, s->moe_pick + (size_t)t * K,
                  s->moe_w + (size_t)t * K);
    memset(s->moe_out, 0, (size_t)n * dim * sizeof(float));
    int *rows = s->moe_rows;
    float *rw = s->moe_rw;
    for (int e = 0; e < E; e++) {
        int k = 0;
        for (int t = 0; t < n; t++)
            for (int j = 0; j < K; j++)
                if (s->moe_pick[(size_t)t * K + j] == e) rows[k] = t, rw[k++] = s->moe_w[(size_t)t * K + j];
        if (!k) continue;
        for (int i = 0; i < k; i++)
            memcpy(s->moe_x + (size_t)i * dim, s->xn + (size_t)rows[i] * dim, dim * sizeof(float));
        expert_mlp(s, &x->gate[e], &x->up[e], &x->down[e], s->moe_x, s->moe_y, k);
        for (int i = 0; i < k; i++) {
            float *o = s->moe_out + (size_t)rows[i] * dim;
            const float *y = s->moe_y + (size_t)i * dim;
            for (int d = 0; d < dim; d++) o[d] += y[d] * rw[i];
        }
    }
    if (x->sh_router) {
        expert_mlp(s, &x->sh_gate, &x->sh_up, &x->sh_down, s->xn, s->moe_y, n);
        for (int t = 0; t < n; t++) {
            const float *xt = s->xn + (size_t)t * dim, *y = s->moe_y + (size_t)t * dim;
            float z = 0;
            for (int d = 0; d < dim; d++) z += xt[d] * x->sh_router[d];
            const float g = 1.0f / (1.0f + expf(-z));
            float *o = s->moe_out + (size_t)t * dim;
            for (int d = 0; d < dim; d++) o[d] += g * y[d];
        }
    }
    memcpy(s->xn, s->moe_out, (size_t)n * dim * sizeof(float));
}

static void mlp_block(const aha_model *m, aha_state *s, int l, int n) {
    const aha_config *c = &m->cfg;
    const aha_layer *L = &m->layers[l];
    if (L->moe) {
        moe_block(m, s, L->moe, n);
        return;
    }
    project(s, s->ffn_gate, s->xn, &L->w_gate, NULL, n);
    project(s, s->ffn_up, s->xn, &L->w_up, NULL, n);
    if (c->ffn_gelu) aha_geglu(s->ffn_gate, s->ffn_up, n * c->ffn_dim);
    else aha_swiglu(s->ffn_gate, s->ffn_up, n * c->ffn_dim);
    project(s, s->xn, s->ffn_gate, &L->w_down, NULL, n);
}

// Pre-norm (llama, qwen): x += f(norm(x)). Post-norm (olmo2): x += norm(f(x)).
static void residual(const aha_model *m, aha_state *s, int n, const float *pre,
                     const float *post) {
    const int dim = m->cfg.dim;
    const float eps = m->cfg.norm_eps;
#pragma omp parallel for
    for (int t = 0; t < n; t++) {
        float *x = s->x + (size_t)t * dim, *y = s->xn + (size_t)t * dim;
        if (pre) {
            aha_rmsnorm(y, x, pre, dim, eps);
            continue;
        }
        if (post) aha_rmsnorm(y, y, post, dim, eps);
        for (int i = 0; i < dim; i++) x[i] += y[i];
    }
}

int aha_forward(const aha_model *m, aha_state *s, const int32_t *tokens, int n,
                int all_logits) {
    return aha_forward_probe(m, s, tokens, n, all_logits, NULL);
}

int aha_forward_probe(const aha_model *m, aha_state *s, const int32_t *tokens, int n,
                      int all_logits, aha_probe *probe) {
    const aha_config *c = &m->cfg;
    if (n < 1 || n > s->max_batch || s->n_past + n > s->max_ctx) {
        aha_err("%d tokens do not fit (batch %d, %d of %d context positions used)", n,
                s->max_batch, s->n_past, s->max_ctx);
        return -1;
    }
    if (probe && probe->n_werr && c->head_dim > AHA_WERR_MAX_DIM) {
        aha_err("window-output errors (--werr) take head_dim <= %d; this model's is %d", AHA_WERR_MAX_DIM,
                c->head_dim);
        return -1;
    }
    if (c->rope_scaling == AHA_SCALING_LONGROPE && !s->rope_long && s->n_past + n > c->rope_orig_ctx) {
        aha_err("longrope: the context grew past %d tokens after it began with the short factors (HF recomputes "
                "it with the long ones): declare its length when it begins (aha_state_reset)",
                c->rope_orig_ctx);
        return -1;
    }
    s->bf16_failed = 0;
    for (int t = 0; t < n; t++) {
        if (tokens[t] < 0 || tokens[t] >= c->vocab) {
            aha_err("token id %d out of range (vocab %d)", tokens[t], c->vocab);
            return -1;
        }
        float *x = s->x + (size_t)t * c->dim;
        aha_weight_rows(&m->tok_emb, tokens[t], 1, x); // one row decoded, in its stored type
        for (int i = 0; c->embed_scale && i < c->dim; i++) x[i] *= c->embed_scale;
    }
    const long nd = (long)n * c->dim;
    const int p0 = s->n_past;
    if (check_finite(m, p0, s->x, nd, 0) != 0) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        const aha_layer *L = &m->layers[l];
        if (L->attn_norm) residual(m, s, n, L->attn_norm, NULL);
        else memcpy(s->xn, s->x, (size_t)n * c->dim * sizeof(float));
        if (attention_block(m, s, l, n, probe) != 0) return -1;
        residual(m, s, n, NULL, L->post_attn_norm);
        if (check_finite(m, p0, s->x, nd, 2 + 3 * l) != 0) return -1;
        if (L->ffn_norm) residual(m, s, n, L->ffn_norm, NULL);
        else memcpy(s->xn, s->x, (size_t)n * c->dim * sizeof(float));
        mlp_block(m, s, l, n);
        residual(m, s, n, NULL, L->post_ffn_norm);
        if (check_finite(m, p0, s->x, nd, 3 + 3 * l) != 0) return -1;
    }
    int first = all_logits ? 0 : n - 1, rows = n - first;
    for (int t = first; t < n; t++)
        aha_rmsnorm(s->xn + (size_t)(t - first) * c->dim, s->x + (size_t)t * c->dim, m->out_norm,
                    c->dim, c->norm_eps);
    project(s, s->logits, s->xn, &m->lm_head, NULL, rows);
    if (c->final_softcap) aha_softcap(s->logits, rows * c->vocab, c->final_softcap);
    s->n_past += n;
    if (check_finite(m, p0 + first, s->logits, (long)rows * c->vocab, AHA_STAGE_LOGITS(c->n_layers)) != 0) return -1;
    return s->bf16_failed ? -1 : 0;
}
