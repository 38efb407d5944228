#include "frontier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "report_schema.h"
#include "report_text.h"

int aha_frontier_delta(const char *s, double *delta) {
    char *end;
    *delta = strtod(s, &end);
    if (end == s || *end || !(*delta >= 0) || isinf(*delta)) {
        aha_err("--delta: '%s' is not a number >= 0 (a relative perplexity change: 0.01 = +1%%)", s);
        return -1;
    }
    return 0;
}

void aha_frontier_family(const char *policy, char *buf, size_t size) {
    size_t n = strcspn(policy, ":");
    snprintf(buf, size, "%.*s", (int)n, policy);
}

typedef struct {
    const cJSON *run; // the JSON report's run
    double x, y;      // fraction global (the subset's), ppl change
} point;

static int by_x(const void *a, const void *b) {
    const point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->y < q->y ? -1 : p->y > q->y;
}

// The smallest fraction global with ppl change <= delta over pts[n] (sorted
// by fraction): the first point within delta, interpolated linearly with the
// point before it (which is above delta); at a grid point when it is the
// first point or lands on delta exactly.
static cJSON *smallest(point *pts, int n, double delta) {
    cJSON *o = cJSON_CreateObject();
    int i = 0;
    while (i < n && !(pts[i].y <= delta)) i++;
    if (i == n) {
        rep_add_num(o, RF_SM_FRACTION, NAN);
        rep_add_str(o, RF_SM_HOW, "not reached within the grid");
        return o;
    }
    double f = pts[i].x;
    const char *how = "at a grid point";
    if (i > 0 && pts[i].y < delta && isfinite(pts[i - 1].y)) {
        const point *a = &pts[i - 1], *b = &pts[i];
        f = a->x + (delta - a->y) * (b->x - a->x) / (b->y - a->y);
        how = "interpolated";
        rep_add_str(o, RF_SM_FROM, rep_str(a->run, RF_RUN_NAME));
    }
    rep_add_num(o, RF_SM_FRACTION, f);
    rep_add_str(o, RF_SM_HOW, how);
    rep_add_str(o, RF_SM_TO, rep_str(pts[i].run, RF_RUN_NAME));
    return o;
}

// A run's fraction global over all decisions (tw 0) or t >= w.
static double run_global(const cJSON *r, int tw) {
    return rep_num(rep_get(r, tw ? RF_RUN_GLOBAL_T_GE_W : RF_RUN_GLOBAL_ALL), RF_FRAC_FRACTION);
}

static cJSON *point_json(const cJSON *p) {
    cJSON *x = cJSON_CreateObject();
    rep_add_str(x, RF_POINT_RUN, rep_str(p, RF_RUN_NAME));
    rep_add_num(x, RF_POINT_PARAM, rep_num(p, RF_RUN_PARAM));
    rep_add_num(x, RF_POINT_FRACTION_ALL, run_global(p, 0));
    rep_add_num(x, RF_POINT_FRACTION_T_GE_W, run_global(p, 1));
    rep_add_num(x, RF_POINT_PPL_CHANGE, rep_num(p, RF_RUN_PPL_CHANGE));
    rep_add_num(x, RF_POINT_MEAN_KL, rep_num(p, RF_RUN_MEAN_KL));
    rep_add_num(x, RF_POINT_FLOPS_FRACTION, rep_num(p, RF_RUN_FLOPS_FRACTION));
    return x;
}

static cJSON *line_json(const cJSON *runs, int window, const char *family, double delta) {
    cJSON *o = cJSON_CreateObject(), *ps;
    rep_add_num(o, RF_LINE_WINDOW, window);
    rep_add_str(o, RF_LINE_POLICY, family);
    int n = cJSON_GetArraySize(runs), m = 0;
    point *pts = calloc((size_t)n + 1, sizeof *pts);
    const cJSON *r;
    char fam[64];
    cJSON_ArrayForEach(r, runs) {
        aha_frontier_family(rep_str(r, RF_RUN_POLICY), fam, sizeof fam);
        if (pts && rep_num(r, RF_RUN_WINDOW) == window && !strcmp(fam, family)) pts[m++].run = r;
    }
    for (int s = 0; pts && s < 2; s++) {
        for (int i = 0; i < m; i++) pts[i].x = run_global(pts[i].run, s), pts[i].y = rep_num(pts[i].run, RF_RUN_PPL_CHANGE);
        qsort(pts, (size_t)m, sizeof *pts, by_x);
        if (s == 0) { // the points, in order of fraction global (all decisions)
            ps = rep_add_array(o, RF_LINE_POINTS);
            for (int i = 0; i < m; i++) cJSON_AddItemToArray(ps, point_json(pts[i].run));
        }
        rep_add(o, s ? RF_LINE_SMALLEST_T_GE_W : RF_LINE_SMALLEST_ALL, smallest(pts, m, delta));
    }
    free(pts);
    return o;
}

int aha_report_frontier(cJSON *rep, double delta) {
    cJSON *tr;
    cJSON_ArrayForEach(tr, rep_get_mut(rep, RF_REPORT_TRACES)) {
        cJSON *fr = rep_add_object(tr, RF_TRACE_FRONTIER);
        if (!fr) return -1;
        rep_add_num(fr, RF_FR_DELTA, delta);
        rep_add_str(fr, RF_FR_RULE,
                    "per window and policy, the routed runs sorted by fraction global; the smallest "
                    "fraction global with ppl change <= delta is the first run within delta, linearly "
                    "interpolated with the run before it (above delta), or at a grid point");
        cJSON *lines = rep_add_array(fr, RF_FR_LINES);
        const cJSON *runs = rep_get(tr, RF_TRACE_RUNS), *r, *l;
        char fam[64];
        cJSON_ArrayForEach(r, runs) { // one line per (window, family), in the runs' order
            if (!strcmp(rep_str(r, RF_RUN_POLICY), "global")) continue;
            aha_frontier_family(rep_str(r, RF_RUN_POLICY), fam, sizeof fam);
            int seen = 0, w = rep_int(r, RF_RUN_WINDOW);
            cJSON_ArrayForEach(l, lines) seen |= rep_int(l, RF_LINE_WINDOW) == w && !strcmp(rep_str(l, RF_LINE_POLICY), fam);
            if (!seen) cJSON_AddItemToArray(lines, line_json(runs, w, fam, delta));
        }
    }
    return 0;
}

void aha_frontier_md(FILE *f, const cJSON *tr) {
    const cJSON *fr = rep_get(tr, RF_TRACE_FRONTIER), *l, *p;
    if (!rep_len(fr, RF_FR_LINES)) return;
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    fprintf(f, "\n### Frontier: smallest fraction global with perplexity change <= %+.2f%% (delta), over all decisions "
               "and over decisions with t >= w (%s)\n\n"
               "| w | policy | runs | smallest global, all decisions | how | smallest global, t >= w | how |\n"
               "|---:|---|---:|---:|---|---:|---|\n", 100 * rep_num(fr, RF_FR_DELTA), set);
    cJSON_ArrayForEach(l, rep_get(fr, RF_FR_LINES)) {
        fprintf(f, "| %d | %s | %d |", rep_int(l, RF_LINE_WINDOW), rep_str(l, RF_LINE_POLICY), rep_len(l, RF_LINE_POINTS));
        for (int s = 0; s < 2; s++) {
            const cJSON *x = rep_get(l, s ? RF_LINE_SMALLEST_T_GE_W : RF_LINE_SMALLEST_ALL);
            aha_md_num(f, rep_num(x, RF_SM_FRACTION), " %.4f ");
            fprintf(f, " %s |", rep_str(x, RF_SM_HOW));
        }
        fputc('\n', f);
    }
    fprintf(f, "\nInterpolated: linearly between the two runs of the line that bracket delta; at a grid point: "
               "a run lands on delta, or the line's sparsest run is already within it (sparser was not measured).\n"
               "\n### Frontier points (per window and policy, by fraction global over all decisions; %s)\n\n"
               "| w | policy | run | param | global, all decisions | global, t >= w | ppl change | mean KL | FLOPs executed/full |\n"
               "|---:|---|---|---:|---:|---:|---:|---:|---:|\n", set);
    cJSON_ArrayForEach(l, rep_get(fr, RF_FR_LINES)) cJSON_ArrayForEach(p, rep_get(l, RF_LINE_POINTS)) {
        fprintf(f, "| %d | %s | %s |", rep_int(l, RF_LINE_WINDOW), rep_str(l, RF_LINE_POLICY), rep_str(p, RF_POINT_RUN));
        aha_md_num(f, rep_num(p, RF_POINT_PARAM), " %g "), aha_md_num(f, rep_num(p, RF_POINT_FRACTION_ALL), " %.4f ");
        aha_md_num(f, rep_num(p, RF_POINT_FRACTION_T_GE_W), " %.4f ");
        aha_md_num(f, 100 * rep_num(p, RF_POINT_PPL_CHANGE), " %+.2f%% ");
        aha_md_num(f, rep_num(p, RF_POINT_MEAN_KL), " %.5f "), aha_md_num(f, rep_num(p, RF_POINT_FLOPS_FRACTION), " %.4f ");
        fputc('\n', f);
    }
}

// trace,table,router,eps,window,layer,head,doc,subset,metric,value
void aha_frontier_csv(FILE *f, int t, const cJSON *tr) {
    static const char *subsets[2] = {"all", "t_ge_w"};
    const cJSON *fr = rep_get(tr, RF_TRACE_FRONTIER), *l;
    cJSON_ArrayForEach(l, rep_get(fr, RF_FR_LINES)) {
        const char *pol = rep_str(l, RF_LINE_POLICY);
        int w = rep_int(l, RF_LINE_WINDOW);
        for (int s = 0; s < 2; s++) {
            const cJSON *x = rep_get(l, s ? RF_LINE_SMALLEST_T_GE_W : RF_LINE_SMALLEST_ALL);
            double fraction = rep_num(x, RF_SM_FRACTION);
            fprintf(f, "%d,frontier,%s,,%d,,,,%s,delta,%.17g\n", t, pol, w, subsets[s], rep_num(fr, RF_FR_DELTA));
            fprintf(f, "%d,frontier,%s,,%d,,,,%s,smallest_fraction_global,", t, pol, w, subsets[s]);
            if (isfinite(fraction)) fprintf(f, "%.17g", fraction);
            fprintf(f, "\n%d,frontier,%s,,%d,,,,%s,how,%s\n", t, pol, w, subsets[s], rep_str(x, RF_SM_HOW));
        }
    }
}
