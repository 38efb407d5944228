// What every table, figure and notebook says about a trace of the report:
// which decisions a fraction counts, the settings behind the numbers, which
// layers are counted, and a number as a Markdown cell. Read from the report
// (report_schema.h); the Markdown, CSV, plots and notebook share them, and
// none of them is needed here.
#pragma once
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

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
// The trace has natively local layers.
int aha_report_has_local(const cJSON *trace);
// Which layers a curve counts, short, for legends: "3 global layers" or "all 30 layers".
void aha_report_layers_short(const cJSON *trace, char *buf, size_t size);
// Index of window w in the JSON trace's windows, or -1 with a message that
// lists the recorded ones.
int aha_report_window(const cJSON *trace, int w);
// The first trace file's name, for messages.
const char *aha_report_file(const cJSON *trace);
// The router's name in tables: "oracle eps 0.01" or "learned tau 0.5".
void aha_report_router_name(const cJSON *router, char *buf, size_t size);
// A Markdown cell: x with fmt, " - " where it is NaN (null: nothing to count).
void aha_md_num(FILE *f, double x, const char *fmt);
