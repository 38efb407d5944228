// Runs on a backend: the CPU or a CUDA device, behind one protocol. A run
// owns one KV cache and takes chunks with aha_run_submit / aha_run_collect,
// the protocol of gpu.h: on a device the call is queued and collected later
// (two may be in flight), on the CPU it computes at submit. aha record, ppl
// and generate drive every run this way, so one loop serves both devices.
#pragma once
#include <stdint.h>

#include "cpu_bf16.h"
#include "forward.h"
#include "gpu.h"
#include "model.h"

typedef struct {
    const aha_model *m;     // host model
    aha_gpu_model *gpu;     // its weights on the device; NULL: the CPU
    aha_cpu_bf16 *cpu_bf16; // CPU --dtype bf16: bf16 copies of the matrices; NULL: f32
    char name[32];          // "cpu", "cpu:bf16", "cuda:f32", "cuda:bf16", ... (trace attribute)
    char desc[400];         // the device in words, for people (on a GPU: what it holds)
} aha_backend;

// The --device / --dtype flags of every command that runs a model (flags.h).
#define AHA_DEVICE_FLAGS(device, dtype)                                             \
    {"--device", FLAG_STR, &(device), "where the model runs: cpu | cuda", NULL},          \
    {"--dtype", FLAG_STR, &(dtype),                                                 \
     "matrix products: CPU f32 | bf16; CUDA f32 | f16 | bf16 (f32 accumulate; on CUDA the weights "       \
     "stay in their stored type, decoded to it for each product)", NULL}

// The --threads flag of every command that runs a model.
#define AHA_THREADS_FLAG(threads) {"--threads", FLAG_INT, &(threads), "threads; 0 = all cores", ">= 0"}

// device: "cpu" (or NULL) or "cuda"; dtype (NULL = f32): the products' operand
// type (CPU: f32 or bf16; the device: f32, f16 or bf16, its weights kept as stored).
int aha_backend_init(aha_backend *b, const aha_model *m, const char *device, const char *dtype);
void aha_backend_free(aha_backend *b);

typedef struct {            // a CPU call's outputs (aha_call_out points here)
    int busy, n;            // submitted and not collected; tokens
    uint32_t *dep;          // [L, n_eps, B, H]
    float *werr;            // [L, n_werr, B, H]
    uint8_t *gate;          // [L, B, H]
    float *router;          // [B, L, H]
    float *logits;          // [vocab]
    float *nll, *kl;        // [B]
    aha_attn_flops flops;
    int eps_cap, werr_cap;  // what dep / werr have room for
    float *mass_far;        // [L, n_mass, B, H]
    float *mass_sink;       // [L, B, H]
    int mass_cap;           // what mass_far has room for (mass_sink: allocated with it)
} aha_run_slot;

typedef struct {            // a submitted call, as collect checks its outputs
    uint8_t *scored;        // [max_batch] token t had a target (its NLL must be finite)
    int pos;                // the context position of the call's first token
    int targets, last;      // it scored its tokens; it handed out the last logits
    int n_werr;             // its window errors per layer
} aha_run_note;

typedef struct {
    const aha_backend *b;
    aha_state st;           // the CPU's KV cache and activations
    aha_gpu *g;             // or the device's
    aha_run_slot slot[2];   // CPU: outputs of the last two calls
    int next, oldest;       // slot of the next submit / the oldest uncollected
    int rows;               // CPU: logits rows the last call left in st.logits
    aha_run_note note[2];   // per slot: what collect checks the call's outputs against
    int max_batch;          // most tokens a call may have
} aha_run;

// The context of a command's --ctx: 0 means the model's trained context, at
// most dflt; more than the trained context is an error naming the model (its
// positions were never trained, and buffers are sized by the context).
int aha_ctx_resolve(const aha_model *m, int *ctx, int dflt);
// The next-token targets of a context ids[0..T) of a document: each token's
// successor, the last one's the document's token after the context (next;
// -1 at the document's end). So every token of a document but its first is
// scored once, from the context it follows: aha record and aha ppl score
// this one way.
void aha_context_targets(const int32_t *ids, int T, int32_t next, int32_t *targets);
// --sinks against the context it resolved to: with sinks >= ctx every key is
// a sink and nothing is measured. 0 or -1 naming --sinks.
int aha_sinks_check(int sinks, int ctx);
// max_ctx: the longest context the run holds, at most the model's trained one.
int aha_run_init(aha_run *r, const aha_backend *b, int max_ctx, int max_batch);
void aha_run_free(aha_run *r);
// A new context of len tokens: the cache is forgotten (calls in flight are
// unaffected); a longrope model takes the factors HF picks for that length.
void aha_run_reset(aha_run *r, int len);
// CPU: the window-output errors [L, n_werr, n, H] of the call submitted last
// (valid until it is collected); NULL on a device, where they are not yet
// on the host.
const float *aha_run_last_werr(const aha_run *r);
// Append n tokens (c may be NULL). kl_ref: a run of the same backend whose
// call on the same tokens, with targets, was submitted just before.
int aha_run_submit(aha_run *r, const int32_t *tokens, int n, const aha_call *c,
                   const aha_run *kl_ref);
// The oldest uncollected call's outputs (waits for the device). A NaN or Inf
// in them (an NLL where there was a target, a KL, a window error, a router
// logit, the last logits) is an error naming the position, and the layer
// and head where they are per layer.
int aha_run_collect(aha_run *r, aha_call_out *out);
// Submit and collect at once (nothing else in flight): the call's outputs.
int aha_run_step(aha_run *r, const int32_t *tokens, int n, const aha_call *c, aha_call_out *out);

// Shared by the model commands: wall clock, thread count (0 = leave as is).
double aha_now_s(void);
void aha_set_threads(int n);
// On Ctrl-C (SIGINT) or SIGTERM from now on: write msg to fd, then die of
// the signal as without it (the shell sees the same status). msg is kept,
// not copied; NULL: the default action again. A signal ignored when aha
// started stays ignored.
void aha_on_interrupt(int fd, const char *msg);
