// The frontier of a sweep: per window and policy family, the routed runs'
// quality against their fraction global, and the smallest fraction global
// whose perplexity change stays within delta, interpolated between the two
// grid points that bracket delta. Computed from the JSON report's runs (so
// Markdown, CSV, JSON and the plot agree) and added to each trace as
// "frontier".
#pragma once
#include <stdio.h>

#include <cjson/cJSON.h>

#define AHA_FRONTIER_DELTA "0.01" // default --delta: +1% perplexity

// --delta's text as a number (a double: 0.01 stays 0.01). 0, or -1 with a message.
int aha_frontier_delta(const char *s, double *delta);

// Add "frontier" to every trace of the JSON report rep. 0, or -1 (OOM).
int aha_report_frontier(cJSON *rep, double delta);
// Its tables (Markdown) and rows (CSV: the report's columns; trace index t).
void aha_frontier_md(FILE *f, const cJSON *trace);
void aha_frontier_csv(FILE *f, int t, const cJSON *trace);
// The policy family of a run's policy attribute: "random:0.1" -> "random".
void aha_frontier_family(const char *policy, char *buf, size_t size);
