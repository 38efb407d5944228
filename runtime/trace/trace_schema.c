// The schema's tables (trace_schema.h), the template filler, and the meta:
// checked, copied, compared.
#include "trace_schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static const int32_t fill_i32 = -1; // read where a part file is missing
static const int64_t fill_i64 = -1; // a document's number: not known
static const uint8_t fill_u8 = 255;
static const uint32_t fill_u32 = 0; // no valid distance is 0
static const uint16_t fill_f16 = 0x7e00; // NaN
static const float fill_f32 = NAN;
static const double fill_f64 = NAN;

const trace_type_traits trace_types[TY_COUNT] = {
    [TY_I32] = {"int32", 4, &fill_i32},   [TY_I64] = {"int64", 8, &fill_i64},
    [TY_U8] = {"uint8", 1, &fill_u8},     [TY_U32] = {"uint32", 4, &fill_u32},
    [TY_F16] = {"float16", 2, &fill_f16}, [TY_F32] = {"float32", 4, &fill_f32},
    [TY_F64] = {"float64", 8, &fill_f64}, [TY_STR] = {"str", sizeof(char *), NULL},
};

#define DOC(f) FROM_DOC, offsetof(aha_trace_doc, f)
#define RUN_DOC(f) FROM_RUN, offsetof(aha_trace_run_doc, f)

const trace_dset trace_dsets[TD_COUNT] = {
    [TD_TOKENS] = {"tokens", "tokens", TY_I32, SH_T, W_ALWAYS, NULL, DOC(tokens),
                   "Token ids of every document, concatenated (int32 [T])."},
    [TD_POSITION] = {"position", "position", TY_I32, SH_T, W_ALWAYS, NULL, FROM_POSITION, 0,
                     "Position of each token in its document, from 0 (int32 [T])."},
    [TD_TOKEN_TEXT] = {"token_text", "token_text", TY_STR, SH_T, W_ALWAYS, NULL, DOC(token_text),
                       "Text of each token: its UTF-8 piece, NUL-padded to text_width bytes (fixed-length "
                       "string [T])."},
    [TD_DOC_OFFSETS] = {"doc_offsets", "doc_offsets", TY_I64, SH_DOCS, W_ALWAYS, NULL, FROM_ENDS, 0,
                        "Document boundaries on the token axis: document i is tokens "
                        "[doc_offsets[i], doc_offsets[i+1]); doc_offsets[0] = 0, doc_offsets[n_docs] = T "
                        "(int64 [n_docs + 1])."},
    [TD_DOC_INDEX] = {"doc_index", "doc_index", TY_I64, SH_DOC, W_ALWAYS, NULL, DOC(doc_index),
                      "Each document's number in the dataset as read, from 0, counting every document the "
                      "reader gives (one that --skip-bad skips for its tokens too; a JSONL line that does not "
                      "parse is none): a document longer than ctx is several documents here, with its one "
                      "number. Ascending; aha merge writes a run's shards in this order, so the merged trace "
                      "is the single-process one. -1: not known (a merge of shards written before it); traces "
                      "without it read as 0..n_docs-1 (int64 [n_docs])."},
    [TD_DOC_SOURCE] = {"doc_source", "doc_source", TY_STR, SH_DOC, W_ALWAYS, NULL, DOC(source),
                       "Where each document came from: its file relative to the dataset's path (a dataset that is "
                       "one file: its name), with :<line> for a line of JSONL or CSV and #<n> for the n-th document "
                       "of a token file; the contexts of a document longer than ctx have the same. Empty: not "
                       "known (merged from traces written before it) (string [n_docs])."},
    [TD_DOC_SHA256] = {"doc_sha256", "doc_sha256", TY_STR, SH_DOC, W_ALWAYS, NULL, DOC(sha256),
                       "SHA-256 of each document as the reader gives it, 64 hex characters: of its text's UTF-8 "
                       "bytes (a benchmark's after its prompt template), or of its token ids as little-endian "
                       "int32. Resume compares them with the dataset's documents to name one that changed. "
                       "Empty: not known (merged from traces written before it) (string [n_docs])."},
    [TD_GATE] = {"gate", "gate", TY_U8, SH_LTH, W_AHA, NULL, DOC(gate),
                 "Learned AHA router decision, sigmoid(router_logit) > tau: 1 = global (full "
                 "attention), 0 = local (window) (uint8 [L, T, H])."},
    [TD_ROUTER_LOGIT] = {"router_logit", "router_logit", TY_F16, SH_LTH, W_AHA, NULL, DOC(router_logit),
                         "Learned AHA router logit (float16 [L, T, H])."},
    [TD_DEP] = {"dep", "dependency/eps_{eps}", TY_U32, SH_LTH, W_EPS, "eps", DOC(dep),
                "Dependency distance d_eps for eps = {eps}: the smallest window w >= 1 whose "
                "attention mass outside the last w keys and the first {sinks} sink tokens is <= eps "
                "(sinks are always visible, their mass never counts as out of window); 1..position+1 "
                "(uint32 [L, T, H])."},
    [TD_WERR] = {"werr", "window_error/w_{window}", TY_F16, SH_LTH, W_WERR, "window", DOC(werr),
                 "Relative error ||o_w - o|| / ||o|| of the head's attention output o_w with a "
                 "window of {window} keys (and {sinks} sink tokens) against full attention (float16 "
                 "[L, T, H])."},
    [TD_MASS_FAR] = {"mass_far", "mass_far/w_{window}", TY_F16, SH_LTH, W_MASS, "window", DOC(mass_far),
                     "Attention mass on the far context at window {window}: keys {sinks} <= j <= t - {window}, "
                     "outside the window and not a sink (exactly what d_eps thresholds: d_eps > {window} iff "
                     "this > eps; 0 when t - {window} < {sinks}). The window's mass is 1 - this - mass_sinks "
                     "at t >= {window} + {sinks} (float16 [L, T, H])."},
    [TD_MASS_SINKS] = {"mass_sinks", "mass_sinks", TY_F16, SH_LTH, W_MASS1, NULL, DOC(mass_sink),
                       "Attention mass on the {sinks} sink tokens: keys 0 <= j < min({sinks}, t + 1) "
                       "(float16 [L, T, H])."},
    [TD_RUN_NLL] = {"run_nll", "runs/{run}/nll", TY_F32, SH_T, W_RUN, NULL, RUN_DOC(nll),
                    "Next-token negative log-likelihood in nats under this run; NaN for each "
                    "document's last token (float32 [T])."},
    [TD_RUN_KL] = {"run_kl", "runs/{run}/kl", TY_F32, SH_T, W_RUN, NULL, RUN_DOC(kl),
                   "KL(full attention || this run) of the next-token distribution in nats; 0 under "
                   "full attention. A value rounding leaves below 0 by at most 8 float32 ulps of the "
                   "logsumexps is stored as 0; a more negative one is kept as computed (float32 [T])."},
    [TD_RUN_GATE] = {"run_gate", "runs/{run}/gate", TY_U8, SH_LTH, W_RUN_GATE, NULL, RUN_DOC(gate),
                     "Decision attention used in this run: 1 = global (full), 0 = local window "
                     "(uint8 [L, T, H])."},
};

const trace_coord trace_coords[TC_COUNT] = {
    [TC_TOKEN] = {"token", TY_I64,
                  "The token axis: each token's index in the trace, 0..T-1, the axis every per-token dataset "
                  "shares (int64 [T]). The position in its document is `position`."},
    [TC_DOC] = {"doc", TY_I64, "The document axis: each document's index in the trace, 0..n_docs-1 (int64 [n_docs])."},
    [TC_LAYER] = {"layer", TY_I64, "The layer axis: 0..L-1 (int64 [L])."},
    [TC_HEAD] = {"head", TY_I64, "The query-head axis: 0..H-1 (int64 [H])."},
    [TC_EPS] = {"eps", TY_F64, "The eps values of dependency/eps_<e>, as the root attribute eps (float64 [n_eps])."},
    [TC_WINDOW] = {"window", TY_I64,
                   "The windows of window_error/w_<w> and mass_far/w_<w>, as the root attribute windows "
                   "(int64 [n_windows])."},
};

const int trace_shape_dims[SH_COUNT][3] = {
    [SH_T] = {TC_TOKEN, -1, -1},
    [SH_LTH] = {TC_LAYER, TC_TOKEN, TC_HEAD},
    [SH_DOCS] = {-1, -1, -1},
    [SH_DOC] = {TC_DOC, -1, -1},
};

const size_t trace_str_width_off[TD_COUNT] = {[TD_TOKEN_TEXT] = offsetof(aha_trace_meta, text_width),
                                              [TD_DOC_SOURCE] = offsetof(aha_trace_meta, source_width)};
const int trace_str_width_fixed[TD_COUNT] = {[TD_DOC_SHA256] = 64};

#define META(f) OBJ_META, offsetof(aha_trace_meta, f), 0, 0
#define META_LIST(f, n, cap) OBJ_META, offsetof(aha_trace_meta, f), offsetof(aha_trace_meta, n), cap
#define PROV(f) OBJ_PROV, offsetof(aha_trace_prov, f), 0, 0
#define STATE(f) OBJ_STATE, offsetof(aha_trace_state, f), 0, 0
#define RUN(f) OBJ_RUN, offsetof(aha_trace_run, f), 0, 0
#define SAME (A_RESUME | A_COMBINE)

static const trace_attr root_attrs[] = {
    {"format", AK_STR, OBJ_CONST, 0, 0, 0, AHA_TRACE_FORMAT, A_REQUIRED, NULL, "`\"" AHA_TRACE_FORMAT "\"`"},
    {"format_version", AK_I64, STATE(format_version), NULL, A_REQUIRED, NULL, "the schema's version: see Versions"},
    {"tool_version", AK_STR, PROV(version), NULL, 0, NULL, "the `aha` build that created the trace"},
    {"git_revision", AK_STR, PROV(git_revision), NULL, 0, NULL, "its git revision (`-dirty`: uncommitted changes)"},
    {"model", AK_STR, META(model_path), NULL, SAME | A_BY_CONTENT, "MODEL",
     "model path as given (compared only with a trace that lacks `model_sha256`)"},
    {"model_sha256", AK_STR, META(model_sha256), "", A_OPTIONAL | SAME, "MODEL",
     "every file the model was loaded from (the GGUF; or `config.json`, the tokenizer files and each "
     "safetensors file), as `sha256sum` prints them: one line `<hex>  <name>` per file, names relative to "
     "the model path, sorted. Resume and combine compare the model by it (naming the file that differs), "
     "so a moved model still matches and a changed one never does"},
    {"architecture", AK_STR, META(arch), NULL, SAME, NULL, "e.g. `\"llama\"`"},
    {"n_layers", AK_INT, META(n_layers), NULL, A_REQUIRED | SAME, NULL, "`L`, layers"},
    {"n_heads", AK_INT, META(n_heads), NULL, A_REQUIRED | SAME, NULL, "`H`, query heads"},
    {"layer_window", AK_INTS, META_LIST(layer_window, n_layer_window, AHA_TRACE_MAX_LAYERS), "",
     A_OPTIONAL | A_PER_LAYER | SAME, NULL,
     "`[L]`: each layer's native sliding window in keys, as the model runs it (HF semantics: a query at "
     "position `p` sees keys `p-window+1..p`, no sinks); 0 = full causal (a global layer). A natively local "
     "layer's router decides nothing (`gate` 0) and its `d_eps` is at most its window by construction, so "
     "the report, plots and `aha fit` count routing decisions on global layers only and show local ones "
     "apart. Traces without it: every layer global"},
    {"n_kv_heads", AK_INT, META(n_kv_heads), NULL, A_RESUME, NULL, "the model's key/value heads"},
    {"head_dim", AK_INT, META(head_dim), NULL, A_RESUME, NULL, "the model's head dimension"},
    {"vocab", AK_INT, META(vocab), NULL, A_RESUME, NULL, "the model's vocabulary size"},
    {"mode", AK_STR, META(mode), NULL, SAME, NULL, "`\"observe\"`, `\"routed\"` or `\"sweep\"`"},
    {"router_file", AK_STR, META(router_file), "", A_OPTIONAL | SAME | A_BY_CONTENT, "--router",
     "`--router`: the router file (`aha fit`) whose routers are the learned router, fused into q_proj "
     "(`aha` is then 1; `tau` is the file's threshold unless `--tau` was given); `\"\"`: the model's own "
     "(compared only with a trace that lacks `router_sha256`)"},
    {"router_sha256", AK_STR, META(router_sha256), "", A_OPTIONAL | SAME, "--router",
     "the `--router` file's SHA-256 (`\"\"`: none); resume and combine compare the router file by it"},
    {"aha", AK_INT, META(aha), NULL, SAME, NULL, "1: the model has a learned router; `gate` and `router_logit` exist"},
    {"router", AK_STR, META(router), NULL, SAME, "--route / --policies",
     "observe: `\"learned\"` or `\"none\"`; routed / sweep: the policy (`oracle`, `random:0.1`, ...); a "
     "`--policies` grid: `grid` and its points by family (`grid oracle:0.1,0.3 random:0.5 local`)"},
    {"tau", AK_F64, META(tau), NULL, SAME, "--tau",
     "learned-router threshold, as given (`--tau`), or the router file's"},
    {"eps", AK_F64S, META_LIST(eps, n_eps, AHA_TRACE_MAX_EPS), NULL, A_REQUIRED | SAME, "--eps",
     "dependency thresholds as given (the dependency pass compares in float32), one `dependency/eps_<e>` each"},
    {"windows", AK_INTS, META_LIST(windows, n_windows, AHA_TRACE_MAX_WINDOWS), NULL, A_REQUIRED | SAME, "--windows",
     "windows of interest"},
    {"sinks", AK_INT, META(sinks), NULL, SAME, "--sinks",
     "`--sinks`: the first tokens of each context, always visible to local attention; their attention mass "
     "never counts as out of window in `d_eps`"},
    {"werr", AK_INT, META(werr), NULL, SAME | A_SWITCH, "--werr", "1: `window_error/w_<w>` exists for every window"},
    {"mass", AK_INT, META(mass), "0", A_OPTIONAL | SAME | A_SWITCH, "--mass",
     "1 (`--mass`): `mass_far/w_<w>` exists for every window, and `mass_sinks`"},
    {"device", AK_STR, META(device), "cpu", A_OPTIONAL | SAME, "--device", // shards of one run: one arithmetic
     "where the model ran: `\"cpu\"` (f32), `\"cpu:bf16\"` (`--dtype bf16`: bf16 matrix products), or "
     "`\"cuda:<dtype>\"` (`cuda:f32`, `cuda:f16`, `cuda:bf16`: the device's weight type); traces without it "
     "were made on the CPU. Shards combine (report, merge) only with the same device"},
    {"weights", AK_STR, META(weights), "f32", A_OPTIONAL | SAME, "--weights",
     "`--weights`: `\"stored\"`, the matrices read in their stored type (products decode them tile by tile; "
     "their sums round apart from the f32 path's), or `\"f32\"`, converted to float32 at load; traces "
     "without it were made by an aha that always converted"},
    {"shard", AK_STR, META(shard), "", A_OPTIONAL | A_RESUME, "--shard",
     "`\"I/N\"`: the trace holds documents `d` with `d % N == I` (`aha record --shard`); `\"I,J,.../N\"`: a merge "
     "of some shards; `\"\"`: all. Traces combine only as distinct shards of one N"},
    {"ctx", AK_INT, META(ctx), NULL, A_OPTIONAL | SAME, "--ctx", "`--ctx`: tokens per context (longer documents are split)"},
    {"batch", AK_INT, META(batch), NULL, A_OPTIONAL | SAME, "--batch", "`--batch`: tokens per forward call"},
    {"seed", AK_I64, META(seed), NULL, A_OPTIONAL | SAME, "--seed", "`--seed` of `random:P` routing"},
    {"dataset_format", AK_STR, META(format), "", A_OPTIONAL | SAME, "--data-format", "`--data-format` as given (`auto`: decided per file)"},
    {"text_field", AK_STR, META(text_field), "", A_OPTIONAL | SAME, "--text-field", "`--text-field` of JSONL (`\"\"`: `text`)"},
    {"dataset_read_as", AK_STR, META(read_as), "", A_OPTIONAL, NULL,
     "what the documents were read as, `+`-joined (`\"gsm8k\"`, `\"text+tokens\"`): with `--data-format auto`, "
     "the formats detected (`\"\"`: not recorded)"},
    {"bos", AK_I64, META(bos), "-1", A_OPTIONAL | SAME, NULL,
     "the BOS token id put before every text document (the tokenizer asks for one); -1: none. "
     "Pre-tokenized documents are read as given"},
    {"max_docs", AK_I64, META(max_docs), NULL, A_OPTIONAL | SAME, "--max-docs", "`--max-docs`: documents of the dataset read (0: all)"},
    {"max_tokens", AK_I64, META(max_tokens), NULL, A_OPTIONAL | SAME, "--max-tokens",
     "`--max-tokens`: tokens of the whole run (0: all); a shard records its part of them"},
    {"dataset", AK_STR, META(dataset), NULL, SAME | A_BY_CONTENT, "DATA",
     "what was read, as given (compared only with a trace that lacks `dataset_sha256`)"},
    {"dataset_sha256", AK_STR, META(dataset_sha256), "", A_OPTIONAL | SAME, "DATA",
     "SHA-256 over the digests (`doc_sha256`: their 64 hex characters each, concatenated) of every document the reader gives with these "
     "settings (`--data-format`, `--text-field`, `--max-docs`), in order, all shards' included: every shard of a run "
     "has the same. Resume and combine compare the dataset by it; a resume names the first document that differs"},
    {"dataset_docs", AK_I64, META(dataset_docs), "0", A_OPTIONAL, NULL,
     "how many documents `dataset_sha256` covers, all shards' (0: not recorded). Where traces hold every one of "
     "them (complete, all shards, no `--max-tokens`), `aha verify`, `aha merge` and a report check that "
     "`dataset_sha256` is their digests' fingerprint"},
    {"text_width", AK_INT, META(text_width), NULL, A_OPTIONAL | A_RESUME, NULL,
     "bytes of the longest text a token id can have: `token_text` holds fixed-length strings of this width "
     "(traces of version 1: variable-length strings, no attribute)"},
    {"command_line", AK_STR, PROV(command_line), NULL, 0, NULL, "the command that created the trace (a resume keeps it)"},
    {"created", AK_STR, PROV(created), NULL, 0, NULL, "UTC, ISO 8601"},
    {"complete", AK_I64, STATE(complete), NULL, 0, NULL, "1: the run finished; 0: unfinished or killed"},
    {"n_docs", AK_I64, STATE(n_docs), NULL, 0, NULL, "documents the file holds"},
    {"n_tokens", AK_I64, STATE(n_tokens), NULL, 0, NULL, "tokens the file holds"},
    {"chunk_tokens", AK_I64, STATE(chunk_tokens), NULL, 0, NULL, "chunk length along `T` (storage detail)"},
    {"trace_id", AK_I64, STATE(id), NULL, A_OPTIONAL, NULL,
     "random at creation, kept by a resume; an unfinished trace's part files carry it in their names, so "
     "a copied index never reads another trace's parts"},
};

static const trace_attr prov_attrs[] = {
    {"version", AK_STR, PROV(version), NULL, 0, NULL, "the `aha` version of the build"},
    {"git_revision", AK_STR, PROV(git_revision), NULL, 0, NULL, "its git revision"},
    {"compiler", AK_STR, PROV(compiler), NULL, 0, NULL, "the compiler, as `cc --version` names it"},
    {"cflags", AK_STR, PROV(cflags), NULL, 0, NULL, "the build's CFLAGS"},
    {"host", AK_STR, PROV(host), NULL, 0, NULL, "the machine's name"},
    {"hdf5_version", AK_STR, PROV(hdf5), NULL, 0, NULL, "the HDF5 library that wrote the file"},
};

static const trace_attr run_attrs[] = {
    {"policy", AK_STR, RUN(policy), NULL, 0, NULL,
     "what attention followed: `global`, `oracle`, `learned`, `random:0.1`, ...; a sweep's grid (`--policies`): "
     "the family, `oracle`, `werr`, `learned`, `random`, `topk`, `local`, with its number in `param`"},
    {"window", AK_INT, RUN(window), NULL, 0, NULL, "the routed window (0: none)"},
    {"param", AK_F64, RUN(param), "nan", A_OPTIONAL, NULL,
     "the policy's number in a sweep's grid: oracle's eps, werr's threshold, learned's tau, random's P, topk's k "
     "(NaN: none, the number is in `policy` or there is none)"},
    {"flops_executed", AK_F64, RUN(flops_executed), NULL, 0, NULL, "attention FLOPs executed, over all documents"},
    {"flops_full", AK_F64, RUN(flops_full), NULL, 0, NULL, "what full attention would have executed"},
    {"full_pass", AK_INT, RUN(full_pass), "-1", A_OPTIONAL, NULL,
     "1: the policy decides from the full-attention pass (`oracle`: its d_eps, `werr`: its window errors), which "
     "runs first, so a run of it costs that pass's FLOPs too (the report's `flops_fraction_incl_oracle_pass`); "
     "traces without it read it from the policy"},
};

#define N_OF(a) (int)(sizeof(a) / sizeof(a)[0])

const trace_group trace_groups[TG_COUNT] = {
    [TG_ROOT] = {"/", W_ALWAYS, root_attrs, N_OF(root_attrs),
                 "aha trace: per layer, token and head, attention routing decisions and context-"
                 "dependency distances of a transformer over a dataset. Schema: docs/trace-format.md."},
    [TG_PROVENANCE] = {"provenance", W_ALWAYS, prov_attrs, N_OF(prov_attrs),
                       "How this trace was made: the toolkit build and the libraries."},
    [TG_DEPENDENCY] = {"dependency", W_ALWAYS, NULL, 0,
                       "Dependency distance d_eps per (layer, token, head): one dataset per eps."},
    [TG_WINDOW_ERROR] = {"window_error", W_WERR, NULL, 0,
                         "Relative error of each head's sliding-window attention output against full "
                         "attention: one dataset per window."},
    [TG_MASS_FAR] = {"mass_far", W_MASS, NULL, 0,
                     "Where attention mass goes (aha record --mass): the mass on the far context, "
                     "outside the window and the sinks, one dataset per window; mass_sinks holds the sinks'."},
    [TG_RUNS] = {"runs", W_ALWAYS, NULL, 0,
                 "One group per run (in the order they were declared): per-token NLL and KL against "
                 "full attention, the decisions attention used, and attention FLOP totals."},
    [TG_RUN] = {"runs/{run}", W_RUN, run_attrs, N_OF(run_attrs),
                "Run '{run}': attention follows policy '{policy}' (window {window}). flops_executed / "
                "flops_full: attention FLOPs executed and what full attention would have executed, over "
                "all documents."},
};

int trace_fill(char *out, size_t size, const char *tmpl, const trace_vars *v) {
    static const char *keys[] = {"eps", "window", "sinks", "run", "policy"};
    const char *vals[] = {v ? v->eps : NULL, v ? v->window : NULL, v ? v->sinks : NULL,
                          v ? v->run : NULL, v ? v->policy : NULL};
    size_t k = 0;
    for (const char *s = tmpl; *s; s++) {
        const char *put = s, *end = strchr(s, '}');
        size_t len = 1;
        if (*s == '{' && end) {
            put = NULL;
            for (int i = 0; i < N_OF(keys); i++)
                if ((size_t)(end - s - 1) == strlen(keys[i]) && !strncmp(s + 1, keys[i], strlen(keys[i])))
                    put = vals[i];
            if (!put) return -1;
            len = strlen(put);
            s = end;
        }
        if (k + len >= size) return -1;
        memcpy(out + k, put, len);
        k += len;
    }
    out[k] = '\0';
    return 0;
}

// ---- a row's instances in one trace ----

int trace_row_count(trace_dset_id id, const aha_trace_meta *m, int n_runs) {
    switch (trace_dsets[id].when) {
    case W_EPS: return m->n_eps;
    case W_WERR:
    case W_MASS: return m->n_windows;
    case W_RUN:
    case W_RUN_GATE: return n_runs;
    default: return 1;
    }
}

int trace_row_has(trace_dset_id id, int i, const aha_trace_meta *m, const aha_trace_run *runs, int n_runs) {
    if (i < 0 || i >= trace_row_count(id, m, n_runs)) return 0;
    switch (trace_dsets[id].when) {
    case W_AHA: return m->aha;
    case W_WERR: return m->werr;
    case W_MASS:
    case W_MASS1: return m->mass;
    case W_RUN_GATE: return runs[i].has_gate;
    default: return 1;
    }
}

int trace_row_name(trace_dset_id id, int i, const aha_trace_meta *m, const char *run, char *path, size_t size,
                   char *desc, size_t dsize) {
    const trace_dset *ds = &trace_dsets[id];
    char eps[32] = "", win[32] = "", sinks[32];
    if (ds->when == W_EPS) snprintf(eps, sizeof eps, "%g", m->eps[i]);
    if (ds->when == W_WERR || ds->when == W_MASS) snprintf(win, sizeof win, "%d", m->windows[i]);
    snprintf(sinks, sizeof sinks, "%d", m->sinks);
    const trace_vars v = {eps, win, sinks, run ? run : "", ""};
    if (trace_fill(path, size, ds->path, &v) < 0) return -1;
    return desc ? trace_fill(desc, dsize, ds->desc, &v) : 0;
}

int64_t trace_row_elems(trace_dset_id id, const aha_trace_meta *m, int64_t n) {
    return trace_dsets[id].shape == SH_LTH ? (int64_t)m->n_layers * n * m->n_heads : n;
}

// ---- the meta ----

int aha_trace_meta_check(const aha_trace_meta *m, const char *path) {
    const char *bad = NULL;
    if (!m->model_path || !m->arch || !m->router || !m->mode)
        bad = "model_path, arch, router and mode are required";
    else if (m->n_layers < 1 || m->n_heads < 1)
        bad = "n_layers and n_heads must be >= 1";
    else if (m->n_eps < 0 || m->n_eps > AHA_TRACE_MAX_EPS || (m->n_eps > 0 && !m->eps))
        bad = "bad eps list (at most " TRACE_STR(AHA_TRACE_MAX_EPS) " values)";
    else if (m->n_windows < 0 || m->n_windows > AHA_TRACE_MAX_WINDOWS || (m->n_windows > 0 && !m->windows))
        bad = "bad windows list (at most " TRACE_STR(AHA_TRACE_MAX_WINDOWS) " values)";
    else if (m->werr && m->n_windows < 1)
        bad = "window errors need windows";
    else if (m->mass && m->n_windows < 1)
        bad = "the mass split needs windows";
    else if (m->chunk_tokens < 0)
        bad = "chunk_tokens < 0";
    else if (m->n_layer_window != 0 && (m->n_layer_window != m->n_layers || !m->layer_window))
        bad = "layer_window must hold n_layers values";
    else if (m->n_layers > AHA_TRACE_MAX_LAYERS || m->n_heads > AHA_TRACE_MAX_HEADS)
        bad = "more than " TRACE_STR(AHA_TRACE_MAX_LAYERS) " layers or " TRACE_STR(AHA_TRACE_MAX_HEADS) " heads";
    for (int id = 0; !bad && id < TD_COUNT; id++) {
        int w = trace_dsets[id].type == TY_STR ? aha_trace_str_width(m, id) : 1;
        if (w < 1 || w > AHA_TRACE_MAX_WIDTH) {
            aha_err("%s: cannot write a trace: %s strings of %d bytes (a width is 1..%d)", path, trace_dsets[id].path,
                    w, AHA_TRACE_MAX_WIDTH);
            return -1;
        }
    }
    for (int l = 0; !bad && l < m->n_layer_window; l++)
        if (m->layer_window[l] < 0) bad = "layer_window values must be >= 0";
    for (int i = 0; !bad && i < m->n_eps; i++) {
        char a[32], b[32];
        if (!(m->eps[i] >= 0 && m->eps[i] <= 1)) bad = "eps must be in [0, 1]";
        snprintf(a, sizeof a, "%g", m->eps[i]);
        for (int j = 0; !bad && j < i; j++)
            if (snprintf(b, sizeof b, "%g", m->eps[j]), strcmp(a, b) == 0) bad = "eps values repeat";
    }
    for (int i = 0; !bad && i < m->n_windows; i++) {
        if (m->windows[i] < 1) bad = "windows must be >= 1";
        for (int j = 0; !bad && j < i; j++)
            if (m->windows[j] == m->windows[i]) bad = "windows repeat";
    }
    if (bad) aha_err("%s: cannot write a trace: %s", path, bad);
    return bad ? -1 : 0;
}

// The meta's field of row a (a string or a list: a pointer).
static void **meta_field(aha_trace_meta *m, const trace_attr *a) { return (void **)((char *)m + a->off); }

int aha_trace_meta_copy(aha_trace_meta *d, const aha_trace_meta *s) {
    *d = *s;
    // Every string the root's rows hold, copied (NULL: the row's default, or ""), and the
    // command line (no attribute of the meta's: the provenance's). Each is replaced, even after
    // a failed copy, so that aha_trace_meta_free frees only d's own.
    const trace_group *g = &trace_groups[TG_ROOT];
    int ok = (d->command_line = strdup(s->command_line ? s->command_line : "")) != NULL;
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *a = &g->attrs[i];
        if (a->obj != OBJ_META || a->kind != AK_STR) continue;
        const char *v = *meta_field((aha_trace_meta *)s, a);
        char *c = strdup(v ? v : a->value ? a->value : "");
        *meta_field(d, a) = c;
        ok = ok && c;
    }
    double *eps = malloc((size_t)s->n_eps * sizeof *eps + 1);
    int *win = malloc((size_t)s->n_windows * sizeof *win + 1);
    if (eps && s->n_eps) memcpy(eps, s->eps, (size_t)s->n_eps * sizeof *eps);
    if (win && s->n_windows) memcpy(win, s->windows, (size_t)s->n_windows * sizeof *win);
    // Always n_layers values: an absent list is every layer full causal.
    int *lw = calloc((size_t)(s->n_layers > 0 ? s->n_layers : 0) + 1, sizeof *lw);
    for (int l = 0; lw && l < s->n_layer_window && l < s->n_layers; l++) lw[l] = s->layer_window[l];
    d->eps = eps;
    d->windows = win;
    d->layer_window = lw;
    d->n_layer_window = s->n_layers > 0 ? s->n_layers : 0;
    return ok && lw && eps && win ? 0 : -1;
}

void aha_trace_meta_free(aha_trace_meta *m) {
    const trace_group *g = &trace_groups[TG_ROOT];
    for (int i = 0; i < g->n_attrs; i++) // its strings and lists
        if (g->attrs[i].obj == OBJ_META && (g->attrs[i].kind == AK_STR || g->attrs[i].n_off))
            free(*meta_field(m, &g->attrs[i]));
    free((char *)m->command_line);
    memset(m, 0, sizeof *m);
}

void aha_trace_quality_add(aha_trace_quality *q, const float *nll, const float *kl, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (!isnan(nll[i])) {
            q->nll_sum += nll[i];
            q->n_nll++;
        }
        q->kl_sum += kl[i];
        q->n_kl++;
    }
}

double aha_trace_ppl(const aha_trace_quality *q) { return q->n_nll ? exp(q->nll_sum / (double)q->n_nll) : NAN; }

double aha_trace_mean_kl(const aha_trace_quality *q) { return q->n_kl ? q->kl_sum / (double)q->n_kl : NAN; }

void aha_trace_prov_free(aha_trace_prov *p) {
    free(p->version);
    free(p->git_revision);
    free(p->compiler);
    free(p->cflags);
    free(p->host);
    free(p->hdf5);
    free(p->created);
    free(p->command_line);
    memset(p, 0, sizeof *p);
}

int aha_trace_n_global(const aha_trace_meta *m) {
    int n = 0;
    for (int l = 0; l < m->n_layers; l++) n += aha_trace_layer_window(m, l) == 0;
    return n;
}

void aha_trace_layers_label(const aha_trace_meta *m, char *buf, size_t size) {
    int g = aha_trace_n_global(m), lo = 0, hi = 0;
    for (int l = 0; l < m->n_layers; l++) {
        int w = aha_trace_layer_window(m, l);
        if (w && (!lo || w < lo)) lo = w;
        if (w > hi) hi = w;
    }
    if (g == m->n_layers) snprintf(buf, size, "all layers");
    else if (lo == hi)
        snprintf(buf, size, "global layers only: %d of %d; %d natively local (window %d) shown apart", g,
                 m->n_layers, m->n_layers - g, lo);
    else
        snprintf(buf, size, "global layers only: %d of %d; %d natively local (windows %d-%d) shown apart", g,
                 m->n_layers, m->n_layers - g, lo, hi);
}

void aha_trace_run_free(aha_trace_run *r) {
    free(r->name);
    free(r->policy);
    r->name = NULL;
    r->policy = NULL;
}

// The shortest text that reads back as v (what the user typed, for 0.01).
static int num_fmt(char *out, size_t size, double v) {
    int n = 0;
    for (int prec = 6; prec <= 17; prec++)
        if ((n = snprintf(out, size, "%.*g", prec, v)) < 0 || strtod(out, NULL) == v) break;
    return n;
}

// A meta attribute's value as text (lists comma-separated).
// Value i of a list attribute; a per-layer list shorter than n_layers reads 0 beyond its end.
static int list_at(const trace_attr *a, const aha_trace_meta *m, int i) {
    int n = *(const int *)((const char *)m + a->n_off);
    return i < n ? (*(const int *const *)((const char *)m + a->off))[i] : 0;
}

static void value_fmt(const trace_attr *a, const aha_trace_meta *m, char *out, size_t size) {
    const char *p = (const char *)m + a->off;
    int n = a->n_off ? *(const int *)((const char *)m + a->n_off) : 0;
    size_t k = 0;
    out[0] = '\0';
    if (a->flags & A_PER_LAYER) n = m->n_layers;
    switch (a->kind) {
    case AK_STR: {
        const char *s = *(const char *const *)p;
        snprintf(out, size, "%s", s ? s : a->value ? a->value : "");
        break;
    }
    case AK_INT: snprintf(out, size, "%d", *(const int *)p); break;
    case AK_I64: snprintf(out, size, "%lld", (long long)*(const int64_t *)p); break;
    case AK_F64: num_fmt(out, size, *(const double *)p); break;
    case AK_F64S:
        for (int i = 0; i < n && k + 1 < size; i++) {
            if (i) {
                out[k++] = ',';
                out[k] = '\0';
            }
            k += (size_t)num_fmt(out + k, size - k, (*(const double *const *)p)[i]);
        }
        break;
    case AK_INTS:
        for (int i = 0; i < n && k < size; i++)
            k += (size_t)snprintf(out + k, size - k, "%s%d", i ? "," : "", list_at(a, m, i));
        break;
    }
}

static int value_same(const trace_attr *a, const aha_trace_meta *x, const aha_trace_meta *y) {
    const char *p = (const char *)x + a->off, *q = (const char *)y + a->off;
    int n = a->n_off ? *(const int *)((const char *)x + a->n_off) : 0;
    if (a->flags & A_PER_LAYER) { // absent or short: zeros (full causal)
        for (int i = 0; i < x->n_layers || i < y->n_layers; i++)
            if (list_at(a, x, i) != list_at(a, y, i)) return 0;
        return 1;
    }
    if (a->n_off && n != *(const int *)((const char *)y + a->n_off)) return 0;
    switch (a->kind) {
    case AK_STR: {
        const char *s = *(const char *const *)p, *t = *(const char *const *)q, *def = a->value ? a->value : "";
        return strcmp(s ? s : def, t ? t : def) == 0;
    }
    case AK_INT: return *(const int *)p == *(const int *)q;
    case AK_I64: return *(const int64_t *)p == *(const int64_t *)q;
    case AK_F64: return *(const double *)p == *(const double *)q;
    case AK_F64S:
        for (int i = 0; i < n; i++)
            if ((*(const double *const *)p)[i] != (*(const double *const *)q)[i]) return 0;
        return 1;
    case AK_INTS:
        return n == 0 || memcmp(*(const int *const *)p, *(const int *const *)q, (size_t)n * sizeof(int)) == 0;
    }
    return 0;
}

// A string field of m ("" for NULL).
static const char *str_at(const trace_attr *a, const aha_trace_meta *m) {
    const char *s = *(const char *const *)((const char *)m + a->off);
    return s ? s : "";
}

// Fingerprint row fp (the row after its path, A_BY_CONTENT) of m for a
// message: "path, sha256 0123456789abcdef..." or "none".
static void fp_fmt(const trace_attr *fp, const aha_trace_meta *m, char *out, size_t size) {
    const char *hex = str_at(fp, m);
    if (!hex[0]) snprintf(out, size, "none");
    else snprintf(out, size, "%s, sha256 %.16s...", str_at(fp - 1, m), hex);
}

// The line of file name in a sha256sum listing ("<hex>  <name>\n" each), or NULL.
static const char *listing_find(const char *list, const char *name, size_t len) {
    for (const char *l = list; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *sp = strstr(l, "  "), *nl = strchr(l, '\n');
        if (!sp || (nl && sp > nl)) continue;
        size_t n = nl ? (size_t)(nl - sp - 2) : strlen(sp + 2);
        if (n == len && !strncmp(sp + 2, name, len)) return l;
    }
    return NULL;
}

// The first file of listing x whose digest is not y's (or which y lacks): 1
// with d filled (which says x's and y's), else 0.
static int listing_diff(const char *x, const char *y, int x_is_a, aha_trace_diff *d) {
    for (const char *l = x; *l;) {
        const char *sp = strstr(l, "  "), *nl = strchr(l, '\n');
        if (!sp || (nl && sp > nl)) break; // not a listing: compared whole
        size_t len = nl ? (size_t)(nl - sp - 2) : strlen(sp + 2);
        const char *o = listing_find(y, sp + 2, len);
        if (!o || strncmp(o, l, (size_t)(sp - l)) != 0) {
            char mine[80], other[80];
            snprintf(mine, sizeof mine, "sha256 %.16s...", l);
            snprintf(other, sizeof other, o ? "sha256 %.16s..." : "not read", o ? o : "");
            snprintf(d->what, sizeof d->what, "the model's %.*s", (int)len, sp + 2);
            snprintf(x_is_a ? d->a : d->b, sizeof d->a, "%s", mine);
            snprintf(x_is_a ? d->b : d->a, sizeof d->a, "%s", other);
            return 1;
        }
        l = nl ? nl + 1 : sp + 2 + len;
    }
    return 0;
}

// Row at of a and b as the user names and typed them.
static void diff_fill(const trace_attr *at, const aha_trace_meta *a, const aha_trace_meta *b, aha_trace_diff *d) {
    d->attr = at;
    snprintf(d->what, sizeof d->what, "%s", at->flag && at->flag[0] == '-' ? at->flag : at->name);
    if (at->flags & A_SWITCH) {
        snprintf(d->a, sizeof d->a, "%s%s", *(const int *)((const char *)a + at->off) ? "" : "no ", at->flag);
        snprintf(d->b, sizeof d->b, "%s%s", *(const int *)((const char *)b + at->off) ? "" : "no ", at->flag);
        return;
    }
    if (at > trace_groups[TG_ROOT].attrs && (at[-1].flags & A_BY_CONTENT)) { // a fingerprint
        fp_fmt(at, a, d->a, sizeof d->a);
        fp_fmt(at, b, d->b, sizeof d->b);
        if (!strcmp(at->flag, "DATA")) snprintf(d->what, sizeof d->what, "the dataset (DATA)");
        if (!strcmp(at->flag, "MODEL") && !listing_diff(str_at(at, a), str_at(at, b), 1, d) &&
            !listing_diff(str_at(at, b), str_at(at, a), 0, d))
            snprintf(d->what, sizeof d->what, "the model (MODEL)");
        return;
    }
    value_fmt(at, a, d->a, sizeof d->a);
    value_fmt(at, b, d->b, sizeof d->b);
    for (int k = 0; at->kind == AK_STR && k < 2; k++) // an empty string, visibly
        if (!(k ? d->b : d->a)[0]) snprintf(k ? d->b : d->a, sizeof d->a, (at->flags & A_BY_CONTENT) ? "none" : "\"\"");
}

int aha_trace_meta_diff(const aha_trace_meta *a, const aha_trace_meta *b, unsigned which, aha_trace_diff *d) {
    const trace_group *g = &trace_groups[TG_ROOT];
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *at = &g->attrs[i];
        if (at->obj != OBJ_META || !(at->flags & which)) continue;
        if (at->flags & A_BY_CONTENT) { // the path, or (both have one) its fingerprint, the next row
            int by_content = str_at(at + 1, a)[0] && str_at(at + 1, b)[0];
            at += by_content;
            i++;
        }
        if (value_same(at, a, b)) continue;
        diff_fill(at, a, b, d);
        return 1;
    }
    memset(d, 0, sizeof *d);
    return 0;
}
