// aha plot: the figures of a report. Each is NAME.dat (the plotted numbers,
// from the JSON report), NAME.gp (the gnuplot script; `gnuplot NAME.gp` in the
// directory re-renders it) and NAME.png|svg|pdf (plots/figure.h).
//   sparsity  fraction of full attention vs window (log2 x), per router
//   ccdf      P(d_eps > w), log-log, per eps and per layer group
//   heatmap   layer x head global rate at one window
//   raster    token x (layer, head) decisions for one document (plots/plot_raster.c)
//   quality   perplexity change and KL vs fraction global, per routed run
//   layers    per-layer global rate bars at several windows
//   tokens    global rate by position in the context (log2 buckets), per layer group
//   classes   global rate by token class, per layer group (plots/plot_tokens.c)
//   frontier  perplexity change and KL vs fraction global, a line per policy,
//             a column per window, the delta line and the paper's point (a sweep grid;
//             plots/plot_frontier.c)
//   mass      where attention mass goes: sinks, window, far context per window and
//             layer group (a trace recorded with --mass; plots/plot_mass.c)
// and with --compare, one line per trace: compare_sparsity, compare_ccdf
// (plots/plot_compare.c).
#pragma once
#include <stdio.h>

#include "publish.h"

#include <cjson/cJSON.h>

#include "figure.h"

#define AHA_PLOT_MAX 10       // figures

// Every figure of the first trace of report rep (trace_path: its first file,
// for the raster's token-level data) into dir. names[0..*n): the figures
// made (a trace without routed runs has no quality figure).
int aha_plot_all(const cJSON *rep, const char *trace_path, const char *dir, const aha_plot_opts *o,
                 const char **names, int *n);

// The figure folder dir started for publishing whole (aha_traces_pub;
// traces: the inputs): figures are drawn into p->tmp, then aha_pub_commit.
// An existing dir is replaced (force) only when it holds nothing but files
// of figures aha_plot_all or aha_plot_compare make, in any format.
int aha_plot_out(aha_pub *p, const char *flag, const char *dir, int force, const char *const *traces, int n);

// Window indices of the heatmap and of the raster (o->window, or defaults);
// -1 with a message when o->window was not recorded.
int aha_plot_windows(const cJSON *trace, const aha_plot_opts *o, int *heat, int *raster);

// Indices of the (up to 4) windows of the per-layer figure into pick; their count.
int aha_plot_layer_windows(const cJSON *trace, int *pick);
