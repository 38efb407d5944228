// aha plot --compare: several traces in one figure each, one line per trace
// (the first eps's oracle): how much full attention each model / dataset
// needs per window, and the long tail of its dependency distance.
#include <stdio.h>
#include <string.h>

#include "plot.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const cJSON *at(const cJSON *a, int i) { return cJSON_GetArrayItem(a, i); }

// "model (file)" by their last path components, without quotes (gnuplot strings).
static void label(const cJSON *tr, char *buf, size_t size) {
    const char *m = get(tr, "model")->valuestring, *f = at(get(tr, "files"), 0)->valuestring;
    const char *ms = strrchr(m, '/'), *fs = strrchr(f, '/');
    snprintf(buf, size, "%s (%s)", ms && ms[1] ? ms + 1 : m, fs ? fs + 1 : f);
    for (char *c = buf; *c; c++)
        if (*c == '\'' || *c == '\\') *c = '"';
}

// One block per trace (gnuplot's `index k`), then one line per block.
static int compare_fig(const cJSON *rep, const char *dir, const char *name, const aha_plot_opts *o, int ccdf) {
    FILE *dat, *gp;
    if (aha_plot_open(dir, name, &dat, &gp) != 0) return -1;
    const cJSON *tr;
    int k = 0, max_d = 2;
    cJSON_ArrayForEach(tr, get(rep, "traces")) {
        char lab[256];
        label(tr, lab, sizeof lab);
        const cJSON *r0 = at(get(tr, "routers"), 0), *lt = at(get(tr, "long_tail"), 0);
        fprintf(dat, "%s# %s: oracle eps %g\n", k++ ? "\n\n" : "", lab, get(r0, "eps")->valuedouble);
        if (ccdf) {
            const int d = get(tr, "max_d")->valueint;
            max_d = d > max_d ? d : max_d;
            fprintf(dat, "# w  P(d_eps > w)\n");
            for (int w = 1; w <= d; w++) fprintf(dat, "%d %.17g\n", w, at(get(lt, "ccdf"), w)->valuedouble);
        } else {
            const cJSON *w;
            fprintf(dat, "# window  fraction_global_all  fraction_global_t_ge_w\n");
            cJSON_ArrayForEach(w, get(r0, "windows"))
                fprintf(dat, "%d %.17g %.17g\n", get(w, "window")->valueint,
                        get(get(w, "all"), "fraction")->valuedouble, get(get(w, "t_ge_w"), "fraction")->valuedouble);
        }
    }
    aha_plot_terminal(gp, name, o);
    if (ccdf)
        fprintf(gp, "set logscale xy\nset xrange [1:%d]\nset xlabel 'window w (tokens)'\nset ylabel 'P(d_{eps} > w)'\n"
                    "set format y '10^{%%L}'\nset grid\nset key bottom left\nset title 'Long tail of the dependency "
                    "distance, side by side (oracle, first eps)'\nplot ", max_d);
    else
        fprintf(gp, "set logscale x 2\nset xlabel 'local window w (tokens)'\nset ylabel 'fraction needing full attention'\n"
                    "set yrange [0:1.05]\nset grid\nset key bottom left\nset title 'Sparsity side by side (oracle, first "
                    "eps, all decisions)'\nplot ");
    k = 0;
    cJSON_ArrayForEach(tr, get(rep, "traces")) {
        char lab[256];
        label(tr, lab, sizeof lab);
        fprintf(gp, "%s'%s.dat' index %d using 1:%s with %s lw 2 title '%s' noenhanced", k ? ", " : "", name, k,
                ccdf ? "($2 > 0 ? $2 : NaN)" : "2", ccdf ? "lines" : "linespoints pt 7", lab);
        k++;
    }
    fputc('\n', gp);
    return aha_plot_render(gp, dat, dir, name);
}

int aha_plot_compare(const cJSON *rep, const char *dir, const aha_plot_opts *o, const char **names, int *n) {
    *n = 0;
    if (compare_fig(rep, dir, "compare_sparsity", o, 0) != 0) return -1;
    names[(*n)++] = "compare_sparsity";
    if (compare_fig(rep, dir, "compare_ccdf", o, 1) != 0) return -1;
    names[(*n)++] = "compare_ccdf";
    return 0;
}
