// aha plot: the figures from the JSON report, with gnuplot.
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "frontier.h"
#include "report.h"
#include "report_schema.h"
#include "report_text.h"
#include "view.h"

// A fraction of pair (or router window) x over a subset ("NaN" in data files when undefined).
static double frac(const cJSON *x, report_field_id subset) { return rep_num(rep_get(x, subset), RF_FRAC_FRACTION); }
static int window_at(const cJSON *tr, int i) { return (int)rep_num_at(rep_get(tr, RF_TRACE_WINDOWS), i); }

// The natively local layers as "1,3,5" into buf (empty: none); their count.
static int local_list(const cJSON *tr, char *buf, size_t size) {
    size_t k = 0;
    int n = 0;
    buf[0] = '\0';
    for (int l = 0; l < rep_int(tr, RF_TRACE_N_LAYERS); l++)
        if (aha_report_layer_window(tr, l) && k + 12 < size) k += (size_t)snprintf(buf + k, size - k, "%s%d", n++ ? "," : "", l);
    return n;
}

static void router_title(const cJSON *r, char *buf, size_t size) {
    if (strcmp(rep_str(r, RF_ROUTER_ROUTER), "oracle") == 0) snprintf(buf, size, "oracle, eps %g", rep_num(r, RF_ROUTER_EPS));
    else snprintf(buf, size, "learned router, tau %g", rep_num(r, RF_ROUTER_TAU));
}

// 1. Fraction global vs window, every router over all decisions (solid) and
// over decisions with t >= w (dashed, same colour), and the all-global line.
static int plot_sparsity(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, "sparsity", &dat, &gp) != 0) return -1;
    const cJSON *routers = rep_get(tr, RF_TRACE_ROUTERS), *r;
    char title[64], set[AHA_SETTINGS_MAX], note[80];
    aha_report_settings(tr, set, sizeof set);
    aha_plot_layers_note(tr, 0, note, sizeof note);
    fprintf(dat, "# fraction of decisions that need full attention per window (%s): one column per router over all "
                 "decisions, then one per router over decisions with t >= w\n# window", set);
    for (int tw = 0; tw < 2; tw++)
        cJSON_ArrayForEach(r, routers) router_title(r, title, sizeof title), fprintf(dat, " | %s, %s", title, tw ? "t >= w" : "all");
    fputc('\n', dat);
    int nw = rep_len(tr, RF_TRACE_WINDOWS), nr = cJSON_GetArraySize(routers);
    for (int i = 0; i < nw; i++) {
        fprintf(dat, "%d", window_at(tr, i));
        for (int tw = 0; tw < 2; tw++)
            cJSON_ArrayForEach(r, routers) fprintf(dat, " %.17g", frac(rep_at(r, RF_ROUTER_WINDOWS, i), tw ? RF_RW_T_GE_W : RF_RW_ALL));
        fputc('\n', dat);
    }
    aha_plot_terminal(gp, "sparsity", o);
    fprintf(gp, "set logscale x 2\nset xlabel 'local window w (tokens)'\nset ylabel 'fraction needing full attention'\n"
                "set yrange [0:1.05]\nset grid\nset key bottom left font ',8'\n"
                "set title \"Sparsity: P(global) vs window\\n{/*0.8 solid: all decisions (the paper's metric); dashed: "
                "decisions with t >= w; %s}\"\nplot ", set);
    for (int tw = 0; tw < 2; tw++) {
        int k = 0;
        cJSON_ArrayForEach(r, routers) {
            router_title(r, title, sizeof title);
            fprintf(gp, "'sparsity.dat' using 1:%d with linespoints lw 2 pt %d dt %d lc %d title '%s, %s%s', ",
                    2 + tw * nr + k, tw ? 6 : 7, tw ? 2 : 1, k + 1, title, aha_report_subset(tw), note);
            k++;
        }
    }
    fprintf(gp, "1 with lines dt 3 lw 2 lc rgb 'gray40' title 'all-global (full attention)'\n");
    return aha_plot_render(gp, dat, dir, "sparsity");
}

// The ccdf figure's .dat: per eps, then per layer group gl[lo[g]..hi[g]) (first eps).
static void ccdf_dat(FILE *dat, const cJSON *tr, const int *gl, const int *lo, const int *hi, int ng) {
    const cJSON *e, *lt = rep_get(tr, RF_TRACE_LONG_TAIL), *pl = rep_get(cJSON_GetArrayItem(lt, 0), RF_LT_CCDF_PER_LAYER);
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(dat, "# P(d_eps > w) over all decisions (%s); per eps, then per layer group (first eps)\n# w", set);
    cJSON_ArrayForEach(e, lt) fprintf(dat, " eps_%g", rep_num(e, RF_LT_EPS));
    for (int g = 0; g < ng; g++) fprintf(dat, " layers_%d-%d", gl[lo[g]], gl[hi[g] - 1]);
    fputc('\n', dat);
    for (int w = 1; w <= rep_int(tr, RF_TRACE_MAX_D); w++) {
        fprintf(dat, "%d", w);
        cJSON_ArrayForEach(e, lt) fprintf(dat, " %.17g", rep_num_at(rep_get(e, RF_LT_CCDF), w));
        for (int g = 0; g < ng; g++) { // every layer has the same decision count: the mean is exact
            double s = 0;
            for (int i = lo[g]; i < hi[g]; i++) s += rep_num_at(cJSON_GetArrayItem(pl, gl[i]), w);
            fprintf(dat, " %.17g", s / (hi[g] - lo[g]));
        }
        fputc('\n', dat);
    }
}

// 2. CCDF of d_eps, log-log: per eps, and per layer group for the first eps.
static int plot_ccdf(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, "ccdf", &dat, &gp) != 0) return -1;
    const cJSON *lt = rep_get(tr, RF_TRACE_LONG_TAIL);
    int L = rep_int(tr, RF_TRACE_N_LAYERS), max_d = rep_int(tr, RF_TRACE_MAX_D), ne = cJSON_GetArraySize(lt);
    static const char *group_color[3] = {"#d95f02", "#e7298a", "#555555"}; // apart from the eps lines
    int gl[L > 0 ? L : 1], n = 0; // layer groups: thirds of the global layers (natively local ones in none)
    for (int l = 0; l < L; l++)
        if (!aha_report_layer_window(tr, l)) gl[n++] = l;
    int ng = n >= 3 ? 3 : n, lo[3], hi[3];
    for (int g = 0; g < ng; g++) lo[g] = g * n / ng, hi[g] = (g + 1) * n / ng; // indices into gl
    ccdf_dat(dat, tr, gl, lo, hi, ng);
    char tset[AHA_SETTINGS_MAX], note[80];
    aha_plot_layers_note(tr, 0, note, sizeof note);
    aha_plot_title_settings(tr, tset, sizeof tset);
    aha_plot_terminal(gp, "ccdf", o);
    fprintf(gp, "set logscale xy\nset xrange [1:%d]\nset xlabel 'window w (tokens)'\nset ylabel 'P(d_{eps} > w)'\nset grid\n"
                "set format y '10^{%%L}'\nset key bottom left\n"
                "set title \"Long tail of the dependency distance (all decisions; %s)\" noenhanced\nplot ",
            max_d > 1 ? max_d : 2, tset);
    double eps0 = rep_num(cJSON_GetArrayItem(lt, 0), RF_LT_EPS);
    for (int k = 0; k < ne; k++)
        fprintf(gp, "'ccdf.dat' using 1:($%d > 0 ? $%d : NaN) with lines lw 2 title '%s, eps %g', ", k + 2,
                k + 2, note[0] ? note + 1 : "all layers", rep_num(cJSON_GetArrayItem(lt, k), RF_LT_EPS));
    for (int g = 0; g < ng; g++)
        fprintf(gp, "'ccdf.dat' using 1:($%d > 0 ? $%d : NaN) with lines dt 2 lw 2 lc rgb '%s' title 'layers %d-%d%s, eps %g'%s",
                ne + g + 2, ne + g + 2, group_color[g], gl[lo[g]], gl[hi[g] - 1], note[0] ? " (global only)" : "", eps0,
                g + 1 < ng ? ", " : "\n");
    if (!ng) fprintf(gp, "NaN notitle\n"); // every layer natively local: nothing to group
    return aha_plot_render(gp, dat, dir, "ccdf");
}

// 3. Layer x head global rate (oracle, first eps, t >= w) at window index wi.
static int plot_heatmap(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, "heatmap", &dat, &gp) != 0) return -1;
    const cJSON *r0 = rep_at(tr, RF_TRACE_ROUTERS, 0), *row, *x;
    int w = window_at(tr, wi);
    double eps = rep_num(r0, RF_ROUTER_EPS);
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(dat, "# fraction global (oracle eps %g, decisions with t >= w; %s) at w = %d; one row per layer, one column per head\n",
            eps, set, w);
    int l = 0;
    cJSON_ArrayForEach(row, rep_get(rep_at(r0, RF_ROUTER_WINDOWS, wi), RF_RW_PER_HEAD)) { // natively local layers: blank rows
        int local = aha_report_layer_window(tr, l++);
        cJSON_ArrayForEach(x, row) fprintf(dat, "%.17g ", local ? NAN : frac(x, RF_PAIR_T_GE_W));
        fputc('\n', dat);
    }
    int L = rep_int(tr, RF_TRACE_N_LAYERS), H = rep_int(tr, RF_TRACE_N_HEADS);
    char loc[512], ytics[1024] = "", tset[AHA_SETTINGS_MAX];
    aha_plot_title_settings(tr, tset, sizeof tset);
    if (local_list(tr, loc, sizeof loc)) { // name the blank rows
        size_t k = (size_t)snprintf(ytics, sizeof ytics, "set ytics add (");
        for (int first = 1, j = 0; j < L && k + 32 < sizeof ytics; j++)
            if (aha_report_layer_window(tr, j))
                k += (size_t)snprintf(ytics + k, sizeof ytics - k, "%s'%d local' %d", first ? "" : ", ", j, j), first = 0;
        snprintf(ytics + k, sizeof ytics - k, ")\n");
    }
    aha_plot_terminal(gp, "heatmap", o);
    fprintf(gp, "set xlabel 'head'\nset ylabel 'layer'\nset cblabel 'fraction global'\nset cbrange [*:1]\n"
                "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset xtics 1\nset ytics %d\nset palette defined (0 '#440154', 1 '#3b528b', 2 '#21918c', 3 '#5ec962', 4 '#fde725')\n"
                "%sset title \"Global rate per layer and head at w = %d (oracle eps %g, decisions with t >= w; %s%s%s)\" noenhanced\n"
                "plot 'heatmap.dat' matrix with image notitle\n",
            H - 0.5, L - 0.5, L > 16 ? 2 : 1, ytics, w, eps, tset, loc[0] ? "; blank rows: natively local layers " : "", loc);
    return aha_plot_render(gp, dat, dir, "heatmap");
}

// 5. Perplexity change and mean KL vs fraction global, one point per routed run.
typedef struct {
    const cJSON *run; // the report's routed run
    double x;         // its fraction global (all decisions)
} quality_point;

static int by_fraction(const void *a, const void *b) {
    const quality_point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x;
}

static int routed(const cJSON *run) { return strcmp(rep_str(run, RF_RUN_POLICY), "global") != 0; }

// The policy families of the routed runs, in the order first met, into
// fams[*nf]; 1 when the routed runs have more than one window.
static int quality_families(const cJSON *runs, char (*fams)[64], int *nf) {
    const cJSON *r;
    char fam[64];
    int w0 = -1, windows = 0;
    *nf = 0;
    cJSON_ArrayForEach(r, runs) {
        if (!routed(r)) continue;
        if (w0 < 0) w0 = rep_int(r, RF_RUN_WINDOW);
        windows |= rep_int(r, RF_RUN_WINDOW) != w0;
        aha_frontier_family(rep_str(r, RF_RUN_POLICY), fam, sizeof fam);
        int seen = 0;
        for (int i = 0; i < *nf; i++) seen |= !strcmp(fams[i], fam);
        if (!seen && *nf < AHA_TRACE_MAX_RUNS) snprintf(fams[(*nf)++], sizeof fams[0], "%s", fam);
    }
    return windows;
}

// A line per policy family (a --policies grid has several), its runs in
// order of fraction global: perplexity change (solid, left axis) and mean KL
// (dashed, right axis) in the family's colour, each point labelled with its
// number (a grid's) and its window.
static int plot_quality(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, "quality", &dat, &gp) != 0) return -1;
    const cJSON *r, *runs = rep_get(tr, RF_TRACE_RUNS);
    char set[AHA_SETTINGS_MAX], tset[AHA_SETTINGS_MAX], how[1100], fam[64], fams[AHA_TRACE_MAX_RUNS][64];
    int nf, windows = quality_families(runs, fams, &nf);
    aha_report_settings(tr, set, sizeof set);
    aha_plot_title_settings(tr, tset, sizeof tset);
    const char *router = rep_str(tr, RF_TRACE_ROUTER); // the policy, or the grid's name
    if (!strcmp(router, "oracle")) snprintf(how, sizeof how, "oracle eps %g", rep_num_at(rep_get(tr, RF_TRACE_EPS), 0));
    else snprintf(how, sizeof how, "%s", router);
    quality_point *pts = aha_calloc((size_t)cJSON_GetArraySize(runs) + 1, sizeof *pts, "quality points");
    if (!pts) {
        fclose(dat), fclose(gp);
        return -1;
    }
    fprintf(dat, "# routed runs (%s; %s), a block per policy: window, fraction global (all decisions), "
                 "perplexity change (%%), mean KL (nats), the grid's number (NaN: none)\n", how, set);
    aha_plot_terminal(gp, "quality", o);
    fprintf(gp, "set xlabel 'fraction of decisions routed global (all decisions)'\nset ylabel 'perplexity change vs full (%%)'\n"
                "set y2label 'mean KL(full || routed) (nats)'\nset ytics nomirror\nset y2tics\nset format y2 '%%.1e'\nset grid\n"
                "set key below\nset offsets 0.02, 0.02, graph 0.08, graph 0.05\n"
                "set title \"Quality vs sparsity (fraction global over all decisions; %s)\\nrouted by %s\" noenhanced\nplot ",
            tset, how);
    for (int k = 0; k < nf; k++) {
        int n = 0, param = 0;
        cJSON_ArrayForEach(r, runs) {
            aha_frontier_family(rep_str(r, RF_RUN_POLICY), fam, sizeof fam);
            if (routed(r) && !strcmp(fam, fams[k]))
                pts[n].run = r, pts[n++].x = frac(r, RF_RUN_GLOBAL_ALL), param |= rep_has(r, RF_RUN_PARAM);
        }
        qsort(pts, (size_t)n, sizeof *pts, by_fraction);
        fprintf(dat, "%s# policy %s\n", k ? "\n\n" : "", fams[k]);
        for (int i = 0; i < n; i++)
            fprintf(dat, "%d %.17g %.17g %.17g %.17g\n", rep_int(pts[i].run, RF_RUN_WINDOW), pts[i].x,
                    100 * rep_num(pts[i].run, RF_RUN_PPL_CHANGE), rep_num(pts[i].run, RF_RUN_MEAN_KL),
                    rep_num(pts[i].run, RF_RUN_PARAM));
        const char *label = !param ? "sprintf('w=%d', $1)" : windows ? "sprintf('%g w=%d', $5, $1)" : "sprintf('%g', $5)";
        fprintf(gp, "%s'quality.dat' index %d using 2:3 with linespoints lw 2 pt 7 lc %d title '%s: perplexity change', "
                    "'' index %d using 2:4 axes x1y2 with linespoints lw 2 dt 2 pt 5 lc %d title '%s: mean KL', "
                    "'' index %d using 2:3:(%s) with labels offset 0,1 notitle",
                k ? ", " : "", k, k + 1, fams[k], k, k + 1, fams[k], k, label);
    }
    fputc('\n', gp);
    free(pts);
    return aha_plot_render(gp, dat, dir, "quality");
}

int aha_plot_layer_windows(const cJSON *tr, int *pick) {
    int nw = rep_len(tr, RF_TRACE_WINDOWS), np = nw < 4 ? nw : 4;
    for (int k = 0; k < np; k++) pick[k] = np == 1 ? 0 : k * (nw - 1) / (np - 1); // spread, ends included
    return np;
}

// 6. Per-layer global rate (oracle, first eps, t >= w) at up to 4 windows.
static int plot_layers(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, "layers", &dat, &gp) != 0) return -1;
    const cJSON *r0 = rep_at(tr, RF_TRACE_ROUTERS, 0);
    int pick[4], np = aha_plot_layer_windows(tr, pick), L = rep_int(tr, RF_TRACE_N_LAYERS);
    double eps = rep_num(r0, RF_ROUTER_EPS);
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(dat, "# fraction global per layer (oracle eps %g, decisions with t >= w; %s)\n# layer", eps, set);
    for (int k = 0; k < np; k++) fprintf(dat, " w%d", window_at(tr, pick[k]));
    fputc('\n', dat);
    for (int l = 0; l < L; l++) { // natively local layers: no bars
        fprintf(dat, "%d", l);
        for (int k = 0; k < np; k++)
            fprintf(dat, " %.17g", aha_report_layer_window(tr, l) ? NAN
                                   : frac(rep_at(rep_at(r0, RF_ROUTER_WINDOWS, pick[k]), RF_RW_PER_LAYER, l), RF_PAIR_T_GE_W));
        fputc('\n', dat);
    }
    char loc[512], tset[AHA_SETTINGS_MAX];
    local_list(tr, loc, sizeof loc);
    aha_plot_title_settings(tr, tset, sizeof tset);
    aha_plot_terminal(gp, "layers", o);
    fprintf(gp, "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.85 border -1\n"
                "set boxwidth 0.9\nset xlabel 'layer'\nset ylabel 'fraction global'\nset yrange [0:1.05]\n"
                "set grid ytics\nset key outside right top\nset xtics 0,%d\n"
                "set title \"Global rate per layer (oracle eps %g, decisions with t >= w; %s%s%s)\" noenhanced\nplot ",
            L > 16 ? 2 : 1, eps, tset, loc[0] ? "; no bars: natively local layers " : "", loc);
    for (int k = 0; k < np; k++)
        fprintf(gp, "'layers.dat' using %d title 'w = %d'%s", k + 2, window_at(tr, pick[k]), k + 1 < np ? ", " : "\n");
    return aha_plot_render(gp, dat, dir, "layers");
}

int aha_plot_windows(const cJSON *tr, const aha_plot_opts *o, int *heat, int *raster) {
    int nw = rep_len(tr, RF_TRACE_WINDOWS);
    *heat = *raster = o->window ? aha_report_window(tr, o->window) : nw / 2;
    if (*heat < 0) return -1;
    // the raster shows the first tokens: by default the largest window that
    // leaves half of them past it, so that the oracle has decisions to make
    for (int i = 0; !o->window && i < nw; i++)
        if (i == 0 || window_at(tr, i) <= o->tokens / 2) *raster = i;
    return 0;
}

int aha_plot_all(const cJSON *rep, const char *trace_path, const char *dir, const aha_plot_opts *o,
                 const char **names, int *n) {
    const cJSON *tr = rep_at(rep, RF_REPORT_TRACES, 0), *r;
    int wi, ri;
    rep_read_reset();
    if (aha_plot_windows(tr, o, &wi, &ri) != 0) return -1;
    int any_routed = 0;
    cJSON_ArrayForEach(r, rep_get(tr, RF_TRACE_RUNS)) any_routed |= routed(r);
    *n = 0;
#define FIG(name, call)                  \
    do {                                 \
        if ((call) != 0) return -1;      \
        names[(*n)++] = name;            \
    } while (0)
    FIG("sparsity", plot_sparsity(tr, dir, o));
    FIG("ccdf", plot_ccdf(tr, dir, o));
    FIG("heatmap", plot_heatmap(tr, dir, wi, o));
    FIG("raster", aha_plot_raster(tr, trace_path, dir, ri, o));
    if (any_routed) FIG("quality", plot_quality(tr, dir, o));
    FIG("layers", plot_layers(tr, dir, o));
    if (rep_has(tr, RF_TRACE_TOKENS)) FIG("tokens", aha_plot_tokens(tr, dir, wi, o));
    if (rep_has(tr, RF_TRACE_TOKENS)) FIG("classes", aha_plot_classes(tr, dir, wi, o));
    if (rep_len(rep_get(tr, RF_TRACE_FRONTIER), RF_FR_LINES)) FIG("frontier", aha_plot_frontier(tr, dir, o));
    if (rep_true(rep_get(tr, RF_TRACE_MASS), RF_MASS_RECORDED)) FIG("mass", aha_plot_mass(tr, dir, o));
#undef FIG
    return 0;
}

// Every figure aha_plot_all may make, then aha_plot_compare's two: the
// files of these are what a figure folder may hold (--force replaces it whole).
static const char *const figures[] = {"sparsity", "ccdf",   "heatmap",  "raster", "quality",          "layers",
                                      "tokens",   "classes", "frontier", "mass",   "compare_sparsity", "compare_ccdf"};
enum { N_FIGURES = sizeof figures / sizeof *figures };

int aha_plot_out(aha_pub *p, const char *flag, const char *dir, int force, const char *const *traces, int n) {
    static const char *const ext[] = {"dat", "gp", "png", "svg", "pdf", "log"};
    enum { N_EXT = sizeof ext / sizeof *ext };
    static char files[N_FIGURES * N_EXT][64];
    static const char *names[N_FIGURES * N_EXT + 1] = {"view.html"}; // --html's page, then the figures' files
    for (int i = 0, k = 1; i < N_FIGURES; i++)
        for (int e = 0; e < N_EXT; e++, k++) {
            snprintf(files[k - 1], sizeof files[k - 1], "%s.%s", figures[i], ext[e]);
            names[k] = files[k - 1];
        }
    return aha_traces_pub(p, flag, dir, names, N_FIGURES * N_EXT + 1, force, traces, n);
}

static int count_labels(const char *s) {
    int n = 1;
    for (; *s; s++) n += *s == ',';
    return n;
}

int aha_cmd_plot(int argc, char **argv) {
    const char *out = NULL, *labels = NULL;
    aha_plot_format format = AHA_PLOT_PNG;
    int window = 0, doc = 0, tokens = 96, width = 800, height = 500, compare = 0, force = 0;
    int html = 0, html_from = 0, html_tokens = AHA_VIEW_TOKENS;
    const char *delta_s = AHA_FRONTIER_DELTA;
    double delta = 0;
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &out, "output directory (required)", NULL},
        {"--force", FLAG_BOOL, &force, "replace -o DIR, a figure folder, whole", NULL},
        AHA_FLAG_ENUM("--out-format", format, aha_plot_formats, "the figures' file format"),
        AHA_FLAG_ALIAS("--format", "--out-format"),
        {"--window", FLAG_INT, &window, "window of the heatmap, tokens, classes and raster; 0: the middle recorded one (heatmap, tokens, classes), the largest <= tokens/2 (raster)", ">= 0"},
        {"--doc", FLAG_INT, &doc, "document of the raster and of view.html", ">= 0"},
        {"--tokens", FLAG_INT, &tokens, "raster: first tokens of the document shown", ">= 1"},
        {"--width", FLAG_INT, &width, "figure width in pixels", ">= 100"},
        {"--height", FLAG_INT, &height, "figure height in pixels", ">= 100"},
        {"--compare", FLAG_BOOL, &compare, "traces side by side (one line each) instead of shards of one run", NULL},
        {"--delta", FLAG_STR, &delta_s, "frontier: the perplexity change line (0.01 = +1%)", NULL},
        {"--html", FLAG_BOOL, &html,
         "also view.html: the document's routing token by token, in a browser (one file, nothing fetched)", NULL},
        {"--html-from", FLAG_INT, &html_from, "view.html: the document's first position shown", ">= 0"},
        {"--html-tokens", FLAG_INT, &html_tokens,
         "view.html: at most this many tokens from there; 0: to the document's end", ">= 0"},
        {"--label", FLAG_STR, &labels, "with --compare: A,B,... one legend per trace; none: the model and the shortest path suffix that tells the files apart", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    static const char *pos[AHA_TRACES_POS]; // static: thousands of paths
    int n;
    int rc = aha_traces_parse(argc, argv, "usage: aha plot TRACE... -o DIR [--out-format png|svg|pdf] [--compare [--label A,B,...]]",
                              flags, pos, &n);
    if (rc) return rc < 0 ? 0 : rc;
    if (!out) aha_err("-o DIR is required");
    else if (aha_frontier_delta(delta_s, &delta) != 0)
        ; // its message is set
    else if (compare && n < 2)
        aha_err("--compare needs at least two traces");
    else if (labels && !compare)
        aha_err("--label names the traces of --compare");
    else if (labels && count_labels(labels) != n)
        aha_err("--label: %d labels for %d traces (one each, comma-separated)", count_labels(labels), n);
    else if (html && compare)
        aha_err("--html views one run: not with --compare");
    else if (!html && (html_from || html_tokens != AHA_VIEW_TOKENS))
        aha_err("--html-from and --html-tokens choose what view.html shows: add --html");
    else rc = 1;
    aha_plot_opts o = {format, width, height, window, doc, tokens, labels};
    aha_view_opts vo = {doc, html_from, html_tokens, 0};
    if (rc != 1 || (html && aha_view_check(&vo, pos[0]) != 0)) return aha_cli_fail();
    aha_pub pub; // drawn beside -o DIR, then in its place whole
    if (aha_plot_out(&pub, "-o", out, force, pos, n) != 0) return aha_cli_fail();
    // without --compare: shards of one run; the report's defaults for the token tables
    aha_report_what what = {compare, 0, !compare, 5, 20, !compare, delta};
    cJSON *rep = aha_report_build(pos, n, &what);
    const cJSON *tr;
    cJSON_ArrayForEach(tr, rep_get(rep, RF_REPORT_TRACES))
        if (rep_num(tr, RF_TRACE_DECISIONS) == 0) { // a figure of nothing
            aha_err("%s: nothing to plot: no decisions (the trace holds no documents: a shard of a run that had "
                    "none, say; plot it with the run's other shards)", aha_report_file(tr));
            cJSON_Delete(rep);
            rep = NULL;
            break;
        }
    const char *names[AHA_PLOT_MAX];
    int nf = 0;
    rc = !rep ? -1
         : compare ? aha_plot_compare(rep, pub.tmp, &o, names, &nf)
                   : aha_plot_all(rep, pos[0], pub.tmp, &o, names, &nf);
    int raster_window;
    if (rc == 0 && html) // the heatmap's window selected at first
        rc = aha_plot_windows(rep_at(rep, RF_REPORT_TRACES, 0), &o, &vo.window, &raster_window) != 0 ||
             aha_plot_view(rep, pos[0], pub.tmp, &vo) != 0;
    cJSON_Delete(rep);
    if (rc != 0 || aha_pub_commit(&pub) != 0) {
        aha_pub_abort(&pub);
        return aha_cli_fail();
    }
    for (int i = 0; i < nf; i++) printf("%s/%s.%s\n", out, names[i], aha_enum_name(&aha_plot_formats, format));
    if (html) printf("%s/view.html\n", out);
    return 0;
}
