// The forward pass: teacher-forced prefill and incremental decode over a KV
// cache, one chunk of tokens per call.
#pragma once
#include <stdint.h>

#include "attention.h"
#include "matmul_bf16.h"
#include "model.h"
#include "router.h"

typedef struct {
    int max_ctx;      // KV cache capacity in tokens
    int max_batch;    // most tokens per aha_forward call (B)
    int n_past;       // tokens already in the cache
    float *k_cache;   // [L, KV, max_ctx, D] keys after norm and RoPE
    float *v_cache;   // [L, KV, max_ctx, D]
    float *kv_new;    // [2, B, KV*D] this call's keys, then values, on their way into the cache
    float *x;         // [B, dim] residual stream
    float *xn;        // [B, dim] normed input, then block outputs
    float *q;         // [B, H*D (+H)] query projection (+ router logits)
    float *att;       // [B, H*D] attention output
    float *ffn_gate;  // [B, widest MLP] (ffn_dim, an expert's or the shared expert's width)
    float *ffn_up;    // [B, widest MLP]
    float *scratch;   // attention probabilities (aha_attention_scratch: [threads or H, B, max_ctx])
    int threads;      // OpenMP threads the scratch was sized for
    float *logits;    // [B, vocab] (only row 0 when the call asked for the last)
    float *router;    // [B, L, H] router logits of the last call (AHA models)
    uint32_t *dep_scratch; // [B, H] oracle routing: d_eps of one layer
    int rope_long;         // longrope: this context uses the long factors (aha_state_reset)
    // mixture of experts (NULL without): a call's routing and its experts' inputs
    float *moe_prob;       // [B, n_experts] router probabilities
    int *moe_pick;         // [B, n_experts_used] each token's experts, best first
    float *moe_w;          // [B, n_experts_used] their weights
    int *moe_rows;         // [B] the tokens an expert takes
    float *moe_rw;         // [B] their weights for it
    float *moe_x;          // [B, dim] their inputs, gathered
    float *moe_y;          // [B, dim] an expert's outputs
    float *moe_out;        // [B, dim] the block's output, summed
    aha_mm_bf16 *bf16;     // --dtype bf16 (runtime/cpu_bf16.h): the model's matrices are bf16 and
                           // every product goes through it; NULL: f32 products
    int bf16_failed;       // a bf16 product failed during the last call (the error is set)
} aha_state;

// What one aha_forward call records or changes in attention: observe (full
// attention, dependency pass recorded), route (attention follows a router),
// or on the CPU both (aha fit --exposed: each layer's full attention observed
// under the routed layers before it, while attention follows the router).
// Output arrays are for this call's n tokens.
typedef struct {
    // observe: the dependency pass (n_eps 0 = off)
    const float *eps;       // [n_eps]
    int n_eps;
    const int *werr_windows;// [n_werr] windows for the output-error criterion
    int n_werr;
    int sinks;              // always-visible first tokens (observe and route)
    uint32_t *dep;          // [L, n_eps, n, H] out
    float *werr;            // [L, n_werr, n, H] out
    const int *mass_windows;// [n_mass] windows of the mass split (aha record --mass)
    int n_mass;             // 0 = off
    float *mass_far;        // [L, n_mass, n, H] out: mass on keys sinks..t-w
    float *mass_sink;       // [L, n, H] out (with n_mass): mass on keys 0..sinks-1
    float *attn_in;         // [L, n, dim] out (NULL = not kept): each layer's attention
                            // input, what q_proj and a router read (aha fit)
    // route (router NULL = full attention)
    const aha_router *router;
    int window;             // w of the local branch
    int64_t doc;            // document index, for reproducible random routing
    const float *werr_ref;  // werr router: the full pass's window-output errors at this
                            // window, layer l's [n, H] at werr_ref + l * werr_ref_lstride
    size_t werr_ref_lstride;
    uint8_t *gate;          // [L, n, H] out: the decisions attention followed
    aha_attn_flops flops;   // accumulated attention FLOPs, executed and full
} aha_probe;

int aha_state_init(aha_state *s, const aha_model *m, int max_ctx, int max_batch);
void aha_state_free(aha_state *s);
// A new context of len tokens (the cache forgotten). A longrope model uses
// the set of factors HF picks for a sequence of that length: the long ones
// iff len > rope_orig_ctx. A context grown past rope_orig_ctx after it began
// short is refused (aha_forward): HF would recompute it with the long factors.
void aha_state_reset(aha_state *s, const aha_model *m, int len);
// Whether a context of len tokens takes a longrope model's long factors.
int aha_rope_long(const aha_model *m, int len);

// Append n tokens (1 <= n <= max_batch, n_past + n <= max_ctx) at positions
// n_past.. and advance n_past. all_logits: logits of every token into
// s->logits[n, vocab]; else only the last token's into s->logits[0, vocab].
int aha_forward(const aha_model *m, aha_state *s, const int32_t *tokens, int n,
                int all_logits);
// The same with attention observed or routed per the probe (NULL = plain).
int aha_forward_probe(const aha_model *m, aha_state *s, const int32_t *tokens, int n,
                      int all_logits, aha_probe *probe);

// Where a forward call looks for a NaN or Inf, in order (CPU and CUDA
// alike): stage 0 the token embeddings [n, dim]; for layer l, 1 + 3l its
// attention output [n, H*D] (by head), 2 + 3l its attention block's output
// and 3 + 3l its MLP block's ([n, dim] each); 1 + 3L the logits [rows,
// vocab]. The first stage with one is where it entered.
#define AHA_STAGE_LOGITS(L) (1 + 3 * (L))
// The one-line error (-1) for a NaN (is_nan) or Inf at index i of stage's
// array, whose first row is the token at context position pos0.
int aha_nonfinite_err(const aha_model *m, int stage, long i, int is_nan, int pos0);

// One forward call of a run (runtime/run.h on the CPU, runtime/gpu.h on a
// device) beyond the pass itself.
typedef struct {
    const aha_probe *probe;   // NULL = plain; only its settings are read (eps,
                              // windows, sinks, router, window, doc), not its outputs
    int last_logits;          // hand out the last token's logits
    int all_rows;             // compute every token's logits (kept by the run)
    const int32_t *targets;   // [n] next token of each (< 0: none), or NULL:
                              // nll per token (implies all_rows)
} aha_call;

// What one call leaves, valid until the run's next submit but one.
typedef struct {
    int n;                  // tokens of the call
    const uint32_t *dep;    // [L, n_eps, n, H] observe: d_eps
    const float *werr;      // [L, n_werr, n, H] observe: window-output errors
    const uint8_t *gate;    // [L, n, H] routed: the decisions attention followed
    const float *router;    // [n, L, H] router logits (AHA models)
    const float *logits;    // [vocab] the last token's (last_logits)
    const float *nll, *kl;  // [n] with targets: NaN where no target; kl with a
                            // KL reference, else zeros
    aha_attn_flops flops;   // attention FLOPs of the call, executed and full
    const float *mass_far;  // [L, n_mass, n, H] observe: mass on keys sinks..t-w
    const float *mass_sink; // [L, n, H] observe: mass on the sinks
} aha_call_out;
