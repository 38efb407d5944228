// aha fit: flags to aha_fit_opts.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "fit.h"
#include "flags.h"
#include "outpath.h"
#include "router_file.h"
#include "run.h"

int aha_cmd_fit(int argc, char **argv) {
    const char *out = NULL, *export_dir = NULL, *label = "werr", *weight = "cost", *regress = "label", *format = "auto", *text_field = NULL;
    const char *weights = "stored";
    int window = 128, sinks = 0, ctx = 0, batch = 256, max_tokens = 0, max_docs = 0, seed = 0, threads = 0;
    int quiet = 0, irls = 0, bias = 0, per_head = 0, force = 0;
    float threshold = 0.1f, eps = 0.01f, target = -1, budget = -1, holdout = 0.25f, ridge = 1e-3f;
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &out, "output router file (safetensors); required", NULL},
        {"--export", FLAG_STR, &export_dir, "also write DIR: an AHA checkpoint (HF folder, q_proj rows fused) of a Hugging Face folder model", NULL},
        {"--window", FLAG_INT, &window, "W: the local window the router decides against", ">= 1"},
        {"--label", FLAG_STR, &label, "needs global iff: werr (window-output error > --threshold) | deps (d_eps > W) | learned (the checkpoint's own AHA router)", NULL},
        {"--threshold", FLAG_FLOAT, &threshold, "werr label: relative window-output error above which a decision needs global", "> 0"},
        {"--eps", FLAG_FLOAT, &eps, "deps label: out-of-window mass threshold of d_eps", "[0, 1]"},
        {"--weight", FLAG_STR, &weight, "cost: a missed global decision weighs its error / threshold (at most 10), others 1 | none: all 1", NULL},
        {"--target-global", FLAG_FLOAT, &target, "threshold the logits so this fraction of the fitting decisions is global; < 0: logit > 0", "<= 1"},
        {"--budget", FLAG_FLOAT, &budget, "werr: the sparsest threshold whose local decisions leave a mean window error <= this over the fitting decisions; < 0: off", NULL},
        {"--regress", FLAG_STR, &regress, "what least squares fits: label (+1 global, -1 local) | log-error (werr: ln(error / threshold), clipped to +-4; ranks decisions by their error)", NULL},
        {"--bias", FLAG_BOOL, &bias, "fit an intercept per head too (router.<l>.bias in the file; cannot fuse into an AHA checkpoint: no --export)", NULL},
        {"--per-head", FLAG_BOOL, &per_head, "with --target-global F: one threshold per head, each global on fraction F of its fitting decisions (a per-head bias; no --export)", NULL},
        {"--ridge", FLAG_FLOAT, &ridge, "ridge lambda, relative to the mean diagonal of X^T W X", ">= 0"},
        {"--irls", FLAG_INT, &irls, "then this many Newton (IRLS) steps on the weighted logistic loss, a pass over the training data each", ">= 0"},
        {"--sinks", FLAG_INT, &sinks, "always-visible first tokens (labels)", ">= 0"},
        {"--ctx", FLAG_INT, &ctx, "tokens per context, longer documents are split; 0 = the model's trained context, at most 2048", ">= 0"},
        {"--batch", FLAG_INT, &batch, "tokens per forward call", ">= 1"},
        {"--max-docs", FLAG_INT, &max_docs, "documents to read; 0 = all", ">= 0"},
        {"--max-tokens", FLAG_INT, &max_tokens, "tokens to read (training and held out); 0 = all", ">= 0"},
        {"--holdout", FLAG_FLOAT, &holdout, "fraction of documents held out (by a seeded hash of the ordinal)", "[0, 1)"},
        {"--seed", FLAG_INT, &seed, "seed of the document split", NULL},
        {"--format", FLAG_STR, &format, "dataset format: auto text jsonl gsm8k mbpp hellaswag mmlu csqa multinews tokens", NULL},
        {"--text-field", FLAG_STR, &text_field, "JSONL field with the text (default text)", NULL},
        AHA_WEIGHTS_FLAG(weights),
        {"--threads", FLAG_INT, &threads, "threads; 0 = all cores", ">= 0"},
        {"--quiet", FLAG_BOOL, &quiet, "no progress bar", NULL},
        {"--force", FLAG_BOOL, &force, "overwrite an existing router file (and --export's files)", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE("usage: aha fit MODEL DATA -o router.safetensors   (then: aha record|sweep MODEL DATA --router "
              "router.safetensors --route learned)",
              flags, pos, 2);
    if (!out) {
        aha_err("-o ROUTER is required");
        return aha_cli_fail();
    }
    if (strcmp(label, "werr") && strcmp(label, "deps") && strcmp(label, "learned")) {
        aha_err("--label: '%s' is not werr, deps or learned", label);
        return aha_cli_fail();
    }
    if (strcmp(weight, "cost") && strcmp(weight, "none")) {
        aha_err("--weight: '%s' is not cost or none", weight);
        return aha_cli_fail();
    }
    if (strcmp(regress, "label") && strcmp(regress, "log-error")) {
        aha_err("--regress: '%s' is not label or log-error", regress);
        return aha_cli_fail();
    }
    if ((!strcmp(regress, "log-error") || budget >= 0) && strcmp(label, "werr")) {
        aha_err("--regress log-error and --budget need --label werr (the window errors)");
        return aha_cli_fail();
    }
    if (per_head && !(target >= 0)) {
        aha_err("--per-head sets one threshold per head at --target-global F; give F");
        return aha_cli_fail();
    }
    if (export_dir && (bias || per_head)) {
        aha_err("--export: a router with a bias (--bias, --per-head) cannot fuse into AHA's q_proj rows, which have none");
        return aha_cli_fail();
    }
    if (target >= 0 && budget >= 0) {
        aha_err("--target-global and --budget exclude each other (both set the threshold)");
        return aha_cli_fail();
    }
    if (irls > 0 && !strcmp(regress, "log-error")) {
        aha_err("--irls takes Newton steps on the logistic loss of the labels; --regress log-error fits the errors");
        return aha_cli_fail();
    }
    const aha_input in[] = {{"the model", pos[0]}, {"the dataset", pos[1]}};
    if (aha_out_file("-o", out, force, in, 2) != 0 ||
        (export_dir && aha_out_dir("--export", export_dir, aha_router_export_files, AHA_EXPORT_N_FILES, force, in, 2) != 0))
        return aha_cli_fail();
    aha_fit_opts o = {pos[0], pos[1], out, export_dir, label, weight, format, text_field, window, threshold, eps,
                      target, budget, regress, bias, per_head, sinks, ctx, batch, max_tokens, max_docs, holdout, ridge, irls, (uint64_t)seed, quiet,
                      NULL, weights};
    char cmd[4096] = "";
    for (int i = 0; i < argc; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
    o.command_line = cmd;
    aha_set_threads(threads);
    return aha_fit_run(&o) == 0 ? 0 : aha_cli_fail();
}
