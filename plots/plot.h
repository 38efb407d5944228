// The figures: each is NAME.dat (the plotted numbers, from the JSON report),
// NAME.gp (the gnuplot script; `gnuplot NAME.gp` in the directory re-renders
// it) and NAME.png|svg|pdf.
//   sparsity  fraction of full attention vs window (log2 x), per router
//   ccdf      P(d_eps > w), log-log, per eps and per layer group
//   heatmap   layer x head global rate at one window
//   raster    token x (layer, head) decisions for one document
//   quality   perplexity change and KL vs fraction global, per routed run
//   layers    per-layer global rate bars at several windows
//   tokens    global rate by position in the context (log2 buckets), per layer group
//   classes   global rate by token class, per layer group (plots/plot_tokens.c)
//   frontier  perplexity change and KL vs fraction global, a line per policy,
//             a column per window, the delta line and the paper's point (a sweep grid)
//   mass      where attention mass goes: sinks, window, far context per window and
//             layer group (a trace recorded with --mass; plots/plot_mass.c)
// and with --compare, one line per trace: compare_sparsity, compare_ccdf.
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#include "flags.h"

#define AHA_PLOT_MAX 10       // figures

typedef enum { AHA_PLOT_PNG, AHA_PLOT_SVG, AHA_PLOT_PDF } aha_plot_format;
// Their names, "png", "svg", "pdf": --out-format's values and the figures' extensions.
extern const aha_enum aha_plot_formats;

typedef struct {
    aha_plot_format format;   // of the figures
    int width, height;        // pixels (PDF: 1/100 inch each)
    int window;               // heatmap / raster window; 0 = the middle recorded one
    int doc;                  // raster document
    int tokens;               // raster: at most this many tokens from the start of the document
    const char *labels;       // --compare: "A,B,...", one legend per trace; NULL: from the paths
} aha_plot_opts;

// Every figure of the first trace of report rep (trace_path: its first file,
// for the raster's token-level data) into dir. names[0..*n): the figures
// made (a trace without routed runs has no quality figure).
int aha_plot_all(const cJSON *rep, const char *trace_path, const char *dir, const aha_plot_opts *o,
                 const char **names, int *n);

// aha plot --compare: compare_sparsity and compare_ccdf, one line per trace
// of rep (plots/plot_compare.c).
int aha_plot_compare(const cJSON *rep, const char *dir, const aha_plot_opts *o, const char **names, int *n);

// The files of every figure aha_plot_all (compare: aha_plot_compare) may
// write in dir, checked as aha_traces_out does (traces: the inputs).
int aha_plot_out(const char *flag, const char *dir, const aha_plot_opts *o, int compare, int force,
                 const char *const *traces, int n);

// Window indices of the heatmap and of the raster (o->window, or defaults);
// -1 with a message when o->window was not recorded.
int aha_plot_windows(const cJSON *trace, const aha_plot_opts *o, int *heat, int *raster);

// Indices of the (up to 4) windows of the per-layer figure into pick; their count.
int aha_plot_layer_windows(const cJSON *trace, int *pick);

// aha_report_settings for a double-quoted noenhanced gnuplot title: what is
// counted (natively local layers) on a second line.
void aha_plot_title_settings(const cJSON *tr, char *buf, size_t size);
// Which layers a curve counts, for legends: " (3 global layers)" when tr has
// natively local layers, or always (" (all 30 layers)"); else "".
void aha_plot_layers_note(const cJSON *tr, int always, char *buf, size_t size);

// o's number k; NaN where it is null or absent (no decision to count):
// data files hold NaN there, which gnuplot leaves as a gap.
double aha_plot_num(const cJSON *o, const char *k);
// Shared by the figure files: open dir/NAME.dat and dir/NAME.gp for writing.
int aha_plot_open(const char *dir, const char *name, FILE **dat, FILE **gp);
// The terminal and output lines for figure NAME.
void aha_plot_terminal(FILE *gp, const char *name, const aha_plot_opts *o);
// Close the script and the data file, then run gnuplot on NAME.gp in dir.
int aha_plot_render(FILE *gp, FILE *dat, const char *dir, const char *name);
// The token figures (plots/plot_tokens.c) of a trace with "tokens"; wi: window index.
int aha_plot_tokens(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o);
int aha_plot_classes(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o);
// The frontier figure (plots/plot_frontier.c) from the trace's "frontier"
// (aha_report_frontier).
int aha_plot_frontier(const cJSON *tr, const char *dir, const aha_plot_opts *o);
// The mass figure (plots/plot_mass.c) from the trace's "mass" (analyze/mass.h).
int aha_plot_mass(const cJSON *tr, const char *dir, const aha_plot_opts *o);
// The raster figure (plots/plot_raster.c); wi: window index.
int aha_plot_raster(const cJSON *tr, const char *trace_path, const char *dir, int wi, const aha_plot_opts *o);
