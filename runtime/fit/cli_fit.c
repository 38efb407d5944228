// aha fit: flags to aha_fit_opts.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "fit.h"
#include "flags.h"
#include "publish.h"
#include "router_file.h"
#include "run.h"

int aha_cmd_fit(int argc, char **argv) {
    aha_fit_opts o = {.s = AHA_RUN_SETTINGS_DEFAULT, .label = AHA_LABEL_WERR, .weight = AHA_WEIGHT_COST,
                      .regress = AHA_REGRESS_LABEL, .window = 128, .threshold = 0.1f, .eps = 0.01f, .target = -1,
                      .budget = -1, .holdout = 0.25f, .ridge = 1e-3f};
    int threads = 0, force = 0;
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &o.out, "output router file (safetensors); required", NULL},
        {"--export", FLAG_STR, &o.export_dir, "also write DIR: an AHA checkpoint (HF folder, q_proj rows fused) of a Hugging Face folder model", NULL},
        {"--window", FLAG_INT, &o.window, "W: the local window the router decides against", ">= 1"},
        AHA_FLAG_ENUM("--label", o.label, aha_fit_labels, "needs global iff: werr (window-output error > --threshold), deps (d_eps > W), learned (the checkpoint's own AHA router)"),
        {"--threshold", FLAG_FLOAT, &o.threshold, "werr label: relative window-output error above which a decision needs global", "> 0"},
        {"--eps", FLAG_FLOAT, &o.eps, "deps label: out-of-window mass threshold of d_eps", "[0, 1]"},
        AHA_FLAG_ENUM("--weight", o.weight, aha_fit_weights, "cost: a missed global decision weighs its error / threshold (at most 10), others 1; none: all 1"),
        {"--target-global", FLAG_FLOAT, &o.target, "threshold the logits so this fraction of the fitting decisions is global; < 0: logit > 0", "<= 1"},
        {"--budget", FLAG_FLOAT, &o.budget, "werr: the sparsest threshold whose local decisions leave a mean window error <= this over the fitting decisions; < 0: off", NULL},
        AHA_FLAG_ENUM("--regress", o.regress, aha_fit_regressions, "what least squares fits: label (+1 global, -1 local), log-error (werr: ln(error / threshold), clipped to +-4; ranks decisions by their error)"),
        {"--bias", FLAG_BOOL, &o.bias, "fit an intercept per head too (router.<l>.bias in the file; cannot fuse into an AHA checkpoint: no --export)", NULL},
        {"--per-head", FLAG_BOOL, &o.per_head, "with --target-global F: one threshold per head, each global on fraction F of its fitting decisions (a per-head bias; no --export)", NULL},
        {"--layer-cuts", FLAG_BOOL, &o.layer_cuts, "with --target-global F (werr labels): one threshold per layer, the least window error left local at fraction F in all (a per-layer bias; no --export)", NULL},
        {"--ridge", FLAG_FLOAT, &o.ridge, "ridge lambda, relative to the mean diagonal of X^T W X", ">= 0"},
        {"--irls", FLAG_INT, &o.irls, "then this many Newton (IRLS) steps on the weighted logistic loss, a pass over the training data each", ">= 0"},
        {"--exposed", FLAG_INT, &o.exposed, "then this many rounds, each refitting every layer on the forward pass routed by the last round's routers at its threshold (least squares; labels under the routed upstream)", ">= 0"},
        AHA_CONTEXT_FLAGS(o.s),
        AHA_DATA_FLAGS(o.s),
        {"--holdout", FLAG_FLOAT, &o.holdout, "fraction of documents held out (by a seeded hash of the ordinal)", "[0, 1)"},
        {"--seed", FLAG_INT, &o.s.seed, "seed of the document split", NULL},
        AHA_WEIGHTS_FLAG(o.s.weights),
        AHA_THREADS_FLAG(threads),
        {"--quiet", FLAG_BOOL, &o.quiet, "no progress bar", NULL},
        {"--force", FLAG_BOOL, &force, "overwrite an existing router file (and --export's files)", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE("usage: aha fit MODEL DATA -o router.safetensors   (then: aha record|sweep MODEL DATA --router "
              "router.safetensors --route learned)",
              flags, pos, 2);
    o.s.model = pos[0], o.s.data = pos[1];
    if (!o.out) {
        aha_err("-o ROUTER is required");
        return aha_cli_fail();
    }
    if ((o.regress == AHA_REGRESS_LOG_ERROR || o.budget >= 0) && o.label != AHA_LABEL_WERR) {
        aha_err("--regress log-error and --budget need --label werr (the window errors)");
        return aha_cli_fail();
    }
    if (o.per_head && !(o.target >= 0)) {
        aha_err("--per-head sets one threshold per head at --target-global F; give F");
        return aha_cli_fail();
    }
    if (o.layer_cuts && (!(o.target >= 0) || o.label != AHA_LABEL_WERR || o.per_head)) {
        aha_err("--layer-cuts sets one threshold per layer at --target-global F from the window errors: give F and "
                "--label werr, without --per-head");
        return aha_cli_fail();
    }
    if (o.export_dir && (o.bias || o.per_head || o.layer_cuts)) {
        aha_err("--export: a router with a bias (--bias, --per-head, --layer-cuts) cannot fuse into AHA's q_proj rows, which have none");
        return aha_cli_fail();
    }
    if (o.target >= 0 && o.budget >= 0) {
        aha_err("--target-global and --budget exclude each other (both set the threshold)");
        return aha_cli_fail();
    }
    if (o.exposed > 0 && (o.irls > 0 || o.label == AHA_LABEL_LEARNED)) {
        aha_err("--exposed refits by least squares on labels the routed pass gives: not with --irls or --label learned "
                "(the routers it fuses replace the checkpoint's)");
        return aha_cli_fail();
    }
    if (o.irls > 0 && o.regress == AHA_REGRESS_LOG_ERROR) {
        aha_err("--irls takes Newton steps on the logistic loss of the labels; --regress log-error fits the errors");
        return aha_cli_fail();
    }
    const aha_input in[] = {{"the model", o.s.model}, {"the dataset", o.s.data}};
    // each written beside its place and moved there whole once the fit is done; taken now, so that a
    // second fit to one file fails at once, naming this one
    aha_pub out = {.fd = -1}, ckpt = {.fd = -1};
    if (aha_pub_file(&out, "-o", o.out, force, in, 2) != 0 ||
        (o.export_dir && aha_pub_dir(&ckpt, "--export", o.export_dir, force, aha_router_export_files,
                                     AHA_EXPORT_N_FILES, in, 2) != 0)) {
        aha_pub_abort(&out);
        return aha_cli_fail();
    }
    o.out_tmp = out.tmp, o.export_tmp = o.export_dir ? ckpt.tmp : NULL;
    char cmd[4096] = "";
    for (int i = 0; i < argc; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
    o.command_line = cmd;
    aha_set_threads(threads);
    int rc =
        aha_fit_run(&o) == 0 && (!o.export_dir || aha_pub_commit(&ckpt) == 0) && aha_pub_commit(&out) == 0 ? 0 : -1;
    aha_pub_abort(&ckpt);
    aha_pub_abort(&out);
    return rc == 0 ? 0 : aha_cli_fail();
}
