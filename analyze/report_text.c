// What every table, figure and notebook says about a trace (report_text.h).
#include "report_text.h"

#include <math.h>
#include <string.h>

#include "err.h"
#include "report_schema.h"

const char *aha_report_subset(int t_ge_w) { return t_ge_w ? "decisions with t >= w" : "all decisions"; }

void aha_report_settings_only(const cJSON *tr, char *buf, size_t size) {
    if (rep_has(tr, RF_TRACE_CTX)) snprintf(buf, size, "sinks %d, ctx %d", rep_int(tr, RF_TRACE_SINKS), rep_int(tr, RF_TRACE_CTX));
    else snprintf(buf, size, "sinks %d, ctx not recorded", rep_int(tr, RF_TRACE_SINKS));
}

int aha_report_has_local(const cJSON *tr) { return rep_num(tr, RF_TRACE_N_GLOBAL_LAYERS) < rep_num(tr, RF_TRACE_N_LAYERS); }

void aha_report_settings_sep(const cJSON *tr, const char *sep, char *buf, size_t size) {
    aha_report_settings_only(tr, buf, size);
    size_t n = strlen(buf);
    if (aha_report_has_local(tr) && n < size) snprintf(buf + n, size - n, "%s%s", sep, rep_str(tr, RF_TRACE_LAYERS_COUNTED));
}

void aha_report_settings(const cJSON *tr, char *buf, size_t size) { aha_report_settings_sep(tr, "; ", buf, size); }

int aha_report_layer_window(const cJSON *tr, int l) {
    double w = rep_num_at(rep_get(tr, RF_TRACE_LAYER_WINDOW), l);
    return isfinite(w) ? (int)w : 0;
}

void aha_report_layers_short(const cJSON *tr, char *buf, size_t size) {
    int g = rep_int(tr, RF_TRACE_N_GLOBAL_LAYERS), L = rep_int(tr, RF_TRACE_N_LAYERS);
    if (g >= L) snprintf(buf, size, "all %d layers", L);
    else snprintf(buf, size, "%d global layer%s", g, g == 1 ? "" : "s");
}

int aha_report_window(const cJSON *tr, int w) {
    const cJSON *ws = rep_get(tr, RF_TRACE_WINDOWS);
    char list[512] = "";
    for (int i = 0; i < cJSON_GetArraySize(ws); i++) {
        if (rep_num_at(ws, i) == w) return i;
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%.0f", i ? "," : "", rep_num_at(ws, i));
    }
    aha_err("%s: window %d was not recorded (the trace has %s)", aha_report_file(tr), w, list);
    return -1;
}

const char *aha_report_file(const cJSON *tr) { return rep_str_at(rep_get(tr, RF_TRACE_FILES), 0); }

void aha_report_router_name(const cJSON *r, char *buf, size_t size) {
    if (strcmp(rep_str(r, RF_ROUTER_ROUTER), "oracle") == 0) snprintf(buf, size, "oracle eps %g", rep_num(r, RF_ROUTER_EPS));
    else snprintf(buf, size, "learned tau %g", rep_num(r, RF_ROUTER_TAU));
}

void aha_md_num(FILE *f, double x, const char *fmt) {
    if (isnan(x)) fprintf(f, " - |");
    else fprintf(f, fmt, x), fputc('|', f);
}
