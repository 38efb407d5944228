// The model commands: info, tokenize, generate, ppl.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "forward.h"
#include "mapfile.h"
#include "model.h"
#include "ops.h"
#include "run.h"
#include "sampler.h"
#include "settings.h"

// A float as the shortest decimal that reads back as it (1e-05, not
// 9.99999974737875e-06), as a JSON number.
static cJSON *float_json(float v) {
    char buf[32];
    for (int prec = 6; prec <= 9; prec++)
        if (snprintf(buf, sizeof buf, "%.*g", prec, v), strtof(buf, NULL) == v) break;
    return isfinite(v) ? cJSON_CreateRaw(buf) : cJSON_CreateNull();
}

// The layers whose flag[l] is set, as ranges: "0-4 6-10 12-16". Empty when none.
static void flag_ranges(const uint8_t *flag, int L, char *buf, size_t len) {
    buf[0] = '\0';
    for (int l = 0; l < L; l++) {
        if (!flag[l]) continue;
        int e = l;
        while (e + 1 < L && flag[e + 1]) e++;
        size_t u = strlen(buf);
        if (e > l) snprintf(buf + u, len - u, "%s%d-%d", u ? " " : "", l, e);
        else snprintf(buf + u, len - u, "%s%d", u ? " " : "", l);
        l = e;
    }
}

// A GGUF's rope_freqs.weight in words: "per-pair divisors from rope_freqs.weight: 4 x1, 3 x8, 1 between".
static void factors_text(const aha_model *m, char *buf, size_t len) {
    const int half = m->cfg.head_dim / 2;
    float lo = m->rope_factors[0], hi = lo;
    for (int i = 0; i < half; i++) lo = fminf(lo, m->rope_factors[i]), hi = fmaxf(hi, m->rope_factors[i]);
    int n_lo = 0, n_hi = 0;
    for (int i = 0; i < half; i++) n_lo += m->rope_factors[i] == lo, n_hi += m->rope_factors[i] == hi && hi != lo;
    snprintf(buf, len, "per-pair divisors from rope_freqs.weight: %d x%g, %d x%g, %d between", n_lo, lo, n_hi, hi,
             half - n_lo - n_hi);
}

// The layers whose native window is (local = 1) or is not (0) set, as ranges.
static void layer_ranges(const aha_model *m, int local, char *buf, size_t len) {
    uint8_t is[AHA_MAX_LAYERS];
    for (int l = 0; l < m->cfg.n_layers; l++) is[l] = (m->layers[l].window > 0) == local;
    flag_ranges(is, m->cfg.n_layers, buf, len);
}

// What a GGUF left to the architecture's defaults, one note per AHA_DEFAULT_* bit
// set (into notes[0..AHA_N_NOTES)); their count.
#define AHA_N_NOTES 5
static int default_notes(const aha_config *c, char notes[AHA_N_NOTES][128]) {
    int n = 0;
    const char *a = aha_arch_name(c->arch);
    if (c->defaults & AHA_DEFAULT_PATTERN)
        snprintf(notes[n++], 128, "layer pattern from %s defaults (no attention.sliding_window_pattern key)", a);
    if (c->defaults & AHA_DEFAULT_SWA_BASE)
        snprintf(notes[n++], 128, "local RoPE base from %s defaults (no rope.freq_base_swa key)", a);
    if (c->defaults & AHA_DEFAULT_SCALE)
        snprintf(notes[n++], 128, "score scale by llama.cpp's rule for the architecture (no attention.scale key)");
    if (c->defaults & AHA_DEFAULT_NOPE)
        snprintf(notes[n++], 128, "NoPE layers by llama.cpp's rule for %s: every 4th (no key says)", a);
    if (c->defaults & AHA_DEFAULT_MOE_NORM)
        snprintf(notes[n++], 128, "routing weights %s by llama.cpp's rule for %s (no expert_weights_norm key)",
                 c->moe_norm_topk ? "renormalised" : "not renormalised", a);
    return n;
}

// A list of factors in words: "x1..x4 (mean 2.1)".
static void factor_range(const float *f, int n, char *buf, size_t len) {
    float lo = f[0], hi = f[0];
    double sum = 0;
    for (int i = 0; i < n; i++) lo = fminf(lo, f[i]), hi = fmaxf(hi, f[i]), sum += f[i];
    snprintf(buf, len, "x%g..x%g (mean %.4g)", lo, hi, sum / n);
}

// The global layers' RoPE scaling and its parameters, in words.
static void scaling_text(const aha_model *m, char *buf, size_t len) {
    const aha_config *c = &m->cfg;
    char f[160], sh[64], lo[64];
    switch (c->rope_scaling) {
    case AHA_SCALING_NONE:
        if (m->rope_factors) {
            factors_text(m, f, sizeof f);
            snprintf(buf, len, "llama3 (%s)", f);
        } else {
            snprintf(buf, len, "none");
        }
        break;
    case AHA_SCALING_LINEAR: snprintf(buf, len, "linear (factor %g)", c->rope_factor); break;
    case AHA_SCALING_LLAMA3:
        snprintf(buf, len, "llama3 (factor %g, low_freq_factor %g, high_freq_factor %g, original context %d)",
                 c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_orig_ctx);
        break;
    case AHA_SCALING_YARN:
        snprintf(buf, len,
                 "yarn (factor %g, original context %d, beta_fast %g, beta_slow %g%s; attention factor %g: "
                 "scores x%g)",
                 c->rope_factor, c->rope_orig_ctx, c->yarn_beta_fast, c->yarn_beta_slow,
                 c->yarn_truncate ? "" : ", not truncated", c->rope_attn_factor,
                 c->rope_attn_factor * c->rope_attn_factor);
        break;
    case AHA_SCALING_LONGROPE:
        factor_range(c->rope_short, c->head_dim / 2, sh, sizeof sh);
        factor_range(c->rope_long, c->head_dim / 2, lo, sizeof lo);
        snprintf(buf, len,
                 "longrope (short factors %s for contexts up to %d tokens, long %s beyond; attention "
                 "factor %g: scores x%g)",
                 sh, c->rope_orig_ctx, lo, c->rope_attn_factor, c->rope_attn_factor * c->rope_attn_factor);
        break;
    }
}

// Gemma's score scale, softcaps and embedding scale, as JSON and text.
static void gemma_json(cJSON *o, const aha_config *c) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "attention", a);
    cJSON_AddItemToObject(a, "scale", float_json(c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)c->head_dim)));
    cJSON_AddItemToObject(a, "softcap", c->attn_softcap > 0 ? float_json(c->attn_softcap) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "final_logit_softcap", c->final_softcap > 0 ? float_json(c->final_softcap) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "embed_scale", c->embed_scale > 0 ? float_json(c->embed_scale) : cJSON_CreateNull());
}

static cJSON *floats_json(const float *f, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, float_json(f[i]));
    return a;
}

// The layers whose flag is set, as a JSON array of their indices.
static cJSON *layers_json(const uint8_t *flag, int L) {
    cJSON *a = cJSON_CreateArray();
    for (int l = 0; l < L; l++)
        if (flag[l]) cJSON_AddItemToArray(a, cJSON_CreateNumber(l));
    return a;
}

// The RoPE settings: base, pairing, the global layers' scaling and its parameters.
static cJSON *rope_json(const aha_model *m) {
    const aha_config *c = &m->cfg;
    static const char *const scaling[] = {"none", "linear", "llama3", "yarn", "longrope"};
    cJSON *rope = cJSON_CreateObject();
    cJSON_AddItemToObject(rope, "theta", float_json(c->rope_theta));
    cJSON_AddStringToObject(rope, "pairing", c->rope_pairing == AHA_ROPE_ADJACENT ? "adjacent" : "rotate-half");
    cJSON_AddStringToObject(rope, "scaling", m->rope_factors ? "llama3" : scaling[c->rope_scaling]);
    if (c->rope_scaling) cJSON_AddItemToObject(rope, "factor", float_json(c->rope_factor));
    if (c->rope_scaling == AHA_SCALING_LLAMA3) {
        cJSON_AddItemToObject(rope, "low_freq_factor", float_json(c->rope_low_freq));
        cJSON_AddItemToObject(rope, "high_freq_factor", float_json(c->rope_high_freq));
    }
    if (c->rope_scaling >= AHA_SCALING_LLAMA3) cJSON_AddNumberToObject(rope, "original_context", c->rope_orig_ctx);
    if (c->rope_scaling == AHA_SCALING_YARN) {
        cJSON_AddItemToObject(rope, "beta_fast", float_json(c->yarn_beta_fast));
        cJSON_AddItemToObject(rope, "beta_slow", float_json(c->yarn_beta_slow));
        cJSON_AddBoolToObject(rope, "truncate", c->yarn_truncate);
    }
    if (c->rope_scaling == AHA_SCALING_LONGROPE) {
        cJSON_AddItemToObject(rope, "short_factors", floats_json(c->rope_short, c->head_dim / 2));
        cJSON_AddItemToObject(rope, "long_factors", floats_json(c->rope_long, c->head_dim / 2));
    }
    if (c->rope_scaling >= AHA_SCALING_YARN)
        cJSON_AddItemToObject(rope, "attention_factor", float_json(c->rope_attn_factor));
    if (c->rope_local_theta > 0) cJSON_AddItemToObject(rope, "local_theta", float_json(c->rope_local_theta));
    cJSON_AddItemToObject(rope, "freq_factors",
                          m->rope_factors ? floats_json(m->rope_factors, c->head_dim / 2) : cJSON_CreateNull());
    cJSON_AddItemToObject(rope, "nope_layers", layers_json(c->layer_nope, c->n_layers));
    return rope;
}

// The mixture of experts, or null.
static cJSON *moe_json(const aha_config *c) {
    if (!c->n_experts) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "experts", c->n_experts);
    cJSON_AddNumberToObject(o, "experts_used", c->n_experts_used);
    cJSON_AddNumberToObject(o, "expert_ffn", c->moe_ffn_dim);
    cJSON_AddNumberToObject(o, "shared_ffn", c->shared_ffn_dim);
    cJSON_AddBoolToObject(o, "renormalised", c->moe_norm_topk);
    cJSON_AddItemToObject(o, "layers", layers_json(c->layer_moe, c->n_layers));
    return o;
}

// What the text of aha info MODEL says, as one JSON object.
static void info_json(const aha_model *m) {
    const aha_config *c = &m->cfg;
    char notes[AHA_N_NOTES][128];
    const char *note_p[AHA_N_NOTES];
    const int n_notes = default_notes(c, notes);
    for (int i = 0; i < n_notes; i++) note_p[i] = notes[i];
    cJSON *o = cJSON_CreateObject(), *tok = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON_AddStringToObject(o, "kind", "model");
    cJSON_AddStringToObject(o, "format", m->format);
    cJSON_AddStringToObject(o, "dtype", m->dtype);
    cJSON_AddStringToObject(o, "architecture", aha_arch_name(c->arch));
    cJSON_AddBoolToObject(o, "aha", c->aha);
    const struct { const char *key; int v; } shape[] = {
        {"layers", c->n_layers}, {"hidden", c->dim},    {"heads", c->n_heads}, {"kv_heads", c->n_kv_heads},
        {"head_dim", c->head_dim}, {"ffn", c->ffn_dim}, {"vocab", c->vocab},   {"context", c->max_ctx}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) cJSON_AddNumberToObject(o, shape[i].key, shape[i].v);
    cJSON_AddItemToObject(o, "rope", rope_json(m));
    cJSON_AddStringToObject(o, "ffn_activation", c->ffn_gelu ? "gelu_tanh" : "silu");
    cJSON_AddItemToObject(o, "moe", moe_json(c));
    gemma_json(o, c);
    cJSON *types = cJSON_CreateArray(), *windows = cJSON_CreateArray();
    for (int l = 0; l < c->n_layers; l++) {
        cJSON_AddItemToArray(types, cJSON_CreateString(m->layers[l].window ? "sliding_attention" : "full_attention"));
        cJSON_AddItemToArray(windows, cJSON_CreateNumber(m->layers[l].window));
    }
    cJSON_AddItemToObject(o, "layer_types", types);
    cJSON_AddItemToObject(o, "layer_windows", windows);
    cJSON_AddItemToObject(o, "defaults", cJSON_CreateStringArray(note_p, n_notes));
    cJSON_AddItemToObject(o, "norm_eps", float_json(c->norm_eps));
    cJSON_AddBoolToObject(o, "tied", c->tied);
    cJSON_AddNumberToObject(o, "parameters", (double)m->n_params);
    cJSON *res = cJSON_CreateObject(); // what the weights hold in memory (--weights)
    cJSON_AddItemToObject(o, "resident", res);
    cJSON_AddStringToObject(res, "weights", aha_weights_name(m->weights));
    cJSON_AddNumberToObject(res, "mapped_bytes", (double)m->mapped_bytes);
    cJSON_AddNumberToObject(res, "f32_bytes", (double)m->converted_bytes);
    cJSON_AddNumberToObject(o, "f32_bytes", (double)m->converted_bytes);
    cJSON_AddItemToObject(o, "tokenizer", tok);
    if (m->tok) {
        cJSON_AddStringToObject(tok, "kind", aha_tok_kind(m->tok));
        cJSON_AddNumberToObject(tok, "vocab", aha_tok_vocab_size(m->tok));
        cJSON_AddNumberToObject(tok, "bos", aha_tok_bos(m->tok));
        cJSON_AddNumberToObject(tok, "eos", aha_tok_eos(m->tok));
        cJSON_AddBoolToObject(tok, "add_bos", aha_tok_add_bos(m->tok));
    } else {
        cJSON_AddNullToObject(tok, "kind");
        cJSON_AddStringToObject(tok, "error", m->tok_error);
    }
    char *text = cJSON_PrintUnformatted(o);
    if (text) printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

int aha_cmd_info_model(int argc, char **argv) {
    int json = 0;
    aha_weights weights = AHA_WEIGHTS_STORED;
    const aha_flag flags[] = {{"--json", FLAG_BOOL, &json, AHA_INFO_JSON, NULL}, AHA_WEIGHTS_FLAG(weights),
                              {NULL, 0, NULL, NULL, NULL}};
    const char *pos[1];
    AHA_PARSE(AHA_INFO_USAGE, flags, pos, 1);
    aha_model m;
    if (aha_model_load_as(&m, pos[0], weights) != 0) return aha_cli_fail();
    if (json) {
        info_json(&m);
        aha_model_free(&m);
        return 0;
    }
    const aha_config *c = &m.cfg;
    printf("model         %s\n", m.path);
    printf("format        %s, stored %s\n", m.format, m.dtype);
    printf("architecture  %s%s\n", aha_arch_name(c->arch), c->aha ? " + AHA router" : "");
    printf("aha router    %s\n", c->aha ? "yes (H router rows fused into q_proj)" : "no");
    printf("layers        %d\n", c->n_layers);
    printf("hidden        %d\n", c->dim);
    printf("heads         %d query, %d key/value (GQA %d:1), head_dim %d\n", c->n_heads,
           c->n_kv_heads, c->n_heads / c->n_kv_heads, c->head_dim);
    printf("ffn           %d (%s)\n", c->ffn_dim, c->ffn_gelu ? "GeGLU, tanh GELU" : "SwiGLU");
    printf("vocab         %d\n", c->vocab);
    printf("context       %d\n", c->max_ctx);
    char scaling[400];
    scaling_text(&m, scaling, sizeof scaling);
    printf("rope          theta %g, %s pairs, scaling %s\n", c->rope_theta,
           c->rope_pairing == AHA_ROPE_ADJACENT ? "adjacent" : "rotate-half", scaling);
    if (c->rope_local_theta > 0) printf("              local layers: theta %g, scaling none\n", c->rope_local_theta);
    char nope[1024];
    flag_ranges(c->layer_nope, c->n_layers, nope, sizeof nope);
    if (nope[0]) printf("              no RoPE (NoPE) on layers %s\n", nope);
    if (c->n_experts) {
        char moe[1024], shared[96] = "";
        flag_ranges(c->layer_moe, c->n_layers, moe, sizeof moe);
        if (c->shared_ffn_dim) snprintf(shared, sizeof shared, ", shared expert %d (sigmoid gate)", c->shared_ffn_dim);
        printf("experts       %d, top %d by softmax probability%s, expert ffn %d%s; layers %s\n", c->n_experts,
               c->n_experts_used, c->moe_norm_topk ? " (weights renormalised)" : "", c->moe_ffn_dim, shared,
               moe[0] ? moe : "none");
    }
    if (c->attn_scale > 0 || c->attn_softcap > 0 || c->final_softcap > 0) {
        char cap[32] = "none", fcap[32] = "none";
        if (c->attn_softcap > 0) snprintf(cap, sizeof cap, "%g", c->attn_softcap);
        if (c->final_softcap > 0) snprintf(fcap, sizeof fcap, "%g", c->final_softcap);
        printf("attention     score scale %g, softcap %s; final logit softcap %s; embeddings x %g\n",
               c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)c->head_dim), cap, fcap, c->embed_scale);
    }
    char local[1024], full[1024];
    layer_ranges(&m, 1, local, sizeof local);
    layer_ranges(&m, 0, full, sizeof full);
    if (!local[0]) printf("layer types   full attention (every layer)\n");
    else printf("layer types   sliding window %d: %s; full: %s\n", c->sliding_window, local, full[0] ? full : "none");
    char notes[AHA_N_NOTES][128];
    for (int i = 0, n = default_notes(c, notes); i < n; i++) printf("              %s\n", notes[i]);
    printf("norm eps      %g\n", c->norm_eps);
    printf("embeddings    %s\n", c->tied ? "tied" : "untied");
    printf("parameters    %.2fM\n", m.n_params / 1e6);
    printf("resident      --weights %s: %.1f MiB mapped in the stored type, %.1f MiB converted to f32\n",
           aha_weights_name(m.weights), m.mapped_bytes / 1048576.0, m.converted_bytes / 1048576.0);
    if (m.tok)
        printf("tokenizer     %s, bos %d, eos %d, add_bos %s\n", aha_tok_kind(m.tok),
               aha_tok_bos(m.tok), aha_tok_eos(m.tok), aha_tok_add_bos(m.tok) ? "yes" : "no");
    else
        printf("tokenizer     none (%s)\n", m.tok_error);
    aha_model_free(&m);
    return 0;
}

static int load_with_tokenizer(aha_model *m, const char *path, aha_weights weights) {
    if (aha_model_load_as(m, path, weights) != 0) return -1;
    if (!m->tok) {
        aha_err("%s", m->tok_error);
        aha_model_free(m);
        return -1;
    }
    return 0;
}

int aha_cmd_tokenize(int argc, char **argv) {
    int ids_only = 0, raw = 0;
    const aha_flag flags[] = {
        {"--ids", FLAG_BOOL, &ids_only, "print only the ids, space-separated", NULL},
        {"--raw", FLAG_BOOL, &raw, "the text's ids alone, without the BOS the tokenizer adds (HF's add_special_tokens=False)", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE("usage: aha tokenize MODEL TEXT", flags, pos, 2);
    aha_model m; // stored weights: mapped, never converted (tokenize computes nothing)
    if (load_with_tokenizer(&m, pos[0], AHA_WEIGHTS_STORED) != 0) return aha_cli_fail();
    int32_t *ids;
    size_t n;
    // By default the ids a prompt becomes in generate and ppl, as HF's tok(text)["input_ids"].
    int rc = raw ? aha_tok_encode(m.tok, pos[1], strlen(pos[1]), &ids, &n)
                 : aha_text_ids(m.tok, pos[1], strlen(pos[1]), &ids, &n);
    if (rc != 0) {
        aha_model_free(&m);
        return aha_cli_fail();
    }
    for (size_t i = 0; i < n; i++) {
        if (ids_only) {
            printf("%s%d", i ? " " : "", ids[i]);
            continue;
        }
        size_t len;
        const char *p = aha_tok_piece(m.tok, ids[i], &len);
        printf("%6d  '%.*s'\n", ids[i], (int)len, p);
    }
    if (ids_only) printf("\n");
    else printf("%zu tokens\n", n);
    free(ids);
    aha_model_free(&m);
    return 0;
}

// A new context of seq[0..n) in calls of 256 tokens (the factors of a
// longrope model for that length), out: the last call's, its last logits.
static int prefill(aha_run *run, const int32_t *seq, int n, const aha_call *last, aha_call_out *out) {
    aha_run_reset(run, n);
    for (int i = 0; i < n; i += 256)
        if (aha_run_step(run, seq + i, n - i < 256 ? n - i : 256, last, out) != 0) return -1;
    return 0;
}

int aha_cmd_generate(int argc, char **argv) {
    int steps = 64, threads = 0, seed = 42, ctx = 0;
    float temp = 0.0f, top_p = 0.9f;
    const char *device = "cpu", *dtype = "f32";
    aha_weights weights = AHA_WEIGHTS_STORED;
    const aha_flag flags[] = {
        {"-n", FLAG_INT, &steps, "new tokens to generate", ">= 0"},
        {"--temp", FLAG_FLOAT, &temp, "sampling temperature; 0 = greedy", ">= 0"},
        {"--top-p", FLAG_FLOAT, &top_p, "nucleus sampling mass (with --temp > 0)", "(0, 1]"},
        {"--seed", FLAG_INT, &seed, "random seed for sampling", NULL},
        {"--ctx", FLAG_INT, &ctx, "context length; 0 = prompt + n", ">= 0"},
        AHA_DEVICE_FLAGS(device, dtype),
        AHA_WEIGHTS_FLAG(weights),
        AHA_THREADS_FLAG(threads),
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE("usage: aha generate MODEL PROMPT", flags, pos, 2);
    aha_set_threads(threads);
    aha_model m;
    if (load_with_tokenizer(&m, pos[0], weights) != 0) return aha_cli_fail();
    int32_t *ids = NULL;
    size_t n;
    aha_backend be = {0};
    aha_run run = {0};
    aha_sampler smp = {0};
    aha_call_out out;
    const aha_call last = {NULL, 1, 0, NULL};
    int32_t *seq = NULL;     // the prompt and the tokens generated
    int rc = 1, started = 0; // started: the text is on stdout, so it ends with a newline whatever happens
    if (aha_text_ids(m.tok, pos[1], strlen(pos[1]), &ids, &n) != 0) goto out;
    if (n == 0) {
        aha_err("empty prompt");
        goto out;
    }
    int need = (int)n + steps;
    if (ctx <= 0) ctx = need;
    if (ctx < need) {
        aha_err("prompt (%zu tokens) + %d new tokens exceed --ctx %d", n, steps, ctx);
        goto out;
    }
    if (aha_backend_init(&be, &m, device, dtype) != 0 || aha_run_init(&run, &be, ctx, 256) != 0 ||
        aha_sampler_init(&smp, m.cfg.vocab, temp, top_p, (uint64_t)seed) != 0)
        goto out;
    fwrite(pos[1], 1, strlen(pos[1]), stdout);
    fflush(stdout);
    started = 1;
    aha_on_interrupt(STDOUT_FILENO, "\n"); // Ctrl-C: the text so far, ended
    double t0 = aha_now_s(), t1 = t0;
    if (!(seq = aha_malloc((size_t)need, sizeof *seq, "tokens"))) goto out;
    memcpy(seq, ids, n * sizeof *seq);
    if (prefill(&run, seq, (int)n, &last, &out) != 0) goto out;
    t1 = aha_now_s();
    int produced = 0;
    for (; produced < steps; produced++) {
        int32_t next = aha_sample(&smp, out.logits);
        if (next == aha_tok_eos(m.tok)) break;
        size_t len;
        const char *p = aha_tok_piece(m.tok, next, &len);
        if (p) fwrite(p, 1, len, stdout);
        fflush(stdout);
        const int at = (int)n + produced; // next's position
        seq[at] = next;
        if (produced + 1 == steps) continue;
        // longrope: HF recomputes the sequence with the long factors once it outgrows the original context
        if (aha_rope_long(&m, at + 1) && !aha_rope_long(&m, at)) {
            if (prefill(&run, seq, at + 1, &last, &out) != 0) goto out;
        } else if (aha_run_step(&run, &next, 1, &last, &out) != 0) {
            goto out;
        }
    }
    aha_on_interrupt(0, NULL);
    printf("\n");
    fflush(stdout); // the text first, then the statistics on stderr
    double t2 = aha_now_s();
    fprintf(stderr, "prompt %zu tokens %.1f tok/s, generated %d tokens %.1f tok/s on %s\n", n,
            n / (t1 - t0), produced, produced / (t2 - t1 > 0 ? t2 - t1 : 1e-9), be.desc);
    rc = 0;
out:
    if (rc && started) { // an error mid-text: the text ends before the message
        aha_on_interrupt(0, NULL);
        printf("\n");
        fflush(stdout);
    }
    if (rc) aha_cli_fail();
    free(ids);
    free(seq);
    aha_sampler_free(&smp);
    aha_run_free(&run);
    aha_backend_free(&be);
    aha_model_free(&m);
    return rc;
}

// Perplexity: the text's first n of n_all tokens in independent chunks of
// ctx, each scored in calls of batch tokens as aha record scores its
// contexts (aha_context_targets); call k is submitted before call k - 1 is
// collected.
static int ppl_score(aha_run *run, const int32_t *ids, size_t n, size_t n_all, int ctx, int batch, double *nll,
                     size_t *scored) {
    int32_t *targets = aha_malloc(n, sizeof(int32_t), "targets");
    if (!targets) return -1;
    for (size_t c0 = 0; c0 < n; c0 += (size_t)ctx) {
        const size_t len = n - c0 < (size_t)ctx ? n - c0 : (size_t)ctx;
        aha_context_targets(ids + c0, (int)len, c0 + len < n_all ? ids[c0 + len] : -1, targets + c0);
    }
    const size_t per_chunk = ((size_t)ctx + batch - 1) / batch;
    const size_t n_calls = (n / ctx) * per_chunk + ((n % ctx + batch - 1) / batch);
    int tty = isatty(2), rc = -1; // progress only for a person watching
    double t0 = aha_now_s();
    aha_call_out out;
    for (size_t k = 0, at = 0; k <= n_calls; k++) {
        if (k < n_calls) {
            const size_t c0 = k / per_chunk * ctx, i = k % per_chunk * batch;
            const size_t len = n - c0 < (size_t)ctx ? n - c0 : (size_t)ctx;
            const int b = (int)(len - i < (size_t)batch ? len - i : (size_t)batch);
            aha_call call = {NULL, 0, 0, targets + c0 + i};
            if (i == 0) aha_run_reset(run, (int)len);
            if (aha_run_submit(run, ids + c0 + i, b, &call, NULL) != 0) goto done;
        }
        if (k == 0) continue;
        if (aha_run_collect(run, &out) != 0) goto done;
        for (int t = 0; t < out.n; t++)
            if (!isnan(out.nll[t])) *nll += out.nll[t], ++*scored;
        at += (size_t)out.n;
        if (tty && (at % ctx == 0 || at == n))
            fprintf(stderr, "\r%zu/%zu tokens, ppl %.4f, %.1f tok/s", at, n, exp(*nll / *scored),
                    at / (aha_now_s() - t0));
    }
    if (tty) fprintf(stderr, "\n");
    rc = 0;
done:
    free(targets);
    return rc;
}

int aha_cmd_ppl(int argc, char **argv) {
    int ctx = 0, batch = 256, threads = 0, max_tokens = 0;
    const char *device = "cpu", *dtype = "f32";
    aha_weights weights = AHA_WEIGHTS_STORED;
    const aha_flag flags[] = {
        {"--ctx", FLAG_INT, &ctx, "tokens per chunk, run independently (a chunk's last token predicts the next chunk's first); 0 = the model's trained context, at most 512", "0 or >= 2"},
        {"--batch", FLAG_INT, &batch, "tokens per forward call", ">= 1"},
        {"--max-tokens", FLAG_INT, &max_tokens, "score at most this many tokens; 0 = all", ">= 0"},
        AHA_DEVICE_FLAGS(device, dtype),
        AHA_WEIGHTS_FLAG(weights),
        AHA_THREADS_FLAG(threads),
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE("usage: aha ppl MODEL FILE\n  perplexity of a UTF-8 text file, in chunks of --ctx tokens; every "
              "token but the first is scored once, from the chunk it follows (as aha record scores a document)",
              flags, pos, 2);
    aha_set_threads(threads);
    aha_map text;
    if (aha_map_open(&text, pos[1]) != 0) return aha_cli_fail();
    aha_model m;
    int32_t *ids = NULL;
    size_t n = 0, scored = 0;
    aha_backend be = {0};
    aha_run run = {0};
    double nll = 0;
    int rc = 1;
    if (text.size == 0) {
        aha_map_close(&text);
        aha_err("%s: empty input", pos[1]);
        return aha_cli_fail();
    }
    if (load_with_tokenizer(&m, pos[0], weights) != 0) {
        aha_map_close(&text);
        return aha_cli_fail();
    }
    if (aha_text_ids(m.tok, (const char *)text.data, text.size, &ids, &n) != 0) {
        aha_err_prefix(pos[1]);
        goto out;
    }
    const size_t n_all = n; // the token after the last read is still a target, as in aha record
    if (n_all < 2) {
        aha_err("%s: fewer than 2 tokens", pos[1]);
        goto out;
    }
    if (max_tokens && n > (size_t)max_tokens) n = (size_t)max_tokens;
    if (aha_ctx_resolve(&m, &ctx, 512) != 0) goto out;
    if (batch > ctx) batch = ctx;
    if (aha_backend_init(&be, &m, device, dtype) != 0 || aha_run_init(&run, &be, ctx, batch) != 0 ||
        ppl_score(&run, ids, n, n_all, ctx, batch, &nll, &scored) != 0)
        goto out;
    printf("ppl %.4f  mean nll %.6f nats over %zu scored tokens (%zu tokens, ctx %d)\n",
           exp(nll / scored), nll / scored, scored, n, ctx);
    rc = 0;
out:
    if (rc) aha_cli_fail();
    free(ids);
    aha_run_free(&run);
    aha_backend_free(&be);
    aha_model_free(&m);
    aha_map_close(&text);
    return rc;
}
