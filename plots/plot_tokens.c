// The token figures, from the JSON report's "tokens" (analyze/tokens.h):
//   tokens   global rate by position in the context (log2 buckets), a line per layer group
//   classes  global rate by token class, a bar per layer group
// Both: oracle at the first eps, decisions with t >= w, at one window.
#include <math.h>
#include <string.h>

#include "plot.h"
#include "report.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const cJSON *at(const cJSON *a, int i) { return cJSON_GetArrayItem(a, i); }
static double num(const cJSON *o, const char *k) {
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// The rows of one figure's .dat: key columns from label(i), the tokens at
// t >= w, then the rate per layer group (all layers first, then the thirds).
static void dat_rows(FILE *dat, const cJSON *tk, const cJSON *per_group, int n, void (*label)(FILE *, const cJSON *, int)) {
    int ng = cJSON_GetArraySize(get(tk, "groups"));
    fprintf(dat, " tokens");
    for (int k = 0; k < ng; k++) {
        const char *name = get(at(get(tk, "groups"), (k + ng - 1) % ng), "name")->valuestring;
        fputc(' ', dat);
        for (const char *p = name; *p; p++) fputc(*p == ' ' ? '_' : *p, dat);
    }
    fputc('\n', dat);
    for (int i = 0; i < n; i++) {
        label(dat, tk, i);
        fprintf(dat, " %.0f", num(at(get(at(per_group, 0), "t_ge_w"), i), "occurrences"));
        for (int k = 0; k < ng; k++) fprintf(dat, " %.17g", num(at(get(at(per_group, (k + ng - 1) % ng), "t_ge_w"), i), "fraction"));
        fputc('\n', dat);
    }
}

static void bucket_label(FILE *f, const cJSON *tk, int i) {
    const cJSON *b = at(get(tk, "position_buckets"), i);
    fprintf(f, "%.0f %.0f", at(b, 0)->valuedouble, at(b, 1)->valuedouble);
}
static void class_label(FILE *f, const cJSON *tk, int i) { fputs(at(get(tk, "classes"), i)->valuestring, f); }

// The title's second line: what the rates count.
static void subtitle(const cJSON *tr, const cJSON *tk, int w, char *buf, size_t size) {
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    snprintf(buf, size, "oracle eps %g, w = %d, %s; %s", num(tk, "eps"), w, aha_report_subset(1), set);
}

static void group_titles(FILE *gp, const cJSON *tk, int first_col, const char *style_fmt) {
    int ng = cJSON_GetArraySize(get(tk, "groups"));
    for (int k = 0; k < ng; k++) {
        fprintf(gp, style_fmt, first_col + k, k + 1);
        fprintf(gp, " title '%s'%s", get(at(get(tk, "groups"), (k + ng - 1) % ng), "name")->valuestring, k + 1 < ng ? ", " : "\n");
    }
}

// One of the two figures at window index wi: by position (classes 0) or by class.
static int token_fig(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o, int classes) {
    FILE *dat, *gp;
    const char *name = classes ? "classes" : "tokens";
    const cJSON *tk = get(tr, "tokens"), *x = at(get(tk, "windows"), wi);
    if (aha_plot_open(dir, name, &dat, &gp) != 0) return -1;
    char sub[96 + AHA_SETTINGS_MAX];
    subtitle(tr, tk, (int)num(x, "window"), sub, sizeof sub);
    if (classes) {
        fprintf(dat, "# global rate by token class (%s); NaN: no tokens of the class at t >= w\n# class", sub);
        dat_rows(dat, tk, get(x, "class"), cJSON_GetArraySize(get(tk, "classes")), class_label);
    } else {
        fprintf(dat, "# global rate by position in the context, log2 buckets [lo, hi) (%s); NaN: no tokens at t >= w\n# lo hi", sub);
        dat_rows(dat, tk, get(x, "position"), cJSON_GetArraySize(get(tk, "position_buckets")), bucket_label);
    }
    aha_plot_terminal(gp, name, o);
    if (classes) {
        fprintf(gp, "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.85 border -1\n"
                    "set boxwidth 0.9\nset xtics noenhanced\nset xlabel 'token class (docs/reports.md: which tokens need global attention)'\n"
                    "set ylabel 'fraction global'\nset yrange [0:1.05]\nset grid ytics\nset key outside right top\n"
                    "set title \"Global rate by token class\\n{/*0.8 %s}\"\nplot ", sub);
        group_titles(gp, tk, 3, "'classes.dat' using %d:xtic(1) lc %d");
    } else {
        fprintf(gp, "set logscale x 2\nset xlabel 'position t in the context (bucket start, log2 buckets [t, 2t))'\n"
                    "set ylabel 'fraction global'\nset yrange [0:1.05]\nset grid\nset key bottom right\n"
                    "set title \"Global rate by position\\n{/*0.8 %s}\"\nplot ", sub);
        // bucket [0, 1) sits at x = 0, off a log axis: it is always local (t < w), so nothing is lost
        group_titles(gp, tk, 4, "'tokens.dat' using ($1 > 0 ? $1 : NaN):%d with linespoints lw 2 pt 7 lc %d");
    }
    return aha_plot_render(gp, dat, dir, name);
}

int aha_plot_tokens(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o) { return token_fig(tr, dir, wi, o, 0); }
int aha_plot_classes(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o) { return token_fig(tr, dir, wi, o, 1); }
