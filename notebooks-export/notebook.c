// aha notebook TRACE -o analysis.ipynb: an nbformat v4 notebook that carries
// the run's summary, Python (h5py + matplotlib) cells that load the trace and
// redraw each figure, and, stored as the cells' outputs, the gnuplot figures
// and tables, so that it reads well without being run.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "commands.h"
#include "err.h"
#include "flags.h"
#include "frontier.h"
#include "notebook_cells.h" // embed_<name>: notebooks-export/cells/<name>.py, embedded by scripts/embed.sh
#include "plot.h"
#include "report.h"
#include "report_schema.h"
#include "report_text.h"
#include "trace_schema.h"

static char *b64(const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; out && i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63], *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=', *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    if (out) *o = '\0';
    return out;
}

// The file dir/name.png as base64, or NULL with a message.
static char *png_b64(const char *dir, const char *name) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    if (f) fclose(f);
    char *s = n >= 0 && buf ? b64(buf, (size_t)n) : NULL;
    free(buf);
    if (!s) aha_err("%s: cannot read the figure", path);
    return s;
}

static int cell_no;

static cJSON *cell(const char *type, const char *src) {
    cJSON *c = cJSON_CreateObject();
    char id[16];
    snprintf(id, sizeof id, "cell-%d", cell_no++);
    cJSON_AddStringToObject(c, "cell_type", type);
    cJSON_AddStringToObject(c, "id", id);
    cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
    cJSON_AddStringToObject(c, "source", src);
    if (strcmp(type, "code") == 0) {
        cJSON_AddNullToObject(c, "execution_count");
        cJSON_AddArrayToObject(c, "outputs");
    }
    return c;
}

static void add_png(cJSON *code, char *png) {
    cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output_type", "display_data");
    cJSON_AddItemToObject(o, "data", data);
    cJSON_AddStringToObject(data, "image/png", png);
    cJSON_AddStringToObject(data, "text/plain", "<Figure (rendered by aha plot with gnuplot)>");
    cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(code, "outputs"), o);
    free(png);
}

static void add_text(cJSON *code, const char *text) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output_type", "stream");
    cJSON_AddStringToObject(o, "name", "stdout");
    cJSON_AddStringToObject(o, "text", text);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(code, "outputs"), o);
}

// The summary: what was run and the numbers people quote, over all
// decisions (the paper's metric) and over those with t >= w.
static char *summary_md(const cJSON *tr, const char *trace) {
    aha_buf b = {0};
    const cJSON *w, *r, *lt0 = rep_at(tr, RF_TRACE_LONG_TAIL, 0), *wins = rep_get(tr, RF_TRACE_WINDOWS);
    char set[AHA_SETTINGS_MAX], name[64];
    aha_report_settings(tr, set, sizeof set);
    aha_buf_printf(&b, "# Attention context dependency: %s\n\n", rep_str(tr, RF_TRACE_MODEL));
    const char *mode = rep_str(tr, RF_TRACE_MODE); // what recorded it: observe and routed are aha record's
    aha_buf_printf(&b, "Trace `%s` (relative to this notebook's folder; `%s`, mode %s, router %s) over `%s`: %.0f documents, %.0f "
               "tokens, %d layers x %d heads = %.0f decisions%s; %s.\n\n",
           trace, strcmp(mode, "sweep") ? "aha record" : "aha sweep", mode, rep_str(tr, RF_TRACE_ROUTER),
           rep_str(tr, RF_TRACE_DATASET), rep_num(tr, RF_TRACE_N_DOCS), rep_num(tr, RF_TRACE_N_TOKENS),
           rep_int(tr, RF_TRACE_N_LAYERS), rep_int(tr, RF_TRACE_N_HEADS), rep_num(tr, RF_TRACE_DECISIONS),
           rep_true(tr, RF_TRACE_COMPLETE) ? "" : " (an unfinished trace: its completed documents)", set);
    if (aha_report_has_local(tr)) {
        const cJSON *x;
        aha_buf_printf(&b, "**Natively local layers** (`layer_window`):");
        cJSON_ArrayForEach(x, rep_get(tr, RF_TRACE_LOCAL_LAYERS))
            aha_buf_printf(&b, " %d (window %d)%s", rep_int(x, RF_LOCAL_LAYER), rep_int(x, RF_LOCAL_WINDOW), x->next ? "," : ".");
        aha_buf_printf(&b, " They run their native sliding window in every mode: the router decides nothing there and d_eps is "
                   "at most the window by construction, so every number here counts the %d global layers only "
                   "(`aha report` lists the local ones apart).\n\n", rep_int(tr, RF_TRACE_N_GLOBAL_LAYERS));
    }
    for (int tw = 0; tw < 2; tw++) {
        aha_buf_printf(&b, "%s", tw ? "\n\nThe same over **decisions with t >= w** only (those where the window drops keys):\n\n| router |"
                            : "Fraction of decisions that need full attention (oracle: d_eps > w) over **all decisions** "
                              "(every layer, token and head, prompt tokens included: the paper's metric):\n\n| router |");
        for (int i = 0; i < cJSON_GetArraySize(wins); i++) aha_buf_printf(&b, " w=%.0f |", rep_num_at(wins, i));
        aha_buf_printf(&b, "\n|---|");
        for (int i = 0; i < cJSON_GetArraySize(wins); i++) aha_buf_printf(&b, "---:|");
        cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_ROUTERS)) {
            aha_report_router_name(r, name, sizeof name);
            aha_buf_printf(&b, "\n| %s |", name);
            cJSON_ArrayForEach(w, rep_get(r, RF_ROUTER_WINDOWS)) { // null: no decision has t >= w
                double x = rep_num(rep_get(w, tw ? RF_RW_T_GE_W : RF_RW_ALL), RF_FRAC_FRACTION);
                if (isnan(x)) aha_buf_printf(&b, " - |");
                else aha_buf_printf(&b, " %.4f |", x);
            }
        }
    }
    const cJSON *q = rep_get(lt0, RF_LT_QUANTILES);
    aha_buf_printf(&b, "\n\nDependency distance d_eps (eps %g, all decisions): median %d, p90 %d, p99 %d, max %d tokens.\n\n"
               "The cells below load the trace with h5py (and xarray, as named arrays) and redraw each figure with "
               "matplotlib; the stored outputs are "
               "the gnuplot figures of `aha plot`. They read whole datasets: for large traces use `aha report`.",
           rep_num(lt0, RF_LT_EPS), rep_int(q, RF_Q_MEDIAN), rep_int(q, RF_Q_P90), rep_int(q, RF_Q_P99), rep_int(q, RF_Q_MAX));
    return aha_buf_take(&b, "the notebook's summary");
}

// What fills the cells' placeholders: AHA_<NAME> in notebooks-export/cells/*.py
// (a Python name there, so the files compile as they are).
typedef struct {
    const char *name;         // "AHA_TRACE"
    aha_buf value;               // Python source: a literal ("../t.h5", 128, [16, 64]) or a dict
} cell_var;

enum { V_TRACE, V_DS, V_RUNS, V_HEAT_WINDOW, V_RASTER_WINDOW, V_DOC, V_TOKENS, V_DELTA, V_WINDOWS, N_VARS };

// The cell template tmpl with every placeholder filled; NULL with a message
// naming one that vars lacks.
static char *fill(const char *tmpl, const cell_var *vars) {
    aha_buf b = {0};
    for (const char *p = tmpl; *p;) {
        const char *at = strstr(p, "AHA_");
        if (!at) at = p + strlen(p);
        aha_buf_printf(&b, "%.*s", (int)(at - p), p);
        if (!*at) break;
        size_t n = strspn(at + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") + 4;
        int k = 0;
        while (k < N_VARS && (strlen(vars[k].name) != n || strncmp(vars[k].name, at, n))) k++;
        if (k == N_VARS) {
            aha_err("notebook cell: no value for %.*s (notebooks-export/notebook.c fills the cells)", (int)n, at);
            aha_buf_free(&b);
            return NULL;
        }
        aha_buf_printf(&b, "%s", vars[k].value.p ? vars[k].value.p : "");
        p = at + n;
    }
    return aha_buf_take(&b, "a notebook cell");
}

// The printed table of cells/table.py, as the cell's stored output.
static char *table_text(const cJSON *tr) {
    aha_buf b = {0};
    const cJSON *w, *r, *wins = rep_get(tr, RF_TRACE_WINDOWS);
    char head[32], set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    for (int tw = 0; tw < 2; tw++) {
        aha_buf_printf(&b, "%s (%s)\nrouter        ", aha_report_subset(tw), set);
        for (int i = 0; i < cJSON_GetArraySize(wins); i++) snprintf(head, sizeof head, "w=%.0f", rep_num_at(wins, i)), aha_buf_printf(&b, "%9s", head);
        cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_ROUTERS)) {
            if (strcmp(rep_str(r, RF_ROUTER_ROUTER), "oracle") == 0) snprintf(head, sizeof head, "oracle %g", rep_num(r, RF_ROUTER_EPS));
            else snprintf(head, sizeof head, "learned");
            aha_buf_printf(&b, "\n%-14s", head);
            cJSON_ArrayForEach(w, rep_get(r, RF_ROUTER_WINDOWS)) {
                double x = rep_num(rep_get(w, tw ? RF_RW_T_GE_W : RF_RW_ALL), RF_FRAC_FRACTION);
                if (isnan(x)) aha_buf_printf(&b, "%9s", "nan"); // as Python prints NaN
                else aha_buf_printf(&b, "%9.4f", x);
            }
        }
        aha_buf_printf(&b, "\n");
    }
    return aha_buf_take(&b, "the notebook's table");
}

// A fraction as the frontier cell prints it: width w, 4 decimals, or "nan".
static void put_fraction(aha_buf *b, double x, int w) {
    if (isnan(x)) aha_buf_printf(b, "%*s", w, "nan");
    else aha_buf_printf(b, "%*.4f", w, x);
}

// The printed table of cells/frontier.py, from the report's frontier.
static char *frontier_text(const cJSON *tr) {
    aha_buf b = {0};
    const cJSON *fr = rep_get(tr, RF_TRACE_FRONTIER), *l;
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    aha_buf_printf(&b, "smallest fraction global with perplexity change <= %+.2f%% (%s)\n", 100 * rep_num(fr, RF_FR_DELTA), set);
    aha_buf_printf(&b, "%5s %-10s %14s %-28s %8s how\n", "w", "policy", "all decisions", "how", "t >= w");
    cJSON_ArrayForEach(l, rep_get(fr, RF_FR_LINES)) {
        const cJSON *a = rep_get(l, RF_LINE_SMALLEST_ALL), *t = rep_get(l, RF_LINE_SMALLEST_T_GE_W);
        aha_buf_printf(&b, "%5d %-10s ", rep_int(l, RF_LINE_WINDOW), rep_str(l, RF_LINE_POLICY));
        put_fraction(&b, rep_num(a, RF_SM_FRACTION), 14);
        aha_buf_printf(&b, " %-28s ", rep_str(a, RF_SM_HOW));
        put_fraction(&b, rep_num(t, RF_SM_FRACTION), 8);
        aha_buf_printf(&b, " %s\n", rep_str(t, RF_SM_HOW));
    }
    return aha_buf_take(&b, "the notebook's frontier table");
}

// Each figure aha plot may make, its heading cell, its Python and what the
// cell prints (stored as its output; NULL: nothing).
static const struct {
    const char *name, *heading, *cell;
    char *(*text)(const cJSON *tr);
} figure_cells[] = {
    {"sparsity", "## Sparsity vs window\n\nFraction of decisions that need full attention at each local window (log2 axis): "
                 "the oracle at each eps and the learned router, against the all-global line; solid over all decisions, "
                 "dashed over decisions with t >= w.", embed_sparsity, NULL},
    {"ccdf", "## Long tail\n\nCCDF of the dependency distance, P(d_eps > w) over all decisions, log-log: per eps, and "
             "per layer group.", embed_ccdf, NULL},
    {"heatmap", "## Layer x head\n\nGlobal rate of each head (oracle, first eps, decisions with t >= w) at one window.",
     embed_heatmap, NULL},
    {"raster", "## Routing raster\n\nDecisions per token (columns) and (layer, head) (rows) for one document.", embed_raster, NULL},
    {"quality", "## Quality vs sparsity\n\nPerplexity change and mean KL against full attention, per routed run, against "
                "the fraction routed global over all decisions.", embed_quality, NULL},
    {"layers", "## Per layer\n\nGlobal rate of each layer (oracle, first eps, t >= w) at several windows.", embed_layers, NULL},
    {"frontier", "## Frontier\n\nPer window and policy: perplexity change and mean KL against the fraction routed global "
                 "(all decisions), the delta line and the paper's operating point; and the smallest fraction global with "
                 "perplexity change <= delta (over all decisions and over t >= w), interpolated between the runs that "
                 "bracket delta.", embed_frontier, frontier_text},
    {"mass", "## Where attention mass goes\n\nMean attention mass per decision on the sinks, the window and the far "
             "context (keys sinks..t-w, what d_eps thresholds), per window and layer group, over decisions with "
             "t >= w + sinks and over those the oracle calls global (recorded with aha record --mass).", embed_mass, NULL},
};

// A code cell of template tmpl, filled from vars; NULL with a message.
static cJSON *code_cell(const char *tmpl, const cell_var *vars) {
    char *src = fill(tmpl, vars);
    cJSON *c = src ? cell("code", src) : NULL;
    free(src);
    return c;
}

// Stored output: what a cell prints, made by text(tr) (NULL: prints
// nothing); -1 when making it failed (its message is set).
static int add_printed(cJSON *code, char *(*text)(const cJSON *tr), const cJSON *tr) {
    char *s = text ? text(tr) : NULL;
    if (s) add_text(code, s);
    free(s);
    return text && !s ? -1 : 0;
}

// Figure name's heading and code cells, the code with the stored PNG (and
// what it prints); -1 with a message.
static int add_figure(cJSON *cells, const cJSON *tr, const char *dir, const char *name, const cell_var *vars) {
    size_t i = 0;
    while (i < sizeof figure_cells / sizeof *figure_cells && strcmp(figure_cells[i].name, name)) i++;
    if (i == sizeof figure_cells / sizeof *figure_cells) {
        aha_err("notebook: no cell for figure %s (notebooks-export/notebook.c)", name);
        return -1;
    }
    char *png = png_b64(dir, name);
    if (!png) return -1;
    cJSON *md = cell("markdown", figure_cells[i].heading), *c = code_cell(figure_cells[i].cell, vars);
    if (!c) {
        free(png), cJSON_Delete(md);
        return -1;
    }
    add_png(c, png);
    if (add_printed(c, figure_cells[i].text, tr) != 0) {
        cJSON_Delete(md), cJSON_Delete(c);
        return -1;
    }
    cJSON_AddItemToArray(cells, md);
    cJSON_AddItemToArray(cells, c);
    return 0;
}

// The cells' placeholders for trace tr: its path as the notebook names it,
// the schema's dataset names, the figures' windows and aha notebook's flags
// (cell_vars_free frees them).
static int cell_vars(cell_var *v, const cJSON *tr, const char *trace, const aha_plot_opts *o) {
    static const char *names[N_VARS] = {[V_TRACE] = "AHA_TRACE", [V_DS] = "AHA_DS", [V_RUNS] = "AHA_RUNS",
                                        [V_HEAT_WINDOW] = "AHA_HEAT_WINDOW", [V_RASTER_WINDOW] = "AHA_RASTER_WINDOW",
                                        [V_DOC] = "AHA_DOC", [V_TOKENS] = "AHA_TOKENS", [V_DELTA] = "AHA_DELTA",
                                        [V_WINDOWS] = "AHA_WINDOWS"};
    int heat, raster, pick[4], np = aha_plot_layer_windows(tr, pick);
    const cJSON *wins = rep_get(tr, RF_TRACE_WINDOWS);
    for (int k = 0; k < N_VARS; k++) v[k] = (cell_var){names[k], {0}};
    if (aha_plot_windows(tr, o, &heat, &raster) != 0) return -1;
    cJSON *q = cJSON_CreateString(trace); // a JSON string is a valid Python string literal
    char *qs = cJSON_PrintUnformatted(q);
    aha_buf_printf(&v[V_TRACE].value, "%s", qs ? qs : "");
    free(qs), cJSON_Delete(q);
    aha_buf_printf(&v[V_DS].value, "{");
    for (int i = 0; i < TD_COUNT; i++) // by each row's key; {eps}: an eps as %g, {window}, {run}: str.format fills them
        aha_buf_printf(&v[V_DS].value, "%s\"%s\": \"%s\"", i ? ",\n      " : "", trace_dsets[i].key, trace_dsets[i].path);
    aha_buf_printf(&v[V_DS].value, "}");
    aha_buf_printf(&v[V_RUNS].value, "\"%s\"", trace_groups[TG_RUNS].path);
    aha_buf_printf(&v[V_HEAT_WINDOW].value, "%.0f", rep_num_at(wins, heat));
    aha_buf_printf(&v[V_RASTER_WINDOW].value, "%.0f", rep_num_at(wins, raster));
    aha_buf_printf(&v[V_DOC].value, "%d", o->doc);
    aha_buf_printf(&v[V_TOKENS].value, "%d", o->tokens);
    aha_buf_printf(&v[V_DELTA].value, "%.17g", rep_num(rep_get(tr, RF_TRACE_FRONTIER), RF_FR_DELTA));
    aha_buf_printf(&v[V_WINDOWS].value, "[");
    for (int k = 0; k < np; k++) aha_buf_printf(&v[V_WINDOWS].value, "%.0f%s", rep_num_at(wins, pick[k]), k + 1 < np ? ", " : "]");
    for (int k = 0; k < N_VARS; k++)
        if (v[k].value.failed || !v[k].value.p || !qs) {
            aha_err("out of memory for the notebook's cells");
            return -1;
        }
    return 0;
}

static void cell_vars_free(cell_var *v) {
    for (int k = 0; k < N_VARS; k++) aha_buf_free(&v[k].value);
}

static cJSON *notebook(const cJSON *tr, const char *trace, const char *dir, const aha_plot_opts *o, const char **names,
                       int n_fig) {
    cJSON *nb = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *ks = cJSON_CreateObject();
    cJSON *cells = cJSON_AddArrayToObject(nb, "cells");
    cJSON_AddItemToObject(nb, "metadata", meta);
    cJSON_AddItemToObject(meta, "kernelspec", ks);
    cJSON_AddStringToObject(ks, "name", "python3");
    cJSON_AddStringToObject(ks, "display_name", "Python 3");
    cJSON_AddStringToObject(ks, "language", "python");
    cJSON_AddItemToObject(cJSON_AddObjectToObject(meta, "language_info"), "name", cJSON_CreateString("python"));
    cJSON_AddNumberToObject(nb, "nbformat", 4);
    cJSON_AddNumberToObject(nb, "nbformat_minor", 5);
    cell_no = 0;
    cell_var vars[N_VARS];
    int ok = cell_vars(vars, tr, trace, o) == 0; // vars are set (and freed below) either way
    char *md = ok ? summary_md(tr, trace) : NULL;
    cJSON *summary = md ? cell("markdown", md) : NULL; // the cells' ids follow the order they are made in
    cJSON *setup = summary ? code_cell(embed_setup, vars) : NULL;
    cJSON *table = setup ? code_cell(embed_table, vars) : NULL;
    ok = table && add_printed(table, table_text, tr) == 0;
    if (ok) {
        cJSON_AddItemToArray(cells, summary);
        cJSON_AddItemToArray(cells, setup);
        cJSON_AddItemToArray(cells, cell("markdown", "## Key numbers\n\nFraction of decisions routed global per window, over "
                                                         "all decisions (the paper's metric) and over decisions with t >= w."));
        cJSON_AddItemToArray(cells, table);
    } else {
        cJSON_Delete(summary), cJSON_Delete(setup), cJSON_Delete(table);
    }
    free(md);
    for (int i = 0; ok && i < n_fig; i++) ok = add_figure(cells, tr, dir, names[i], vars) == 0;
    cell_vars_free(vars);
    if (ok && !rep_read_failed()) return nb; // a failed read has its message
    cJSON_Delete(nb);
    return NULL;
}

// The path of file `to` from directory `from`, both absolute and canonical
// (realpath): "t.h5", "../data/t.h5".
static void rel_path(const char *from, const char *to, char *buf, size_t size) {
    size_t i = 0, common = 0; // common: the '/' ending the shared leading components
    for (; from[i] && from[i] == to[i]; i++)
        if (from[i] == '/') common = i;
    if (!from[i] && to[i] == '/') common = i; // to is inside from
    buf[0] = '\0';
    for (const char *c = from + common + (from[common] == '/'); *c;) { // one "../" per component left in from
        strncat(buf, "../", size - strlen(buf) - 1);
        c += strcspn(c, "/");
        c += *c == '/';
    }
    strncat(buf, to + common + 1, size - strlen(buf) - 1);
}

// The trace's path as the notebook at nb_path should name it: relative to
// the notebook's folder, so that moving both together keeps it working.
static void trace_from_notebook(const char *trace, const char *nb_path, char *buf, size_t size) {
    char nb_dir[PATH_MAX], abs_dir[PATH_MAX], abs_trace[PATH_MAX];
    const char *slash = strrchr(nb_path, '/');
    if (slash) snprintf(nb_dir, sizeof nb_dir, "%.*s", slash == nb_path ? 1 : (int)(slash - nb_path), nb_path);
    else snprintf(nb_dir, sizeof nb_dir, ".");
    if (realpath(nb_dir, abs_dir) && realpath(trace, abs_trace)) rel_path(abs_dir, abs_trace, buf, size);
    else snprintf(buf, size, "%s", trace);
}

int aha_cmd_notebook(int argc, char **argv) {
    const char *out = "analysis.ipynb", *figures = NULL;
    const char *delta_s = AHA_FRONTIER_DELTA;
    double delta = 0;
    int force = 0;
    aha_plot_opts o = {AHA_PLOT_PNG, 800, 500, 0, 0, 96, NULL};
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &out, "the notebook to write", NULL},
        {"--figures", FLAG_STR, &figures, "directory for the gnuplot figures; default: the notebook's name + _figures", NULL},
        {"--window", FLAG_INT, &o.window, "window of the heatmap and raster; 0: as aha plot chooses", ">= 0"},
        {"--doc", FLAG_INT, &o.doc, "document of the raster", ">= 0"},
        {"--tokens", FLAG_INT, &o.tokens, "raster: first tokens of the document shown", ">= 1"},
        {"--delta", FLAG_STR, &delta_s, "frontier: the smallest fraction global with perplexity change <= delta (0.01 = +1%)", NULL},
        {"--force", FLAG_BOOL, &force, "overwrite an existing notebook and its figures", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[1];
    AHA_PARSE("usage: aha notebook TRACE -o analysis.ipynb [--force]", flags, pos, 1);
    char dir[PATH_MAX], trace[PATH_MAX];
    size_t n = strlen(out);
    if (figures) snprintf(dir, sizeof dir, "%s", figures);
    else snprintf(dir, sizeof dir, "%.*s_figures", (int)(n > 6 && !strcmp(out + n - 6, ".ipynb") ? n - 6 : n), out);
    if (aha_frontier_delta(delta_s, &delta) != 0) return aha_cli_fail();
    // as a trace: an edited notebook is never lost silently, nor are its figures
    aha_pub nb_out = {.fd = -1}, fig_out = {.fd = -1}; // each written beside its place, then moved there whole
    if (aha_traces_pub(&nb_out, "-o", out, NULL, 0, force, pos, 1) != 0 ||
        aha_plot_out(&fig_out, figures ? "--figures" : "-o", dir, force, pos, 1) != 0) {
        aha_pub_abort(&nb_out);
        return aha_cli_fail();
    }
    aha_report_what what = {0, 0, 0, 0, 0, 1, delta}; // the figures need no token tables
    cJSON *rep = aha_report_build(pos, 1, &what);
    const char *names[AHA_PLOT_MAX];
    int n_fig = 0, rc = -1;
    cJSON *nb = NULL;
    if (rep && aha_plot_all(rep, pos[0], fig_out.tmp, &o, names, &n_fig) == 0) {
        trace_from_notebook(pos[0], out, trace, sizeof trace);
        nb = notebook(rep_at(rep, RF_REPORT_TRACES, 0), trace, fig_out.tmp, &o, names, n_fig);
    }
    char *text = nb ? cJSON_Print(nb) : NULL;
    FILE *f = text ? fopen(nb_out.tmp, "w") : NULL;
    if (text && !f) aha_err("%s: %s", nb_out.tmp, strerror(errno));
    if (f) {
        fprintf(f, "%s\n", text);
        rc = (ferror(f) | fclose(f)) == 0 ? 0 : (aha_err("%s: write failed", out), -1);
    }
    free(text), cJSON_Delete(nb), cJSON_Delete(rep);
    if (rc == 0) rc = aha_pub_commit(&fig_out) || aha_pub_commit(&nb_out) ? -1 : 0;
    aha_pub_abort(&fig_out);
    aha_pub_abort(&nb_out);
    if (rc != 0) return aha_cli_fail();
    printf("%s (figures in %s)\n", out, dir);
    return 0;
}
