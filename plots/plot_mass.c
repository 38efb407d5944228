// The mass figure, from the JSON report's "mass" (analyze/mass.h): where the
// attention mass goes, as stacked bars (sinks, window, far context) per window
// and layer group; top: decisions with t >= w + sinks, bottom: those of them
// the oracle calls global (d_eps > w at the first eps).
#include <math.h>
#include <string.h>

#include "figure.h"
#include "report_schema.h"
#include "report_text.h"

int aha_plot_mass(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    const cJSON *ms = rep_get(tr, RF_TRACE_MASS), *groups = rep_get(ms, RF_MASS_GROUPS), *w;
    FILE *dat, *gp;
    if (aha_plot_open(dir, "mass", &dat, &gp) != 0) return -1;
    char set[AHA_SETTINGS_MAX], sub[192 + AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    snprintf(sub, sizeof sub, "mean mass per decision; oracle eps %g; sinks = keys 0..%d; %s", rep_num(ms, RF_MASS_EPS),
             rep_int(ms, RF_MASS_SINKS) - 1, set);
    fprintf(dat, "# where attention mass goes (%s)\n# window group | decisions with t >= w + sinks: decisions sinks "
                 "window far | oracle-global (d_eps > w): decisions fraction sinks window far\n", sub);
    const int ng = cJSON_GetArraySize(groups);
    cJSON_ArrayForEach(w, rep_get(ms, RF_MASS_WINDOWS)) {
        for (int k = 0; k < ng; k++) { // all layers first, then the groups
            const int g = (k + ng - 1) % ng;
            const cJSON *x = rep_at(w, RF_MW_GROUPS, g), *gl = rep_get(x, RF_MG_GLOBAL);
            fprintf(dat, "%d ", rep_int(w, RF_MW_WINDOW));
            for (const char *p = rep_str(cJSON_GetArrayItem(groups, g), RF_GROUP_NAME); *p; p++) fputc(*p == ' ' ? '_' : *p, dat);
            fprintf(dat, " %.0f %.17g %.17g %.17g %.0f %.17g %.17g %.17g %.17g\n", rep_num(x, RF_SPLIT_DECISIONS),
                    rep_num(x, RF_SPLIT_SINKS), rep_num(x, RF_SPLIT_WINDOW), rep_num(x, RF_SPLIT_FAR),
                    rep_num(gl, RF_SPLIT_DECISIONS), rep_num(gl, RF_MGL_FRACTION), rep_num(gl, RF_SPLIT_SINKS),
                    rep_num(gl, RF_SPLIT_WINDOW), rep_num(gl, RF_SPLIT_FAR));
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
