// aha plot --compare: several traces in one figure each, one line per trace
// (the first eps's oracle): how much full attention each model / dataset
// needs per window, and the long tail of its dependency distance.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "figure.h"
#include "report_schema.h"
#include "report_text.h"

#define LABEL_MAX 256

// The last k '/'-separated components of path p (all of it when it has fewer).
static const char *path_suffix(const char *p, int k) {
    const char *s = p + strlen(p);
    for (; s > p; s--)
        if (s[-1] == '/' && --k == 0) break;
    return s;
}

static const char *base(const char *p) { return path_suffix(p, 1)[0] ? path_suffix(p, 1) : p; }

// Gnuplot single-quoted strings: no quotes or backslashes inside.
static void unquote(char *s) {
    for (; *s; s++)
        if (*s == '\'' || *s == '\\') *s = '"';
}

// Legends, one per trace: --label's, or "model (file)" with the shortest
// path suffix of the file that no other trace of the same model shares
// (two trace.h5 become a/trace.h5, b/trace.h5); the same file twice gets #k.
static void labels(const cJSON *rep, const aha_plot_opts *o, char (*lab)[LABEL_MAX]) {
    const cJSON *trs = rep_get(rep, RF_REPORT_TRACES);
    int n = cJSON_GetArraySize(trs);
    if (o->labels) {
        const char *p = o->labels;
        for (int i = 0; i < n; i++) {
            size_t len = strcspn(p, ",");
            snprintf(lab[i], LABEL_MAX, "%.*s", (int)len, p);
            p += len + (p[len] == ',');
        }
    } else {
        for (int i = 0; i < n; i++) {
            const cJSON *ti = cJSON_GetArrayItem(trs, i);
            const char *mi = rep_str(ti, RF_TRACE_MODEL), *fi = aha_report_file(ti);
            int k = 1;
            for (int j = 0; j < n; j++) {
                const cJSON *tj = cJSON_GetArrayItem(trs, j);
                const char *mj = rep_str(tj, RF_TRACE_MODEL), *fj = aha_report_file(tj);
                if (j == i || strcmp(base(mi), base(mj)) != 0) continue;
                // longer suffixes of two paths differ once shorter ones do: grow k until this pair differs
                while (path_suffix(fi, k) != fi && strcmp(path_suffix(fi, k), path_suffix(fj, k)) == 0) k++;
            }
            snprintf(lab[i], LABEL_MAX, "%s (%s)", base(mi), path_suffix(fi, k));
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(lab[i], lab[j]) == 0) {
                    size_t len = strlen(lab[i]);
                    snprintf(lab[i] + len, LABEL_MAX - len, " #%d", i + 1);
                    break;
                }
    }
    for (int i = 0; i < n; i++) unquote(lab[i]);
}

// One block per trace (gnuplot's `index k`), then its lines: the sparsity
// over all decisions (solid) and over t >= w (dashed), or its CCDF. The key
// goes below the plot, a line per curve, its legend first: inside the plot
// gnuplot drops a key too wide for it without a word.
static int compare_fig(const cJSON *rep, char (*lab)[LABEL_MAX], const char *dir, const char *name,
                       const aha_plot_opts *o, int ccdf) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, name, &dat, &gp) != 0) return -1;
    const cJSON *tr, *traces = rep_get(rep, RF_REPORT_TRACES);
    int k = 0, max_d = 2, local = 0;
    cJSON_ArrayForEach(tr, traces) local |= aha_report_has_local(tr); // then every legend says what it counts
    cJSON_ArrayForEach(tr, traces) {
        char set[AHA_SETTINGS_MAX], counted[72];
        aha_report_settings(tr, set, sizeof set);
        aha_plot_layers_note(tr, local, counted, sizeof counted);
        const cJSON *r0 = rep_at(tr, RF_TRACE_ROUTERS, 0), *lt = rep_at(tr, RF_TRACE_LONG_TAIL, 0);
        fprintf(dat, "%s# %s%s: oracle eps %g, %s\n", k ? "\n\n" : "", lab[k], counted, rep_num(r0, RF_ROUTER_EPS), set);
        k++;
        if (ccdf) {
            const int d = rep_int(tr, RF_TRACE_MAX_D);
            max_d = d > max_d ? d : max_d;
            fprintf(dat, "# w  P(d_eps > w) over all decisions\n");
            for (int w = 1; w <= d; w++) fprintf(dat, "%d %.17g\n", w, rep_num_at(rep_get(lt, RF_LT_CCDF), w));
        } else {
            const cJSON *w;
            fprintf(dat, "# window  fraction_global_all  fraction_global_t_ge_w\n");
            cJSON_ArrayForEach(w, rep_get(r0, RF_ROUTER_WINDOWS))
                fprintf(dat, "%d %.17g %.17g\n", rep_int(w, RF_RW_WINDOW), rep_num(rep_get(w, RF_RW_ALL), RF_FRAC_FRACTION),
                        rep_num(rep_get(w, RF_RW_T_GE_W), RF_FRAC_FRACTION));
        }
    }
    aha_plot_terminal(gp, name, o);
    if (ccdf)
        fprintf(gp, "set logscale xy\nset xrange [1:%d]\nset xlabel 'window w (tokens)'\nset ylabel 'P(d_{eps} > w)'\n"
                    "set format y '10^{%%L}'\nset grid\nset key below left Left reverse maxcols 1 font ',8'\nset title 'Long tail of the dependency "
                    "distance, side by side (oracle, first eps, all decisions; each over its global layers)'\nplot ", max_d);
    else
        fprintf(gp, "set logscale x 2\nset xlabel 'local window w (tokens)'\nset ylabel 'fraction needing full attention'\n"
                    "set yrange [0:1.05]\nset grid\nset key below left Left reverse maxcols 1 font ',8'\nset title \"Sparsity side by side "
                    "(oracle, first eps; each over its global layers)\\n{/*0.8 solid: all decisions (the paper's metric); dashed: decisions with t >= w}\"\n"
                    "plot ");
    k = 0;
    cJSON_ArrayForEach(tr, traces) { // each legend says which layers its curve counts
        char set[AHA_SETTINGS_MAX], counted[72];
        aha_report_settings_only(tr, set, sizeof set);
        aha_plot_layers_note(tr, local, counted, sizeof counted);
        double eps = rep_num(rep_at(tr, RF_TRACE_ROUTERS, 0), RF_ROUTER_EPS);
        if (ccdf)
            fprintf(gp, "%s'%s.dat' index %d using 1:($2 > 0 ? $2 : NaN) with lines lw 2 title '%s%s: eps %g, %s' noenhanced",
                    k ? ", " : "", name, k, lab[k], counted, eps, set);
        else
            for (int tw = 0; tw < 2; tw++)
                fprintf(gp, "%s'%s.dat' index %d using 1:%d with linespoints lw 2 pt %d dt %d lc %d title '%s%s: eps %g, %s, %s' "
                            "noenhanced", k || tw ? ", " : "", name, k, 2 + tw, tw ? 6 : 7, tw ? 2 : 1, k + 1, lab[k], counted,
                        eps, set, aha_report_subset(tw));
        k++;
    }
    fputc('\n', gp);
    return aha_plot_render(gp, dat, dir, name);
}

int aha_plot_compare(const cJSON *rep, const char *dir, const aha_plot_opts *o, const char **names, int *n) {
    int nt = rep_len(rep, RF_REPORT_TRACES);
    rep_read_reset();
    char (*lab)[LABEL_MAX] = aha_calloc((size_t)nt, sizeof *lab, "legends");
    int rc = lab ? 0 : -1;
    if (lab) labels(rep, o, lab);
    *n = 0;
    if (rc == 0 && (rc = compare_fig(rep, lab, dir, "compare_sparsity", o, 0)) == 0) names[(*n)++] = "compare_sparsity";
    if (rc == 0 && (rc = compare_fig(rep, lab, dir, "compare_ccdf", o, 1)) == 0) names[(*n)++] = "compare_ccdf";
    free(lab);
    return rc;
}
