// The report of one or more gathered traces, as JSON (the complete numbers,
// which plots and notebooks read too), CSV (the same numbers in long form)
// and Markdown (the tables people read). Schema: docs/report-format in the
// README; every fraction carries the counts behind it.
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#include "flags.h"
#include "stats.h"

#define AHA_MAX_TRACES 256    // traces one command reads

typedef struct {
    int window;               // window of the per-head / per-layer Markdown tables (0 = middle one)
    int max_rows;             // per-document rows in Markdown (CSV and JSON have all)
} aha_report_opts;

// Gather paths[0..n): as shards of one run (combined), or with compare one
// trace each, side by side. block: tokens per slab (0 = automatic). The JSON
// report, or NULL with a message.
cJSON *aha_report_load(const char *const *paths, int n, int compare, int block);
// The JSON report of gathered traces s[0..n); NULL on OOM.
cJSON *aha_report_json(const aha_stats *s, int n);
// A fraction as JSON: {global, total, fraction} (fraction null if total = 0).
cJSON *aha_report_frac_json(aha_frac f);
// Make every number of o print exactly (cJSON prints 15 significant digits);
// after this o is for printing only.
void aha_report_exact(cJSON *o);
// The same numbers as CSV rows: trace,table,router,eps,window,layer,head,doc,subset,metric,value.
void aha_report_csv(FILE *f, const cJSON *rep);
// The tables people read.
void aha_report_md(FILE *f, const cJSON *rep, const aha_report_opts *o);
// What a fraction counts, for labels: "all decisions" (the default: the
// paper's metric) or "decisions with t >= w" (where the window drops keys).
const char *aha_report_subset(int t_ge_w);
// The trace's settings every figure and table names: "sinks S, ctx C", and
// with natively local layers what is counted ("; global layers only: 3 of
// 18; 15 natively local (window 512) shown apart"). Fits AHA_SETTINGS_MAX.
#define AHA_SETTINGS_MAX 256
void aha_report_settings(const cJSON *trace, char *buf, size_t size);
// The same with sep before what is counted (aha_report_settings: "; ").
void aha_report_settings_sep(const cJSON *trace, const char *sep, char *buf, size_t size);
// The same without what is counted: "sinks S, ctx C".
void aha_report_settings_only(const cJSON *trace, char *buf, size_t size);
// Layer l's native window in the JSON trace (0: a global layer).
int aha_report_layer_window(const cJSON *trace, int l);
// Which layers a curve counts, short, for legends: "3 global layers" or "all 30 layers".
void aha_report_layers_short(const cJSON *trace, char *buf, size_t size);
// Index of window w in the JSON trace's windows, or -1 with a message that
// lists the recorded ones.
int aha_report_window(const cJSON *trace, int w);

// For the commands that read traces: parse flags and 1..AHA_MAX_TRACES
// positional traces into pos[*n]; returns as aha_cli_parse does.
int aha_traces_parse(int argc, char **argv, const char *usage, const aha_flag *flags, const char **pos, int *n);
// The output of a command that reads traces[0..n): the file out (names
// NULL), or the folder out and its n_names files, as aha_out_file /
// aha_out_dir (common/outpath.h) with every trace an input.
int aha_traces_out(const char *flag, const char *out, const char *const *names, int n_names, int force,
                   const char *const *traces, int n);
// mkdir that accepts an existing directory.
int aha_mkdir(const char *dir);
