// The mass figure, from the JSON report's "mass" (analyze/mass.h): where the
// attention mass goes, as stacked bars (sinks, window, far context) per window
// and layer group; top: decisions with t >= w + sinks, bottom: those of them
// the oracle calls global (d_eps > w at the first eps).
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

int aha_plot_mass(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    const cJSON *ms = get(tr, "mass"), *groups = get(ms, "groups"), *w;
    FILE *dat, *gp;
    if (aha_plot_open(dir, "mass", &dat, &gp) != 0) return -1;
    char set[AHA_SETTINGS_MAX], sub[192 + AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    snprintf(sub, sizeof sub, "mean mass per decision; oracle eps %g; sinks = keys 0..%.0f; %s", num(ms, "eps"),
             num(ms, "sinks") - 1, set);
    fprintf(dat, "# where attention mass goes (%s)\n# window group | decisions with t >= w + sinks: decisions sinks "
                 "window far | oracle-global (d_eps > w): decisions fraction sinks window far\n", sub);
    const int ng = cJSON_GetArraySize(groups);
    cJSON_ArrayForEach(w, get(ms, "windows")) {
        for (int k = 0; k < ng; k++) { // all layers first, then the groups
            const int g = (k + ng - 1) % ng;
            const cJSON *x = at(get(w, "groups"), g), *gl = get(x, "global");
            fprintf(dat, "%.0f ", num(w, "window"));
            for (const char *p = get(at(groups, g), "name")->valuestring; *p; p++) fputc(*p == ' ' ? '_' : *p, dat);
            fprintf(dat, " %.0f %.17g %.17g %.17g %.0f %.17g %.17g %.17g %.17g\n", num(x, "decisions"), num(x, "sinks"),
                    num(x, "window"), num(x, "far"), num(gl, "decisions"), num(gl, "fraction"), num(gl, "sinks"),
                    num(gl, "window"), num(gl, "far"));
        }
    }
    aha_plot_terminal(gp, "mass", o);
    fprintf(gp, "set multiplot layout 2,1 title \"Where attention mass goes: sinks vs window vs far context\\n{/*0.8 %s}\"\n"
                "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
                "set boxwidth 0.8\nset yrange [0:1]\nset ylabel 'mean mass'\nset grid ytics\nset key outside right top\n"
                "set xtics rotate by -30 noenhanced font ',8'\nlab(w, g) = sprintf('w%%d %%s', w, g)\n", sub);
    static const char *titles[2] = {"decisions with t >= w + sinks (window and sinks do not overlap)",
                                    "those the oracle calls global (d_eps > w)"};
    for (int s = 0; s < 2; s++) {
        const int c = s ? 9 : 4; // first column of sinks, window, far
        fprintf(gp, "set title '%s' font ',9' noenhanced\nplot 'mass.dat' using %d:xtic(lab($1, strcol(2))) lc 1 title 'sinks', "
                    "'' using %d lc 2 title 'window', '' using %d lc 3 title 'far context'\n",
                titles[s], c, c + 1, c + 2);
    }
    fprintf(gp, "unset multiplot\n");
    return aha_plot_render(gp, dat, dir, "mass");
}
