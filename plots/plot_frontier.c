// The frontier figure: perplexity change (top row) and mean KL (bottom row)
// against fraction global (all decisions), one line per policy family, one
// column per window, with the delta line and the paper's operating point.
#include <math.h>

#include "figure.h"
#include "report_schema.h"
#include "report_text.h"
#include "trace_policy.h"

// The AHA paper's operating point (arXiv 2512.22562): OLMo-2-1B with AHA
// routers at w = 128 routes 11.6% of decisions global without performance loss.
#define PAPER_FRACTION 0.116
#define PAPER_CHANGE 0.0
#define PAPER_LABEL "paper: OLMo-2-1B AHA, w=128, 11.6% global, ~0% change"

// A colour per family, the same in every panel: its policy's (trace_policy.h).
static int family_color(const char *f) {
    const int k = aha_policy_find(f, -1);
    return k < 0 ? 8 : aha_policies[k].colour;
}

int aha_plot_frontier(const cJSON *tr, const char *dir, const aha_plot_opts *o) {
    const cJSON *fr = rep_get(tr, RF_TRACE_FRONTIER), *lines = rep_get(fr, RF_FR_LINES), *l, *p;
    FILE *dat, *gp;
    if (aha_plot_open(dir, "frontier", &dat, &gp) != 0) return -1;
    char set[AHA_SETTINGS_MAX], panel[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    aha_report_settings_only(tr, panel, sizeof panel);
    const double delta = 100 * rep_num(fr, RF_FR_DELTA);
    // One data block per line (gnuplot's index), then the reference point.
    fprintf(dat, "# frontier (%s): one block per window and policy; columns: fraction global (all decisions), "
                 "perplexity change (%%), mean KL (nats), fraction global (t >= w), param\n", set);
    int k = 0;
    cJSON_ArrayForEach(l, lines) {
        fprintf(dat, "%s# line %d: policy %s, w=%d\n", k ? "\n\n" : "", k, rep_str(l, RF_LINE_POLICY), rep_int(l, RF_LINE_WINDOW));
        cJSON_ArrayForEach(p, rep_get(l, RF_LINE_POINTS))
            fprintf(dat, "%.17g %.17g %.17g %.17g %.17g\n", rep_num(p, RF_POINT_FRACTION_ALL), 100 * rep_num(p, RF_POINT_PPL_CHANGE),
                    rep_num(p, RF_POINT_MEAN_KL), rep_num(p, RF_POINT_FRACTION_T_GE_W), rep_num(p, RF_POINT_PARAM));
        k++;
    }
    fprintf(dat, "\n\n# reference: %s\n%g %g\n", PAPER_LABEL, PAPER_FRACTION, PAPER_CHANGE);
    const int ref = k; // the reference point's block
    // The windows the lines have, in the order first met.
    int wins[64], nw = 0;
    cJSON_ArrayForEach(l, lines) {
        int x = rep_int(l, RF_LINE_WINDOW), seen = 0;
        for (int i = 0; i < nw; i++) seen |= wins[i] == x;
        if (!seen && nw < 64) wins[nw++] = x;
    }
    aha_plot_terminal(gp, "frontier", o);
    fprintf(gp, "set multiplot layout 2,%d title 'Frontier: quality vs fraction global (all decisions), per window "
                "and policy; delta %+.2f%%; %s' noenhanced\nset grid\nset key top right font ',8'\n"
                "set xrange [0:1]\n", nw, delta, set);
    for (int row = 0; row < 2; row++)
        for (int i = 0; i < nw; i++) {
            fprintf(gp, "set title 'w = %d (all decisions; %s)' noenhanced\nset xlabel 'fraction global (all decisions)'\n",
                    wins[i], panel); // what is counted is in the figure's title
            if (row == 0) fprintf(gp, "set ylabel 'perplexity change vs full (%%)'\n");
            else fprintf(gp, "set ylabel 'mean KL(full || routed) (nats)'\n");
            fprintf(gp, "plot ");
            k = 0;
            cJSON_ArrayForEach(l, lines) {
                if (rep_int(l, RF_LINE_WINDOW) == wins[i]) {
                    const char *f = rep_str(l, RF_LINE_POLICY);
                    fprintf(gp, "'frontier.dat' index %d using 1:%d with linespoints lw 2 pt 7 lc %d title '%s', ", k,
                            row ? 3 : 2, family_color(f), f);
                }
                k++;
            }
            if (row == 0)
                fprintf(gp, "%g with lines dt 2 lc rgb '#888888' title 'delta %+.2f%%', "
                            "'frontier.dat' index %d using 1:2 with points pt 3 ps 2 lc rgb '#000000' title '%s' noenhanced, "
                            "'' index %d using 1:2:('paper, w=128') with labels offset 0,1 font ',8' notitle\n",
                        delta, delta, ref, PAPER_LABEL, ref);
            else fprintf(gp, "NaN notitle\n");
        }
    fprintf(gp, "unset multiplot\n");
    return aha_plot_render(gp, dat, dir, "frontier");
}
