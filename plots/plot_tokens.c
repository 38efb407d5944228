// The token figures, from the JSON report's "tokens" (analyze/tokens.h):
//   tokens   global rate by position in the context (log2 buckets), a line per layer group
//   classes  global rate by token class, a bar per layer group
// Both: oracle at the first eps, decisions with t >= w, at one window.
#include <math.h>
#include <string.h>

#include "figure.h"
#include "report_schema.h"
#include "report_text.h"

// Of a list per layer group (ng of them), group k in the figures' order: all
// layers (the last group) first, then the thirds.
static const cJSON *group_at(const cJSON *a, int k, int ng) { return ng ? cJSON_GetArrayItem(a, (k + ng - 1) % ng) : NULL; }

// The rows of one figure's .dat: key columns from label(i), the tokens at
// t >= w, then the rate per layer group (all layers first, then the thirds).
static void dat_rows(FILE *dat, const cJSON *tk, const cJSON *per_group, int n, void (*label)(FILE *, const cJSON *, int)) {
    const cJSON *groups = rep_get(tk, RF_TOK_GROUPS);
    int ng = cJSON_GetArraySize(groups);
    fprintf(dat, " tokens");
    for (int k = 0; k < ng; k++) {
        const char *name = rep_str(group_at(groups, k, ng), RF_GROUP_NAME);
        fputc(' ', dat);
        for (const char *p = name; *p; p++) fputc(*p == ' ' ? '_' : *p, dat);
    }
    fputc('\n', dat);
    for (int i = 0; i < n; i++) {
        label(dat, tk, i);
        fprintf(dat, " %.0f", rep_num(rep_at(cJSON_GetArrayItem(per_group, 0), RF_KEYED_T_GE_W, i), RF_KF_OCCURRENCES));
        for (int k = 0; k < ng; k++)
            fprintf(dat, " %.17g", rep_num(rep_at(group_at(per_group, k, ng), RF_KEYED_T_GE_W, i), RF_FRAC_FRACTION));
        fputc('\n', dat);
    }
}

static void bucket_label(FILE *f, const cJSON *tk, int i) {
    const cJSON *b = rep_at(tk, RF_TOK_POSITION_BUCKETS, i);
    fprintf(f, "%.0f %.0f", rep_num_at(b, 0), rep_num_at(b, 1));
}
static void class_label(FILE *f, const cJSON *tk, int i) { fputs(rep_str_at(rep_get(tk, RF_TOK_CLASSES), i), f); }

// The title's second line: what the rates count.
static void subtitle(const cJSON *tr, const cJSON *tk, int w, char *buf, size_t size) {
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    snprintf(buf, size, "oracle eps %g, w = %d, %s; %s", rep_num(tk, RF_TOK_EPS), w, aha_report_subset(1), set);
}

static void group_titles(FILE *gp, const cJSON *tk, int first_col, const char *style_fmt) {
    const cJSON *groups = rep_get(tk, RF_TOK_GROUPS);
    int ng = cJSON_GetArraySize(groups);
    for (int k = 0; k < ng; k++) {
        fprintf(gp, style_fmt, first_col + k, k + 1);
        fprintf(gp, " title '%s'%s", rep_str(group_at(groups, k, ng), RF_GROUP_NAME), k + 1 < ng ? ", " : "\n");
    }
}

// One of the two figures at window index wi: by position (classes 0) or by class.
static int token_fig(const cJSON *tr, const char *dir, int wi, const aha_plot_opts *o, int classes) {
    FILE *dat, *gp;
    const char *name = classes ? "classes" : "tokens";
    const cJSON *tk = rep_get(tr, RF_TRACE_TOKENS), *x = rep_at(tk, RF_TOK_WINDOWS, wi);
    if (aha_plot_open(dir, name, &dat, &gp) != 0) return -1;
    char sub[96 + AHA_SETTINGS_MAX];
    subtitle(tr, tk, rep_int(x, RF_TW_WINDOW), sub, sizeof sub);
    if (classes) {
        fprintf(dat, "# global rate by token class (%s); NaN: no tokens of the class at t >= w\n# class", sub);
        dat_rows(dat, tk, rep_get(x, RF_TW_CLASS), rep_len(tk, RF_TOK_CLASSES), class_label);
    } else {
        fprintf(dat, "# global rate by position in the context, log2 buckets [lo, hi) (%s); NaN: no tokens at t >= w\n# lo hi", sub);
        dat_rows(dat, tk, rep_get(x, RF_TW_POSITION), rep_len(tk, RF_TOK_POSITION_BUCKETS), bucket_label);
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
