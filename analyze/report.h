// The report of one or more gathered traces, as JSON (the complete numbers,
// which plots and notebooks read too), CSV (the same numbers in long form)
// and Markdown (the tables people read). Every field is declared once in
// report_schema.c (docs/report-format.md is generated from it); every
// fraction carries the counts behind it.
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#include "flags.h"
#include "publish.h"
#include "stats.h"

#define AHA_MAX_TRACES 16384  // traces one command reads (each open only while it is read)
#define AHA_TRACES_POS (AHA_MAX_TRACES + 1) // a command's positional array: room for the one too
                                            // many that aha_traces_parse names

typedef struct {
    int window;               // window of the per-head / per-layer Markdown tables (0 = middle one)
    int max_rows;             // per-document rows in Markdown (CSV and JSON have all)
} aha_report_opts;

typedef struct {              // what a command's report holds beside the base numbers
    int compare;              // one report per trace, side by side (else shards of one run, combined)
    int block;                // tokens per read slab (0 = automatic)
    int tokens;               // add "tokens" to every trace with d_eps ...
    int min_count, top;       // ... with these (aha report's --min-count, --top)
    int mass;                 // add "mass"
    double delta;             // the frontier's (--delta)
} aha_report_what;

// Gather paths[0..n): as shards of one run (combined), or with compare one
// trace each, side by side. block: tokens per slab (0 = automatic). The JSON
// report, or NULL with a message.
cJSON *aha_report_load(const char *const *paths, int n, int compare, int block);
// The report of aha report, plot and notebook: aha_report_load, then what w
// asks for and the frontier, checked against the report's table
// (aha_report_check). NULL with a message.
cJSON *aha_report_build(const char *const *paths, int n, const aha_report_what *w);
// The JSON report of gathered traces s[0..n); NULL on OOM.
cJSON *aha_report_json(const aha_stats *s, int n);
// Make every number of o print exactly (cJSON prints 15 significant digits);
// after this o is for printing only.
void aha_report_exact(cJSON *o);
// The same numbers as CSV rows: trace,table,router,eps,window,layer,head,doc,subset,metric,value.
// 0, or -1 when a field of rep could not be read (report_schema.h).
int aha_report_csv(FILE *f, const cJSON *rep);
// The tables people read; 0 or -1 as aha_report_csv.
int aha_report_md(FILE *f, const cJSON *rep, const aha_report_opts *o);

// For the commands that read traces: parse flags and 1..AHA_MAX_TRACES
// positional traces into pos[AHA_TRACES_POS] (*n of them); returns as
// aha_cli_parse does.
int aha_traces_parse(int argc, char **argv, const char *usage, const aha_flag *flags, const char **pos, int *n);
// The output of a command that reads traces[0..n): the file out (names
// NULL), or the folder out and its n_names files, as aha_out_file /
// aha_out_dir (common/outpath.h) with every trace an input.
int aha_traces_out(const char *flag, const char *out, const char *const *names, int n_names, int force,
                   const char *const *traces, int n);
// The same output started for publishing whole and alone (common/publish.h):
// a file (own NULL), or a folder whose files are named own[0..n_own).
int aha_traces_pub(aha_pub *p, const char *flag, const char *out, const char *const *own, int n_own, int force,
                   const char *const *traces, int n);
