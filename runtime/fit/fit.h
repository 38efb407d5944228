// aha fit: AHA routers fitted to a frozen model from its own full attention
// (self-distillation). Per layer and head, a linear probe on the attention
// input predicts "needs global" at one window; the fit is a weighted ridge
// least-squares solve over the whole dataset, streamed (docs/fitting.md).
#pragma once
#include <stdint.h>

#include "settings.h"

// What decides "needs global" (--label), what a missed global decision
// costs (--weight), what least squares fits (--regress).
typedef enum { AHA_LABEL_WERR, AHA_LABEL_DEPS, AHA_LABEL_LEARNED } aha_fit_label;
typedef enum { AHA_WEIGHT_COST, AHA_WEIGHT_NONE } aha_fit_weight;
typedef enum { AHA_REGRESS_LABEL, AHA_REGRESS_LOG_ERROR } aha_fit_regress;
// Their names: "werr", "deps", "learned"; "cost", "none"; "label", "log-error"
// (the flags' values and the router file's metadata).
extern const aha_enum aha_fit_labels, aha_fit_weights, aha_fit_regressions;

typedef struct {
    aha_run_settings s;               // what decides the numbers, shared with aha record
    const char *out;                  // -o: the router file
    const char *export_dir;           // NULL, or an AHA checkpoint to write (HF folder models)
    const char *out_tmp, *export_tmp; // where they are written (their staging names, which the
                                      // command publishes as out, export_dir: common/publish.h);
                                      // NULL: in place
    aha_fit_label label;              // global iff: werr > threshold | d_eps > W | the checkpoint's router
    aha_fit_weight weight;            // cost: a miss weighs its error / threshold | none: all 1
    int window;                       // W: labels and the router's local branch
    float threshold;                  // werr label: global iff window error > threshold
    float eps;                        // deps label: global iff d_eps > W
    float target;                     // fraction global on the fitting data; < 0: threshold 0
    float budget;                     // werr: mean window error left local on the fitting data; < 0: off
    aha_fit_regress regress;          // label (+-1) | log-error (werr: ln(error / threshold))
    int bias;                         // fit an intercept per head (router.<l>.bias)
    int per_head;                     // with target: one cut per head, folded into the bias
    int layer_cuts;                   // with target (werr): one cut per layer, the least window error
                                      // left local at the total, folded into the bias
    float holdout;                    // fraction of documents held out
    float ridge;                      // lambda, relative to the Gram matrix's mean diagonal
    int irls;                         // Newton (IRLS) steps on the logistic loss after least squares
    int exposed;                      // rounds refitted under the upstream routed by the last round's routers
    int quiet;                        // no progress line
    const char *command_line;         // recorded in the router file
} aha_fit_opts;

int aha_fit_run(const aha_fit_opts *o);
