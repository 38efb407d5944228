// aha plot --html: view.html, one self-contained page for exploring one
// document's routing token by token in a browser. It makes no network
// request: its style, script and data are inside it. It shows the tokens
// coloured by d_eps or by a router's decision for one layer and head (or
// averaged over heads, layers or both), the layer x head heatmap of fraction
// global (a click selects a head), and on hover a token's d_eps per eps, the
// oracle's decision per window, the routers' decisions and its NLL.
//
// The page holds exact values of every layer and head for one range of the
// document (at most --html-tokens tokens), each layer compressed apart and
// decompressed only when shown. docs/reports.md says how to read it.
#pragma once
#include <cjson/cJSON.h>

#define AHA_VIEW_TOKENS 4096  // --html-tokens' default

typedef struct {
    int doc;                  // the document shown (--doc)
    int from;                 // its first position shown (--html-from)
    int tokens;               // at most this many tokens from there (--html-tokens; 0: to its end)
    int window;               // index of the window selected at first (the heatmap's)
} aha_view_opts;

// o's document and range in the trace (its first file), checked before
// anything is written. 0, or -1 with one line.
int aha_view_check(const aha_view_opts *o, const char *trace_path);

// Write dir/view.html (a new file in the figure folder being built, which
// aha plot publishes whole) for the first trace of report rep (trace_path:
// its first file, whose document o->doc is shown). 0, or -1 with one line.
int aha_plot_view(const cJSON *rep, const char *trace_path, const char *dir, const aha_view_opts *o);
