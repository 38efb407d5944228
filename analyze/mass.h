// Where the attention mass goes (aha record --mass): per window and layer
// group (the token analysis's thirds, tokens.h), the mean mass on the sinks,
// the window and the far context, over the decisions with t >= w + sinks
// (where window and sinks do not overlap) and over those of them the oracle
// calls global (d_eps > w at the first eps): are global decisions global
// because of far context? One streaming pass over position, the first eps's
// d_eps, mass_sinks and mass_far/w_<w>, a slab at a time; memory does not
// grow with T.
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#include "trace_read.h"

// aha report / aha plot: add "mass" to every trace of rep (paths as
// aha_report_load took them): {"recorded": false} without the datasets, else
// the table. 0 or -1 with a message.
int aha_mass_report(cJSON *rep, const char *const *paths, int n, int compare, int block);
// That member for the open traces trs[0..n) (shards of one run), which stay
// open; NULL with a message.
cJSON *aha_mass_json_open(const aha_tr *trs, int n, int block);

// The Markdown section of one trace's JSON (nothing when it has no "mass").
void aha_mass_md(FILE *f, const cJSON *tr);
// Rows of table `mass` (report.csv's columns; the router column holds the
// layer group).
void aha_mass_csv(FILE *f, int t, const cJSON *tr);
