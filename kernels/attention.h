// Causal self-attention over a KV cache (CPU reference): full, observed (the
// dependency pass fused in) and routed (per query and head, full or window).
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int n_heads;   // H query heads
    int n_kv;      // KV heads; query head h reads KV head h / (H / KV)
    int head_dim;  // D
    int q_stride;  // floats between consecutive queries' rows in q
    int kv_stride; // floats between consecutive positions in k and v
    // Zero (what a positional initialiser leaves) is llama-style attention.
    float scale;   // score scale; 0 = 1/sqrt(head_dim) (gemma: query_pre_attn_scalar^-0.5)
    float softcap; // gemma2: scores = softcap * tanh(scores / softcap) before the mask; 0 = none
    int window;    // native sliding window in keys (query p sees p-window+1..p, no sinks), 0 = causal
    long kv_head_stride; // floats between KV heads in k and v; 0 = head_dim (side by side in a row)
} aha_attn_shape;

// Where KV head g starts in k and v.
static inline long aha_attn_kv_head(const aha_attn_shape *s, int g) {
    return g * (s->kv_head_stride ? s->kv_head_stride : s->head_dim);
}

// The score scale a shape asks for.
static inline float aha_attn_scale(const aha_attn_shape *s) {
    return s->scale > 0 ? s->scale : 1.0f / sqrtf((float)s->head_dim);
}

#define AHA_MAX_EPS 32     // thresholds one pass can record
#define AHA_MAX_WINDOWS 32 // windows one pass can evaluate

// What the dependency pass records for each (query, head) of a full pass.
typedef struct {
    const float *eps;   // [n_eps <= AHA_MAX_EPS] out-of-window mass thresholds
    int n_eps;
    const int *windows; // [n_windows <= AHA_MAX_WINDOWS] windows for the error criterion
    int n_windows;      // 0 = no window error
    int sinks;          // first keys always visible (never out of window)
    uint32_t *dep;      // [n_eps, n, H] out: dependency distance d_eps
    float *werr;        // [n_windows, n, H] out: relative window-output error
    const int *mass_windows; // [n_mass <= AHA_MAX_WINDOWS] windows of the mass split (aha record --mass)
    int n_mass;              // 0 = no mass split
    float *far;         // [n_mass, n, H] out: mass on keys sinks..t-w (aha_dependency_mass)
    float *sink;        // [n, H] out (with n_mass): mass on keys 0..sinks-1
} aha_observe;

// How a routed pass chooses keys for each (query, head).
typedef struct {
    int window;          // w: a local query at position p sees keys p-w+1..p
    int sinks;           // plus keys 0..sinks-1
    const uint8_t *gate; // [n, H] 1 = full causal, 0 = window
} aha_route;

// Attention FLOPs (QK^T and PV, 4*D per visible key) of a pass.
typedef struct {
    double executed; // what the pass computed
    double full;     // what full causal attention computes
} aha_attn_flops;

// FLOPs full causal attention spends on n queries at positions p0..p0+n-1;
// on a natively local layer (s->window) its own window is the full baseline.
double aha_attention_full_flops(const aha_attn_shape *s, int n, int p0);

#define AHA_ATTN_FEW_MAX 4 // most queries of the decode path (dots over the keys in place, no BLAS)

// Floats of scratch aha_attention needs: n * (p0 + n) per thread
// (omp_get_max_threads()), or per head when fewer threads than heads and
// n <= AHA_ATTN_FEW_MAX.
size_t aha_attention_scratch(int n_heads, int n, int p0);

// out[n, H*D]: queries q[n] at positions p0 .. p0+n-1 attend to keys
// k[0 .. p0+n-1] (causal; within s->window keys when set: the dependency pass
// then sees the windowed distribution, zero before the window). scratch holds
// aha_attention_scratch floats. obs, when not NULL, receives the dependency pass.
void aha_attention(float *out, const float *q, const float *k, const float *v,
                   const aha_attn_shape *s, int n, int p0, float *scratch,
                   const aha_observe *obs);

// One head of aha_attention: qh, kh, vh point at head h's slices, out at
// its output columns; att holds n * (p0 + n) floats. Routed attention uses it
// for a head whose queries are all global, so that case is bit-identical.
void aha_attention_head(float *out, const float *qh, const float *kh, const float *vh,
                        const aha_attn_shape *s, int n, int p0, float *att,
                        const aha_observe *obs, int h);

// Routed: global (query, head) pairs attend causally, local ones to their
// window (and sinks) only, touching at most w + sinks keys. flops accumulates.
// s->window must be 0: a natively local layer is never routed (runtime/forward.c).
void aha_attention_routed(float *out, const float *q, const float *k, const float *v,
                          const aha_attn_shape *s, int n, int p0, const aha_route *r,
                          aha_attn_flops *flops);
