// aha fit: AHA routers fitted to a frozen model from its own full attention
// (self-distillation). Per layer and head, a linear probe on the attention
// input predicts "needs global" at one window; the fit is a weighted ridge
// least-squares solve over the whole dataset, streamed (docs/fitting.md).
#pragma once
#include <stdint.h>

typedef struct {
    const char *model, *data, *out;   // paths
    const char *export_dir;           // NULL, or an AHA checkpoint to write (HF folder models)
    const char *label;                // "werr" | "deps" | "learned"
    const char *weight;               // "cost" | "none"
    const char *format, *text_field;  // dataset format and JSONL field
    int window;                       // W: labels and the router's local branch
    double threshold;                 // werr label: global iff window error > threshold
    double eps;                       // deps label: global iff d_eps > W
    double target;                    // fraction global on the fitting data; < 0: threshold 0
    double budget;                    // werr: mean window error left local on the fitting data; < 0: off
    const char *regress;              // "label" (+-1) | "log-error" (werr: ln(error / threshold))
    int bias;                         // fit an intercept per head (router.<l>.bias)
    int per_head;                     // with target: one cut per head, folded into the bias
    int sinks;                        // always-visible first tokens (labels)
    int ctx, batch;                   // tokens per context (0: the model's, at most 2048), per call
    int64_t max_tokens, max_docs;     // 0 = all
    double holdout;                   // fraction of documents held out
    double ridge;                     // lambda, relative to the Gram matrix's mean diagonal
    int irls;                         // Newton (IRLS) steps on the logistic loss after least squares
    uint64_t seed;                    // the document split
    int quiet;
    const char *command_line;
    const char *weights;              // --weights: "stored" | "f32" (NULL = stored)
} aha_fit_opts;

int aha_fit_run(const aha_fit_opts *o);
