// What every figure shares: its files (NAME.dat, the plotted numbers from the
// JSON report; NAME.gp, the gnuplot script; NAME.png|svg|pdf, rendered by
// running it), its title's words, and each figure file's entry point (the
// figures plots/plot.c draws itself are its own). The figure files use this
// and the report (analyze/report_schema.h), never plot.c.
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#include "flags.h"

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

// Open dir/NAME.dat and dir/NAME.gp for writing.
int aha_plot_open(const char *dir, const char *name, FILE **dat, FILE **gp);
// The terminal and output lines for figure NAME.
void aha_plot_terminal(FILE *gp, const char *name, const aha_plot_opts *o);
// Close the script and the data file, then run gnuplot on NAME.gp in dir;
// -1 with a message when a field of the report could not be read
// (report_schema.h: nothing is rendered from it) or gnuplot failed.
int aha_plot_render(FILE *gp, FILE *dat, const char *dir, const char *name);

// aha_report_settings for a double-quoted noenhanced gnuplot title: what is
// counted (natively local layers) on a second line.
void aha_plot_title_settings(const cJSON *tr, char *buf, size_t size);
// Which layers a curve counts, for legends: " (3 global layers)" when tr has
// natively local layers, or always (" (all 30 layers)"); else "".
void aha_plot_layers_note(const cJSON *tr, int always, char *buf, size_t size);

// The token figures (plots/plot_tokens.c) of a trace with "tokens"; wi: window index.
int aha_plot_tokens(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o);
int aha_plot_classes(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o);
// The frontier figure (plots/plot_frontier.c) from the trace's "frontier".
int aha_plot_frontier(const cJSON *tr, const char *dir, const aha_plot_opts *o);
// The mass figure (plots/plot_mass.c) from the trace's "mass" (analyze/mass.h).
int aha_plot_mass(const cJSON *tr, const char *dir, const aha_plot_opts *o);
// The raster figure (plots/plot_raster.c); wi: window index.
int aha_plot_raster(const cJSON *tr, const char *trace_path, const char *dir, int wi, const aha_plot_opts *o);
// aha plot --compare: compare_sparsity and compare_ccdf, one line per trace
// of rep (plots/plot_compare.c); names[0..*n): the figures made.
int aha_plot_compare(const cJSON *rep, const char *dir, const aha_plot_opts *o, const char **names, int *n);
