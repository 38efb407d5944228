// The report's schema (report_schema.h): the tables, the builders, the check
// and the checked reads.
#include "report_schema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

#define NONE RO_COUNT // no object
// Which decisions a field counts, in the words every table and figure uses.
#define ALL "all decisions: every (layer, token, head) of the global layers, prompt tokens included"
#define TGEW "decisions with t >= w: those where the window drops keys"
#define HOLDER "those of the field that holds it"
#define GLOBAL_LAYERS "the global layers (natively local ones never count)"

const report_object report_objs[RO_COUNT] = {
    [RO_REPORT] = {"report", NONE, "The file: `aha report --out-format json`, `-o DIR`'s `report.json`."},
    [RO_TRACE] = {"trace", NONE, "One run: the traces given, combined as its shards, or with `--compare` one trace each."},
    [RO_SUBSETS] = {"subsets", NONE, "The two denominators of a fraction, named in every key that has one."},
    [RO_DOC] = {"doc", NONE, "One per-document row's document (a context: a document longer than ctx is a row per context)."},
    [RO_LOCAL_LAYER] = {"local_layer", NONE, "A natively local layer, apart from every count: its window and d_eps quantiles."},
    [RO_QUANTILES] = {"quantiles", NONE, "Quantiles of the dependency distance d_eps: the smallest d with P(d_eps <= d) >= q."},
    [RO_LOCAL_QUANTILES] = {"local_quantiles", RO_QUANTILES, "A local layer's d_eps quantiles at one eps."},
    [RO_ROUTER] = {"router", NONE, "A router evaluated on every decision: the oracle at one eps (d_eps > w), or the learned router."},
    [RO_ROUTER_WINDOW] = {"router_window", NONE, "A router's fraction of decisions routed global at one window, overall and broken down."},
    [RO_PAIR] = {"pair", NONE, "One fraction over both subsets."},
    [RO_FRAC] = {"frac", NONE, "A fraction with the counts behind it: fraction = global / total."},
    [RO_LONG_TAIL] = {"long_tail", NONE, "The long tail of the dependency distance at one eps."},
    [RO_AGREEMENT] = {"agreement", NONE, "The learned router against the oracle at one eps and window (positive = global)."},
    [RO_CONFUSION] = {"confusion", NONE, "Learned (predicted) vs oracle (actual) counts; positive = global."},
    [RO_WERR] = {"window_error", NONE, "The window-output relative error ||o_w - o|| / ||o|| at one window (`aha record --werr`), exact from the stored float16 values."},
    [RO_ABOVE] = {"above", RO_FRAC, "Decisions whose window-output error is above a threshold."},
    [RO_RUN] = {"run", NONE, "A routed run (or the full-attention reference): quality against full attention, fraction global, FLOPs."},
    [RO_TOKENS] = {"tokens", NONE, "Which tokens need global attention: the oracle at the first eps by token, position and class."},
    [RO_GROUP] = {"group", NONE, "A layer group: thirds of the global layers (fewer with fewer), then all of them."},
    [RO_TOKEN_WINDOW] = {"token_window", NONE, "The token tables at one window, a list per layer group."},
    [RO_TOKEN_TOP] = {"token_top", RO_FRAC, "A token id among the top by global rate."},
    [RO_KEYED] = {"keyed", NONE, "Global rates by key (position bucket or class) over both subsets."},
    [RO_KEYED_FRAC] = {"keyed_frac", RO_FRAC, "One key's global rate."},
    [RO_MASS] = {"mass", NONE, "Where the attention mass goes (`aha record --mass`): sinks, window, far context."},
    [RO_MASS_WINDOW] = {"mass_window", NONE, "The mass split at one window, per layer group."},
    [RO_MASS_SPLIT] = {"mass_split", NONE, "Mean attention mass per decision on the sinks, the window and the far context (null where there are no decisions)."},
    [RO_MASS_GROUP] = {"mass_group", RO_MASS_SPLIT, "One layer group's split over decisions with t >= w + sinks, and over the oracle's global ones."},
    [RO_MASS_GLOBAL] = {"mass_global", RO_MASS_SPLIT, "The split over those decisions the oracle calls global (d_eps > w at the first eps)."},
    [RO_FRONTIER] = {"frontier", NONE, "The frontier of a sweep: per window and policy family, quality against fraction global."},
    [RO_LINE] = {"line", NONE, "One window and policy family's routed runs."},
    [RO_POINT] = {"point", NONE, "One routed run of a line."},
    [RO_SMALLEST] = {"smallest", NONE, "The smallest fraction global with perplexity change <= delta."},
};

const report_field report_fields[RF_COUNT] = {
    [RF_REPORT_FORMAT] = {RO_REPORT, "format", RT_STR, NONE, NULL, "", "", NULL, "`aha-report`"},
    [RF_REPORT_VERSION] = {RO_REPORT, "version", RT_INT, NONE, NULL, "", "", NULL, "1"},
    [RF_REPORT_TRACES] = {RO_REPORT, "traces", RT_OBJ, RO_TRACE, "[n]", "", "", NULL, "One run, or with `--compare` one per trace in the order given"},

    [RF_TRACE_FILES] = {RO_TRACE, "files", RT_STR, NONE, "[n_files]", "", "", NULL, "The traces read, as given"},
    [RF_TRACE_MODEL] = {RO_TRACE, "model", RT_STR, NONE, NULL, "", "", NULL, "The model's path as recorded"},
    [RF_TRACE_ARCH] = {RO_TRACE, "architecture", RT_STR, NONE, NULL, "", "", NULL, "The model's architecture, e.g. `llama`"},
    [RF_TRACE_DATASET] = {RO_TRACE, "dataset", RT_STR, NONE, NULL, "", "", NULL, "What was read"},
    [RF_TRACE_MODE] = {RO_TRACE, "mode", RT_STR, NONE, NULL, "", "", NULL, "`observe`, `routed` or `sweep`"},
    [RF_TRACE_DEVICE] = {RO_TRACE, "device", RT_STR, NONE, NULL, "", "", NULL, "Where it ran: `cpu`, `cuda:f32`, ..."},
    [RF_TRACE_ROUTER] = {RO_TRACE, "router", RT_STR, NONE, NULL, "", "", NULL, "observe: `learned` or `none`; routed: the policy; a sweep grid: its name"},
    [RF_TRACE_TAU] = {RO_TRACE, "tau", RT_NUM, NONE, NULL, "", "", NULL, "The learned router's threshold: global iff sigmoid(logit) > tau"},
    [RF_TRACE_FORMAT_VERSION] = {RO_TRACE, "format_version", RT_INT, NONE, NULL, "", "", NULL, "The trace format's version"},
    [RF_TRACE_COMPLETE] = {RO_TRACE, "complete", RT_BOOL, NONE, NULL, "", "", NULL, "false: an unfinished trace, its completed documents only"},
    [RF_TRACE_SHARDS] = {RO_TRACE, "shards", RT_STR, NONE, NULL, "", "", NULL, "The shards the traces hold, as a shard attribute (`0,1/3`: shards 0 and 1 of 3); empty: the whole run"},
    [RF_TRACE_SHARDS_MISSING] = {RO_TRACE, "shards_missing", RT_INT, NONE, NULL, "shards", "", NULL, "Shards of the run none of the traces holds: the numbers cover the others only"},
    [RF_TRACE_N_LAYERS] = {RO_TRACE, "n_layers", RT_INT, NONE, NULL, "layers", "", NULL, "L"},
    [RF_TRACE_N_HEADS] = {RO_TRACE, "n_heads", RT_INT, NONE, NULL, "heads", "", NULL, "H (query heads)"},
    [RF_TRACE_N_DOCS] = {RO_TRACE, "n_docs", RT_INT, NONE, NULL, "contexts", "", NULL, "Contexts recorded (a document longer than ctx is several)"},
    [RF_TRACE_DOCS] = {RO_TRACE, "docs", RT_OBJ, RO_DOC, "[n_docs]", "", "", NULL, "Which document each per-document row is, in the dataset's order"},
    [RF_TRACE_N_TOKENS] = {RO_TRACE, "n_tokens", RT_INT, NONE, NULL, "tokens", "", NULL, "T, every context's tokens"},
    [RF_TRACE_DECISIONS] = {RO_TRACE, "decisions", RT_INT, NONE, NULL, "decisions", "every (layer, token, head), local layers included", NULL, "n_tokens x n_layers x n_heads"},
    [RF_TRACE_LAYER_WINDOW] = {RO_TRACE, "layer_window", RT_INT, NONE, "[L]", "keys", "", NULL, "Each layer's native sliding window; 0: full causal (a global layer)"},
    [RF_TRACE_N_GLOBAL_LAYERS] = {RO_TRACE, "n_global_layers", RT_INT, NONE, NULL, "layers", "", NULL, "Layers without a native window: what every count over layers counts"},
    [RF_TRACE_DECISIONS_COUNTED] = {RO_TRACE, "decisions_counted", RT_INT, NONE, NULL, "decisions", GLOBAL_LAYERS, NULL, "n_tokens x n_global_layers x n_heads"},
    [RF_TRACE_LAYERS_COUNTED] = {RO_TRACE, "layers_counted", RT_STR, NONE, NULL, "", "", NULL, "What the counts count, as headings say it (`global layers only: 3 of 18; ...`)"},
    [RF_TRACE_LOCAL_LAYERS] = {RO_TRACE, "local_layers", RT_OBJ, RO_LOCAL_LAYER, "[n_local]", "", "", NULL, "The natively local layers, apart"},
    [RF_TRACE_MAX_D] = {RO_TRACE, "max_d", RT_INT, NONE, NULL, "tokens", "", NULL, "The largest possible d_eps: the largest position + 1"},
    [RF_TRACE_EPS] = {RO_TRACE, "eps", RT_NUM, NONE, "[n_eps]", "", "", NULL, "The d_eps thresholds recorded; the first drives the oracle of the tables that use one"},
    [RF_TRACE_WINDOWS] = {RO_TRACE, "windows", RT_INT, NONE, "[n_windows]", "tokens", "", NULL, "The windows recorded, ascending"},
    [RF_TRACE_SINKS] = {RO_TRACE, "sinks", RT_INT, NONE, NULL, "tokens", "", NULL, "Always-visible first keys: never out of window"},
    [RF_TRACE_CTX] = {RO_TRACE, "ctx", RT_NUM_NULL, NONE, NULL, "tokens", "", NULL, "Tokens per context; null: a trace that did not record it"},
    [RF_TRACE_SUBSETS] = {RO_TRACE, "fraction_subsets", RT_OBJ, RO_SUBSETS, NULL, "", "", NULL, "What `all` and `t_ge_w` count"},
    [RF_TRACE_ROUTERS] = {RO_TRACE, "routers", RT_OBJ, RO_ROUTER, "[n_eps (+1)]", "", "", NULL, "The oracle at each eps, then the learned router where the model has one"},
    [RF_TRACE_LONG_TAIL] = {RO_TRACE, "long_tail", RT_OBJ, RO_LONG_TAIL, "[n_eps]", "", "", NULL, "Per eps"},
    [RF_TRACE_AGREEMENT] = {RO_TRACE, "agreement", RT_OBJ, RO_AGREEMENT, "[n_eps x n_windows]", "", "", NULL, "Per eps, then window; empty without a learned router"},
    [RF_TRACE_WINDOW_ERROR] = {RO_TRACE, "window_error", RT_OBJ, RO_WERR, "[n_windows]", "", "", NULL, "Per window; empty without `--werr`"},
    [RF_TRACE_RUNS] = {RO_TRACE, "runs", RT_OBJ, RO_RUN, "[n_runs]", "", "", NULL, "The routed runs in the trace's order; empty for an observe trace"},
    [RF_TRACE_TOKENS] = {RO_TRACE, "tokens", RT_OBJ, RO_TOKENS, NULL, "", "", "aha report, aha plot without --compare; a trace with d_eps", "Which tokens need global attention"},
    [RF_TRACE_MASS] = {RO_TRACE, "mass", RT_OBJ, RO_MASS, NULL, "", "", "aha report, aha notebook, aha plot without --compare", "Where the attention mass goes"},
    [RF_TRACE_FRONTIER] = {RO_TRACE, "frontier", RT_OBJ, RO_FRONTIER, NULL, "", "", "aha report, aha plot, aha notebook", "The frontier of the routed runs"},

    [RF_SUBSETS_DEFAULT] = {RO_SUBSETS, "default", RT_STR, NONE, NULL, "", "", NULL, "`all`"},
    [RF_SUBSETS_ALL] = {RO_SUBSETS, "all", RT_STR, NONE, NULL, "", "", NULL, "every (layer, token, head) decision, prompt tokens included (the paper's metric)"},
    [RF_SUBSETS_T_GE_W] = {RO_SUBSETS, "t_ge_w", RT_STR, NONE, NULL, "", "", NULL, "decisions with t >= w only: those where the window drops keys"},

    [RF_DOC_INDEX] = {RO_DOC, "doc_index", RT_INT, NONE, NULL, "", "", NULL, "The document's number in the dataset; -1: not known"},
    [RF_DOC_SOURCE] = {RO_DOC, "source", RT_STR, NONE, NULL, "", "", NULL, "Where it came from; empty: not known"},

    [RF_LOCAL_QUANTILES] = {RO_LOCAL_LAYER, "quantiles", RT_OBJ, RO_LOCAL_QUANTILES, "[n_eps]", "", "", NULL, "Per eps"},
    [RF_LOCAL_LAYER] = {RO_LOCAL_LAYER, "layer", RT_INT, NONE, NULL, "", "", NULL, "The layer"},
    [RF_LOCAL_WINDOW] = {RO_LOCAL_LAYER, "window", RT_INT, NONE, NULL, "keys", "", NULL, "Its native window: d_eps is at most this by construction"},

    [RF_Q_MEDIAN] = {RO_QUANTILES, "median", RT_INT, NONE, NULL, "tokens", HOLDER, NULL, "q = 0.5"},
    [RF_Q_P90] = {RO_QUANTILES, "p90", RT_INT, NONE, NULL, "tokens", HOLDER, NULL, "q = 0.9"},
    [RF_Q_P99] = {RO_QUANTILES, "p99", RT_INT, NONE, NULL, "tokens", HOLDER, NULL, "q = 0.99"},
    [RF_Q_MAX] = {RO_QUANTILES, "max", RT_INT, NONE, NULL, "tokens", HOLDER, NULL, "The largest d_eps"},

    [RF_LOCALQ_EPS] = {RO_LOCAL_QUANTILES, "eps", RT_NUM, NONE, NULL, "", "", NULL, "The eps"},

    [RF_ROUTER_WINDOWS] = {RO_ROUTER, "windows", RT_OBJ, RO_ROUTER_WINDOW, "[n_windows]", "", "", NULL, "Per recorded window"},
    [RF_ROUTER_ROUTER] = {RO_ROUTER, "router", RT_STR, NONE, NULL, "", "", NULL, "`oracle` or `learned`"},
    [RF_ROUTER_TAU] = {RO_ROUTER, "tau", RT_NUM, NONE, NULL, "", "", "learned", "Its threshold"},
    [RF_ROUTER_EPS] = {RO_ROUTER, "eps", RT_NUM, NONE, NULL, "", "", "oracle", "Its eps: global at w iff d_eps > w"},

    [RF_RW_WINDOW] = {RO_ROUTER_WINDOW, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},
    [RF_RW_ALL] = {RO_ROUTER_WINDOW, "all", RT_OBJ, RO_FRAC, NULL, "", ALL, NULL, "Overall: the paper's metric"},
    [RF_RW_T_GE_W] = {RO_ROUTER_WINDOW, "t_ge_w", RT_OBJ, RO_FRAC, NULL, "", TGEW, NULL, "Overall"},
    [RF_RW_PER_LAYER] = {RO_ROUTER_WINDOW, "per_layer", RT_OBJ, RO_PAIR, "[L]", "", "each layer's (local ones too, indexed by layer)", NULL, "Per layer"},
    [RF_RW_PER_HEAD] = {RO_ROUTER_WINDOW, "per_head", RT_OBJ, RO_PAIR, "[L][H]", "", "each (layer, head)'s", NULL, "Per layer and head"},
    [RF_RW_PER_DOC] = {RO_ROUTER_WINDOW, "per_doc", RT_OBJ, RO_PAIR, "[n_docs]", "", "each context's, of the global layers", NULL, "Per document, as trace.docs"},

    [RF_PAIR_ALL] = {RO_PAIR, "all", RT_OBJ, RO_FRAC, NULL, "", "all of them", NULL, "Over all decisions"},
    [RF_PAIR_T_GE_W] = {RO_PAIR, "t_ge_w", RT_OBJ, RO_FRAC, NULL, "", "those with t >= w", NULL, "Over decisions with t >= w"},

    [RF_FRAC_GLOBAL] = {RO_FRAC, "global", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Decisions routed global"},
    [RF_FRAC_TOTAL] = {RO_FRAC, "total", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Decisions counted"},
    [RF_FRAC_FRACTION] = {RO_FRAC, "fraction", RT_NUM_NULL, NONE, NULL, "fraction", HOLDER, NULL, "global / total; null when total = 0"},

    [RF_LT_EPS] = {RO_LONG_TAIL, "eps", RT_NUM, NONE, NULL, "", "", NULL, "The eps"},
    [RF_LT_QUANTILES] = {RO_LONG_TAIL, "quantiles", RT_OBJ, RO_QUANTILES, NULL, "", ALL, NULL, "Overall"},
    [RF_LT_PER_LAYER_QUANTILES] = {RO_LONG_TAIL, "per_layer_quantiles", RT_OBJ, RO_QUANTILES, "[L]", "", "each layer's", NULL, "Per layer"},
    [RF_LT_CCDF] = {RO_LONG_TAIL, "ccdf", RT_NUM, NONE, "[max_d + 1]", "fraction", ALL, NULL, "P(d_eps > w) for w = 0..max_d"},
    [RF_LT_CCDF_PER_LAYER] = {RO_LONG_TAIL, "ccdf_per_layer", RT_NUM, NONE, "[L][max_d + 1]", "fraction", "each layer's", NULL, "The same per layer"},

    [RF_AG_EPS] = {RO_AGREEMENT, "eps", RT_NUM, NONE, NULL, "", "", NULL, "The oracle's eps"},
    [RF_AG_WINDOW] = {RO_AGREEMENT, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},
    [RF_AG_ALL] = {RO_AGREEMENT, "all", RT_OBJ, RO_CONFUSION, NULL, "", ALL, NULL, "Overall"},
    [RF_AG_T_GE_W] = {RO_AGREEMENT, "t_ge_w", RT_OBJ, RO_CONFUSION, NULL, "", TGEW, NULL, "Overall"},
    [RF_AG_PER_HEAD_T_GE_W] = {RO_AGREEMENT, "per_head_t_ge_w", RT_OBJ, RO_CONFUSION, "[L][H]", "", "each (layer, head)'s with t >= w", NULL, "Per layer and head"},

    [RF_CONF_TP] = {RO_CONFUSION, "tp", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Both global"},
    [RF_CONF_FP] = {RO_CONFUSION, "fp", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Learned global, oracle local"},
    [RF_CONF_FN] = {RO_CONFUSION, "fn", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Learned local, oracle global"},
    [RF_CONF_TN] = {RO_CONFUSION, "tn", RT_INT, NONE, NULL, "decisions", HOLDER, NULL, "Both local"},
    [RF_CONF_PRECISION] = {RO_CONFUSION, "precision", RT_NUM_NULL, NONE, NULL, "fraction", HOLDER, NULL, "tp / (tp + fp); null when 0/0"},
    [RF_CONF_RECALL] = {RO_CONFUSION, "recall", RT_NUM_NULL, NONE, NULL, "fraction", HOLDER, NULL, "tp / (tp + fn); null when 0/0"},
    [RF_CONF_F1] = {RO_CONFUSION, "f1", RT_NUM_NULL, NONE, NULL, "fraction", HOLDER, NULL, "2 tp / (2 tp + fp + fn); null when 0/0"},

    [RF_WERR_WINDOW] = {RO_WERR, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},
    [RF_WERR_MEAN] = {RO_WERR, "mean", RT_NUM_NULL, NONE, NULL, "relative error", ALL, NULL, "The mean error; null without decisions"},
    [RF_WERR_MEDIAN] = {RO_WERR, "median", RT_NUM_NULL, NONE, NULL, "relative error", ALL, NULL, "The smallest recorded value v with P(err <= v) >= 0.5"},
    [RF_WERR_P90] = {RO_WERR, "p90", RT_NUM_NULL, NONE, NULL, "relative error", ALL, NULL, "The same at 0.9"},
    [RF_WERR_P99] = {RO_WERR, "p99", RT_NUM_NULL, NONE, NULL, "relative error", ALL, NULL, "The same at 0.99"},
    [RF_WERR_MAX] = {RO_WERR, "max", RT_NUM_NULL, NONE, NULL, "relative error", ALL, NULL, "The largest error"},
    [RF_WERR_ABOVE] = {RO_WERR, "above", RT_OBJ, RO_ABOVE, "[3]", "", ALL, NULL, "At thresholds 0.01, 0.05, 0.1"},

    [RF_ABOVE_THRESHOLD] = {RO_ABOVE, "threshold", RT_NUM, NONE, NULL, "relative error", "", NULL, "global counts the decisions with an error above it"},

    [RF_RUN_NAME] = {RO_RUN, "name", RT_STR, NONE, NULL, "", "", NULL, "The run's name (`full`, `oracle_w128`, ...)"},
    [RF_RUN_POLICY] = {RO_RUN, "policy", RT_STR, NONE, NULL, "", "", NULL, "Its policy (`global`, `oracle`, `random:0.1`, ...)"},
    [RF_RUN_WINDOW] = {RO_RUN, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "Its window (0: full attention)"},
    [RF_RUN_PARAM] = {RO_RUN, "param", RT_NUM_NULL, NONE, NULL, "", "", NULL, "The grid point's number (eps, threshold, tau, P or k); null: none"},
    [RF_RUN_TOKENS_SCORED] = {RO_RUN, "tokens_scored", RT_INT, NONE, NULL, "tokens", "", NULL, "Tokens with a next-token NLL (a context's last token has none)"},
    [RF_RUN_MEAN_NLL] = {RO_RUN, "mean_nll", RT_NUM_NULL, NONE, NULL, "nats", "", NULL, "Mean next-token NLL"},
    [RF_RUN_PPL] = {RO_RUN, "ppl", RT_NUM_NULL, NONE, NULL, "", "", NULL, "Perplexity exp(mean_nll)"},
    [RF_RUN_PPL_DELTA] = {RO_RUN, "ppl_delta", RT_NUM_NULL, NONE, NULL, "", "", NULL, "ppl - the full-attention run's; null without one"},
    [RF_RUN_PPL_CHANGE] = {RO_RUN, "ppl_change", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "ppl / the full-attention run's - 1 (0.01 = +1%); null without one"},
    [RF_RUN_MEAN_KL] = {RO_RUN, "mean_kl", RT_NUM_NULL, NONE, NULL, "nats", "", NULL, "Mean KL(full || routed) per token"},
    [RF_RUN_GLOBAL_ALL] = {RO_RUN, "global_all", RT_OBJ_NULL, RO_FRAC, NULL, "", ALL, NULL, "Decisions the run routed global (full attention: all); null where the run stored no gates"},
    [RF_RUN_GLOBAL_T_GE_W] = {RO_RUN, "global_t_ge_w", RT_OBJ_NULL, RO_FRAC, NULL, "", TGEW, NULL, "The same over t >= w, w the run's window (counted from its stored gates, whether or not w is one of `windows`); null where the run stored no gates (full attention too)"},
    [RF_RUN_PER_LAYER] = {RO_RUN, "per_layer", RT_OBJ_NULL, RO_PAIR, "[L]", "", "each layer's", NULL, "The same per layer; null for a natively local layer, and for every layer where the run stored no gates"},
    [RF_RUN_FLOPS_EXECUTED] = {RO_RUN, "flops_executed", RT_NUM, NONE, NULL, "FLOPs", "", NULL, "Attention FLOPs the routed pass executed"},
    [RF_RUN_FLOPS_FULL] = {RO_RUN, "flops_full", RT_NUM, NONE, NULL, "FLOPs", "", NULL, "Attention FLOPs of full attention over the same tokens"},
    [RF_RUN_FLOPS_FRACTION] = {RO_RUN, "flops_fraction", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "flops_executed / flops_full"},
    [RF_RUN_FLOPS_INCL_ORACLE] = {RO_RUN, "flops_incl_oracle_pass", RT_NUM_NULL, NONE, NULL, "FLOPs", "", NULL, "runs whose policy decides from the full-attention pass (the trace's run attribute full_pass: oracle, werr): flops_executed + that pass; null otherwise"},
    [RF_RUN_FLOPS_FRACTION_INCL_ORACLE] = {RO_RUN, "flops_fraction_incl_oracle_pass", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "The same / flops_full: above 1, the oracle bounds what a router could skip"},

    [RF_TOK_EPS] = {RO_TOKENS, "eps", RT_NUM, NONE, NULL, "", "", NULL, "The oracle's eps (the first)"},
    [RF_TOK_MIN_COUNT] = {RO_TOKENS, "min_count", RT_INT, NONE, NULL, "tokens", "", NULL, "`--min-count`: a top token has at least this many occurrences at t >= w"},
    [RF_TOK_TOP] = {RO_TOKENS, "top", RT_INT, NONE, NULL, "tokens", "", NULL, "`--top`: top tokens listed per layer group and window"},
    [RF_TOK_TOP_SUBSET] = {RO_TOKENS, "top_subset", RT_STR, NONE, NULL, "", "", NULL, "`t_ge_w`: what the top tokens' rates count"},
    [RF_TOK_GROUPS] = {RO_TOKENS, "groups", RT_OBJ, RO_GROUP, "[G + 1]", "", "", NULL, "The layer groups, all layers last"},
    [RF_TOK_POSITION_BUCKETS] = {RO_TOKENS, "position_buckets", RT_INT, NONE, "[n_buckets][2]", "tokens", "", NULL, "[lo, hi) of each log2 position bucket in the context"},
    [RF_TOK_CLASSES] = {RO_TOKENS, "classes", RT_STR, NONE, "[6]", "", "", NULL, "The token classes (docs/reports.md)"},
    [RF_TOK_WINDOWS] = {RO_TOKENS, "windows", RT_OBJ, RO_TOKEN_WINDOW, "[n_windows]", "", "", NULL, "Per window"},

    [RF_GROUP_NAME] = {RO_GROUP, "name", RT_STR, NONE, NULL, "", "", NULL, "`layers 0-9`, `all layers`, `all global layers (3 of 18)`"},
    [RF_GROUP_FIRST_LAYER] = {RO_GROUP, "first_layer", RT_INT, NONE, NULL, "", "", NULL, "Its first layer"},
    [RF_GROUP_LAST_LAYER] = {RO_GROUP, "last_layer", RT_INT, NONE, NULL, "", "", NULL, "Its last layer"},
    [RF_GROUP_LAYERS_COUNTED] = {RO_GROUP, "layers_counted", RT_INT, NONE, NULL, "layers", "", NULL, "Its global layers: what its totals count"},

    [RF_TW_WINDOW] = {RO_TOKEN_WINDOW, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},
    [RF_TW_TOP] = {RO_TOKEN_WINDOW, "top", RT_OBJ, RO_TOKEN_TOP, "[G + 1][<= top]", "", TGEW, NULL, "Per group: the top tokens by global rate, ties by more decisions, then id"},
    [RF_TW_POSITION] = {RO_TOKEN_WINDOW, "position", RT_OBJ, RO_KEYED, "[G + 1]", "", "", NULL, "Per group: rates by position bucket"},
    [RF_TW_CLASS] = {RO_TOKEN_WINDOW, "class", RT_OBJ, RO_KEYED, "[G + 1]", "", "", NULL, "Per group: rates by token class"},

    [RF_TOP_ID] = {RO_TOKEN_TOP, "id", RT_INT, NONE, NULL, "", "", NULL, "The token id"},
    [RF_TOP_TEXT] = {RO_TOKEN_TOP, "text", RT_STR, NONE, NULL, "", "", NULL, "Its first piece seen"},
    [RF_TOP_OCCURRENCES] = {RO_TOKEN_TOP, "occurrences", RT_INT, NONE, NULL, "tokens", TGEW, NULL, "Its occurrences at t >= w"},

    [RF_KEYED_ALL] = {RO_KEYED, "all", RT_OBJ, RO_KEYED_FRAC, "[n_keys]", "", ALL, NULL, "Per key"},
    [RF_KEYED_T_GE_W] = {RO_KEYED, "t_ge_w", RT_OBJ, RO_KEYED_FRAC, "[n_keys]", "", TGEW, NULL, "Per key"},

    [RF_KF_OCCURRENCES] = {RO_KEYED_FRAC, "occurrences", RT_INT, NONE, NULL, "tokens", HOLDER, NULL, "Tokens counted"},

    [RF_MASS_RECORDED] = {RO_MASS, "recorded", RT_BOOL, NONE, NULL, "", "", NULL, "The traces hold mass_far and mass_sinks; false: nothing else"},
    [RF_MASS_EPS] = {RO_MASS, "eps", RT_NUM, NONE, NULL, "", "", "recorded", "The oracle's eps (the first)"},
    [RF_MASS_SINKS] = {RO_MASS, "sinks", RT_INT, NONE, NULL, "tokens", "", "recorded", "S: the sinks are keys 0..S-1"},
    [RF_MASS_SUBSET] = {RO_MASS, "subset", RT_STR, NONE, NULL, "", "", "recorded", "What the splits count"},
    [RF_MASS_GLOBAL] = {RO_MASS, "global", RT_STR, NONE, NULL, "", "", "recorded", "What their `global` counts"},
    [RF_MASS_GROUPS] = {RO_MASS, "groups", RT_OBJ, RO_GROUP, "[G + 1]", "", "", "recorded", "The layer groups, all layers last"},
    [RF_MASS_WINDOWS] = {RO_MASS, "windows", RT_OBJ, RO_MASS_WINDOW, "[n_windows]", "", "", "recorded", "Per window"},

    [RF_MW_GROUPS] = {RO_MASS_WINDOW, "groups", RT_OBJ, RO_MASS_GROUP, "[G + 1]", "", "", NULL, "Per layer group, as mass.groups"},
    [RF_MW_WINDOW] = {RO_MASS_WINDOW, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},

    [RF_SPLIT_DECISIONS] = {RO_MASS_SPLIT, "decisions", RT_INT, NONE, NULL, "decisions", "decisions with t >= w + sinks (window and sinks do not overlap)", NULL, "Decisions averaged over"},
    [RF_SPLIT_SINKS] = {RO_MASS_SPLIT, "sinks", RT_NUM_NULL, NONE, NULL, "mass", "the same", NULL, "Mean mass on keys 0..S-1"},
    [RF_SPLIT_WINDOW] = {RO_MASS_SPLIT, "window", RT_NUM_NULL, NONE, NULL, "mass", "the same", NULL, "Mean mass on the last w keys: 1 - sinks - far"},
    [RF_SPLIT_FAR] = {RO_MASS_SPLIT, "far", RT_NUM_NULL, NONE, NULL, "mass", "the same", NULL, "Mean mass on keys S..t-w: what d_eps thresholds"},

    [RF_MG_GLOBAL] = {RO_MASS_GROUP, "global", RT_OBJ, RO_MASS_GLOBAL, NULL, "", "those of them with d_eps > w", NULL, "The oracle's global decisions"},

    [RF_MGL_FRACTION] = {RO_MASS_GLOBAL, "fraction", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "Its decisions / the group's: null without decisions"},

    [RF_FR_DELTA] = {RO_FRONTIER, "delta", RT_NUM, NONE, NULL, "fraction", "", NULL, "`--delta`: the perplexity change allowed (0.01 = +1%)"},
    [RF_FR_RULE] = {RO_FRONTIER, "rule", RT_STR, NONE, NULL, "", "", NULL, "How the smallest fraction is found"},
    [RF_FR_LINES] = {RO_FRONTIER, "lines", RT_OBJ, RO_LINE, "[n_lines]", "", "", NULL, "One per (window, policy family) of the routed runs, in the runs' order"},

    [RF_LINE_WINDOW] = {RO_LINE, "window", RT_INT, NONE, NULL, "tokens", "", NULL, "w"},
    [RF_LINE_POLICY] = {RO_LINE, "policy", RT_STR, NONE, NULL, "", "", NULL, "The policy family (`random` of `random:0.1`)"},
    [RF_LINE_POINTS] = {RO_LINE, "points", RT_OBJ, RO_POINT, "[n_points]", "", "", NULL, "Its runs by fraction global over all decisions"},
    [RF_LINE_SMALLEST_ALL] = {RO_LINE, "smallest_all", RT_OBJ, RO_SMALLEST, NULL, "", ALL, NULL, "By fraction global over all decisions"},
    [RF_LINE_SMALLEST_T_GE_W] = {RO_LINE, "smallest_t_ge_w", RT_OBJ, RO_SMALLEST, NULL, "", TGEW, NULL, "By fraction global over t >= w"},

    [RF_POINT_RUN] = {RO_POINT, "run", RT_STR, NONE, NULL, "", "", NULL, "The run's name"},
    [RF_POINT_PARAM] = {RO_POINT, "param", RT_NUM_NULL, NONE, NULL, "", "", NULL, "Its grid number; null: none"},
    [RF_POINT_FRACTION_ALL] = {RO_POINT, "fraction_all", RT_NUM_NULL, NONE, NULL, "fraction", ALL, NULL, "Fraction routed global"},
    [RF_POINT_FRACTION_T_GE_W] = {RO_POINT, "fraction_t_ge_w", RT_NUM_NULL, NONE, NULL, "fraction", TGEW, NULL, "Fraction routed global"},
    [RF_POINT_PPL_CHANGE] = {RO_POINT, "ppl_change", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "Perplexity change against full attention"},
    [RF_POINT_MEAN_KL] = {RO_POINT, "mean_kl", RT_NUM_NULL, NONE, NULL, "nats", "", NULL, "Mean KL(full || routed)"},
    [RF_POINT_FLOPS_FRACTION] = {RO_POINT, "flops_fraction", RT_NUM_NULL, NONE, NULL, "fraction", "", NULL, "Attention FLOPs executed / full"},

    [RF_SM_FROM] = {RO_SMALLEST, "from", RT_STR, NONE, NULL, "", "", "interpolated", "The run above delta it interpolates from"},
    [RF_SM_FRACTION] = {RO_SMALLEST, "fraction", RT_NUM_NULL, NONE, NULL, "fraction", "the line's subset", NULL, "null: not reached within the grid"},
    [RF_SM_HOW] = {RO_SMALLEST, "how", RT_STR, NONE, NULL, "", "", NULL, "`interpolated`, `at a grid point` or `not reached within the grid`"},
    [RF_SM_TO] = {RO_SMALLEST, "to", RT_STR, NONE, NULL, "", "", "reached", "The first run within delta"},
};

int report_obj_fields(report_obj k, report_field_id *out) {
    int n = report_objs[k].base != NONE ? report_obj_fields(report_objs[k].base, out) : 0;
    for (int f = 0; f < RF_COUNT; f++)
        if (report_fields[f].obj == k) out[n++] = (report_field_id)f;
    return n;
}

// ---- building ----

void rep_add(cJSON *o, report_field_id f, cJSON *v) { cJSON_AddItemToObject(o, report_fields[f].key, v); }

void rep_add_num(cJSON *o, report_field_id f, double x) { rep_add(o, f, isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull()); }

void rep_add_str(cJSON *o, report_field_id f, const char *s) { rep_add(o, f, cJSON_CreateString(s)); }

void rep_add_bool(cJSON *o, report_field_id f, int b) { rep_add(o, f, cJSON_CreateBool(b)); }

cJSON *rep_add_array(cJSON *o, report_field_id f) { return cJSON_AddArrayToObject(o, report_fields[f].key); }

cJSON *rep_add_object(cJSON *o, report_field_id f) { return cJSON_AddObjectToObject(o, report_fields[f].key); }

cJSON *rep_frac(int64_t global, int64_t total) {
    cJSON *o = cJSON_CreateObject();
    rep_add_num(o, RF_FRAC_GLOBAL, (double)global);
    rep_add_num(o, RF_FRAC_TOTAL, (double)total);
    rep_add_num(o, RF_FRAC_FRACTION, total ? (double)global / (double)total : NAN);
    return o;
}

// ---- types ----

static const char *type_name(report_type t) {
    static const char *names[] = {[RT_INT] = "integer", [RT_NUM] = "number", [RT_NUM_NULL] = "number or null",
                                  [RT_STR] = "string", [RT_BOOL] = "true or false", [RT_OBJ] = "object",
                                  [RT_OBJ_NULL] = "object or null"};
    return names[t];
}

static const char *json_name(const cJSON *v) {
    return cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "a boolean"
         : cJSON_IsNull(v) ? "null" : cJSON_IsArray(v) ? "an array" : cJSON_IsObject(v) ? "an object" : "raw text";
}

// A scalar of type t (null where t allows it).
static int scalar_is(const cJSON *v, report_type t) {
    switch (t) {
    case RT_INT: return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && isfinite(v->valuedouble);
    case RT_NUM: return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    case RT_NUM_NULL: return cJSON_IsNull(v) || (cJSON_IsNumber(v) && isfinite(v->valuedouble));
    case RT_STR: return cJSON_IsString(v) && v->valuestring;
    case RT_BOOL: return cJSON_IsBool(v);
    case RT_OBJ: return cJSON_IsObject(v);
    case RT_OBJ_NULL: return cJSON_IsObject(v) || cJSON_IsNull(v);
    }
    return 0;
}

static int depth(const report_field *r) {
    int n = 0;
    for (const char *p = r->shape; p && *p; p++) n += *p == '[';
    return n;
}

// ---- the check ----

typedef struct {
    char path[512];           // where the walk is: "traces[0].runs[2]"
} walk;

static int check_obj(walk *w, const cJSON *o, report_obj k);

static int fail(const walk *w, const char *what) {
    aha_err("report: %s: %s", w->path, what);
    return -1;
}

// Value v of row r at nesting level d (0: the innermost value).
static int check_value(walk *w, const cJSON *v, const report_field *r, int d) {
    char what[160];
    if (d > 0) {
        if (!cJSON_IsArray(v)) {
            snprintf(what, sizeof what, "%s where the table says an array", json_name(v));
            return fail(w, what);
        }
        size_t n = strlen(w->path);
        int i = 0;
        for (const cJSON *x = v->child; x; x = x->next, i++) {
            snprintf(w->path + n, sizeof w->path - n, "[%d]", i);
            if (check_value(w, x, r, d - 1) != 0) return -1;
        }
        w->path[n] = '\0';
        return 0;
    }
    if (!scalar_is(v, r->type)) {
        snprintf(what, sizeof what, "%s where the table says %s", json_name(v), type_name(r->type));
        return fail(w, what);
    }
    return (r->type == RT_OBJ || r->type == RT_OBJ_NULL) && cJSON_IsObject(v) ? check_obj(w, v, r->of) : 0;
}

static int check_obj(walk *w, const cJSON *o, report_obj k) {
    report_field_id fs[RF_COUNT];
    int n = report_obj_fields(k, fs), next = 0; // next: where in fs the next member may be
    size_t len = strlen(w->path);
    for (const cJSON *v = o->child; v; v = v->next) {
        int i = 0;
        while (i < n && strcmp(report_fields[fs[i]].key, v->string ? v->string : "")) i++;
        snprintf(w->path + len, sizeof w->path - len, "%s%s", len ? "." : "", v->string ? v->string : "?");
        if (i == n) return fail(w, "not a field of the report table (analyze/report_schema.c)");
        if (i < next) return fail(w, "out of the table's order");
        next = i + 1;
        if (check_value(w, v, &report_fields[fs[i]], depth(&report_fields[fs[i]])) != 0) return -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(w->path + len, sizeof w->path - len, "%s%s", len ? "." : "", report_fields[fs[i]].key);
        if (!report_fields[fs[i]].when && !cJSON_GetObjectItemCaseSensitive(o, report_fields[fs[i]].key))
            return fail(w, "missing");
    }
    w->path[len] = '\0';
    return 0;
}

int aha_report_check(const cJSON *rep) {
    walk w = {""};
    if (!cJSON_IsObject(rep)) return fail(&w, "not an object");
    return check_obj(&w, rep, RO_REPORT);
}

// ---- reading ----

static _Thread_local int read_failed; // a read failed since rep_read_reset

int rep_read_failed(void) { return read_failed; }

void rep_read_reset(void) { read_failed = 0; }

static const cJSON *read_fail(report_field_id f, const cJSON *v) {
    const report_field *r = &report_fields[f];
    if (!read_failed++) {
        if (v) aha_err("report: %s.%s: %s where the table says %s%s", report_objs[r->obj].name, r->key, json_name(v),
                       r->shape ? "an array of " : "", type_name(r->type));
        else aha_err("report: %s.%s: missing", report_objs[r->obj].name, r->key);
    }
    return NULL;
}

const cJSON *rep_get(const cJSON *o, report_field_id f) {
    const report_field *r = &report_fields[f];
    if (!o) return NULL; // below an absent or null member: the read that found that said so
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, r->key);
    if (!v) return r->when ? NULL : read_fail(f, NULL);
    if (r->shape ? !cJSON_IsArray(v) : !scalar_is(v, r->type)) return read_fail(f, v);
    return r->type == RT_OBJ_NULL && cJSON_IsNull(v) ? NULL : v;
}

cJSON *rep_get_mut(cJSON *o, report_field_id f) { return (cJSON *)rep_get(o, f); }

double rep_num(const cJSON *o, report_field_id f) {
    const cJSON *v = rep_get(o, f);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int rep_int(const cJSON *o, report_field_id f) {
    double x = rep_num(o, f);
    return isfinite(x) ? (int)x : 0;
}

const char *rep_str(const cJSON *o, report_field_id f) {
    const cJSON *v = rep_get(o, f);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

int rep_true(const cJSON *o, report_field_id f) { return cJSON_IsTrue(rep_get(o, f)); }

int rep_has(const cJSON *o, report_field_id f) {
    const cJSON *v = rep_get(o, f);
    return v && !cJSON_IsNull(v);
}

int rep_null(const cJSON *o, report_field_id f) {
    const report_field *r = &report_fields[f];
    if (o && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, r->key)) && !r->shape &&
        (r->type == RT_NUM_NULL || r->type == RT_OBJ_NULL))
        return 1;
    rep_get(o, f); // a missing or mistyped field is a failed read
    return 0;
}

int rep_len(const cJSON *o, report_field_id f) { return cJSON_GetArraySize(rep_get(o, f)); }

const cJSON *rep_at(const cJSON *o, report_field_id f, int i) { return cJSON_GetArrayItem(rep_get(o, f), i); }

double rep_num_at(const cJSON *a, int i) {
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *rep_str_at(const cJSON *a, int i) {
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}
