// Which tokens need global attention (tokens.h): the Markdown section and
// tokens.csv, both rendered from the JSON report's "tokens".
#include <math.h>
#include <string.h>

#include "report_schema.h"
#include "report_text.h"
#include "tokens.h"

// A piece for a Markdown table cell: quoted, spaces as U+2423, control
// characters as C escapes, and | < > ` made harmless.
static void md_piece(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case ' ': fputs("\u2423", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '|': fputs("\\|", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '`': fputs("\\`", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

// One table: a row per key (label(i)), a column per layer group.
static void md_keyed(FILE *f, const char *first, const cJSON *groups, const cJSON *per_group, int n,
                     void (*label)(FILE *, const cJSON *, int), const cJSON *labels) {
    const cJSON *g;
    fprintf(f, "| %s | tokens |", first);
    cJSON_ArrayForEach(g, groups) fprintf(f, " %s |", rep_str(g, RF_GROUP_NAME));
    fprintf(f, "\n|---|---:|");
    cJSON_ArrayForEach(g, groups) fprintf(f, "---:|");
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        const cJSON *all = rep_at(cJSON_GetArrayItem(per_group, 0), RF_KEYED_T_GE_W, i);
        if (rep_num(all, RF_KF_OCCURRENCES) == 0) continue; // e.g. positions below w: the CSV and JSON list them
        fprintf(f, "| ");
        label(f, labels, i);
        fprintf(f, " | %.0f |", rep_num(all, RF_KF_OCCURRENCES));
        for (int k = 0; k < cJSON_GetArraySize(per_group); k++)
            aha_md_num(f, rep_num(rep_at(cJSON_GetArrayItem(per_group, k), RF_KEYED_T_GE_W, i), RF_FRAC_FRACTION), " %.4f ");
        fputc('\n', f);
    }
}

static void bucket_label(FILE *f, const cJSON *b, int i) {
    const cJSON *x = cJSON_GetArrayItem(b, i);
    fprintf(f, "[%.0f, %.0f)", rep_num_at(x, 0), rep_num_at(x, 1));
}
static void class_label(FILE *f, const cJSON *c, int i) { fputs(rep_str_at(c, i), f); }

// The window index of w among the token windows (0: the middle one).
static int token_window(const cJSON *ws, int w) {
    int wi = cJSON_GetArraySize(ws) / 2;
    for (int i = 0; i < cJSON_GetArraySize(ws); i++)
        if (w && rep_num(cJSON_GetArrayItem(ws, i), RF_TW_WINDOW) == w) wi = i;
    return wi;
}

// The top tokens per layer group, all layers (the last group) first.
static void md_top(FILE *f, const cJSON *tk, const cJSON *x) {
    const cJSON *g, *groups = rep_get(tk, RF_TOK_GROUPS);
    int ng = cJSON_GetArraySize(groups), rows = 0;
    fprintf(f, "| rank |"); // all layers (the last group) first, as in every table of the section
    for (int k = 0; k < ng; k++) fprintf(f, " %s |", rep_str(cJSON_GetArrayItem(groups, (k + ng - 1) % ng), RF_GROUP_NAME));
    fprintf(f, "\n|---:|");
    cJSON_ArrayForEach(g, groups) fprintf(f, "---|");
    fputc('\n', f);
    for (int k = 0; k < ng; k++)
        if (cJSON_GetArraySize(rep_at(x, RF_TW_TOP, k)) > rows) rows = cJSON_GetArraySize(rep_at(x, RF_TW_TOP, k));
    for (int r = 0; r < rows; r++) {
        fprintf(f, "| %d |", r + 1);
        for (int k = 0; k < ng; k++) {
            const cJSON *t = cJSON_GetArrayItem(rep_at(x, RF_TW_TOP, (k + ng - 1) % ng), r);
            if (!t) {
                fprintf(f, " |");
                continue;
            }
            fputc(' ', f);
            md_piece(f, rep_str(t, RF_TOP_TEXT));
            fprintf(f, " %.4f (%.0f) |", rep_num(t, RF_FRAC_FRACTION), rep_num(t, RF_TOP_OCCURRENCES));
        }
        fputc('\n', f);
    }
    if (!rows) fprintf(f, "| - | (no token with %d occurrences at t >= w) |\n", rep_int(tk, RF_TOK_MIN_COUNT));
}

void aha_tokens_md(FILE *f, const cJSON *tr, int w) {
    const cJSON *tk = rep_get(tr, RF_TRACE_TOKENS), *groups = rep_get(tk, RF_TOK_GROUPS);
    if (!tk) return;
    const cJSON *x = rep_at(tk, RF_TOK_WINDOWS, token_window(rep_get(tk, RF_TOK_WINDOWS), w));
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    int win = rep_int(x, RF_TW_WINDOW), ng = cJSON_GetArraySize(groups);
    double eps = rep_num(tk, RF_TOK_EPS);
    fprintf(f, "### Which tokens need global attention at w=%d (oracle eps %g, %s; %s)\n\n", win, eps,
            aha_report_subset(1), set);
    fprintf(f, "Global rate = global decisions / (layers x heads x occurrences), over tokens at position t >= w in "
               "their context (below it the oracle is always local). Top tokens: at least %d occurrences at "
               "t >= w, ranked per layer group; a cell is the piece (spaces as \u2423), its rate and occurrences.\n\n",
            rep_int(tk, RF_TOK_MIN_COUNT));
    md_top(f, tk, x);
    // the other tables: all layers first too
    cJSON *order = cJSON_CreateArray(), *porder = cJSON_CreateArray(), *corder = cJSON_CreateArray();
    for (int k = 0; k < ng; k++) {
        int j = (k + ng - 1) % ng;
        cJSON_AddItemReferenceToArray(order, (cJSON *)cJSON_GetArrayItem(groups, j));
        cJSON_AddItemReferenceToArray(porder, (cJSON *)rep_at(x, RF_TW_POSITION, j));
        cJSON_AddItemReferenceToArray(corder, (cJSON *)rep_at(x, RF_TW_CLASS, j));
    }
    fprintf(f, "\n#### Global rate by position in the context (log2 buckets; oracle eps %g, w=%d, %s; %s)\n\n",
            eps, win, aha_report_subset(1), set);
    fprintf(f, "(Buckets without tokens at t >= w left out.)\n\n");
    md_keyed(f, "position", order, porder, rep_len(tk, RF_TOK_POSITION_BUCKETS), bucket_label,
             rep_get(tk, RF_TOK_POSITION_BUCKETS));
    fprintf(f, "\n#### Global rate by token class (oracle eps %g, w=%d, %s; %s)\n\n", eps, win, aha_report_subset(1), set);
    md_keyed(f, "class", order, corder, rep_len(tk, RF_TOK_CLASSES), class_label, rep_get(tk, RF_TOK_CLASSES));
    fprintf(f, "\nClasses (docs/reports.md, \"Which tokens need global attention\"): whitespace = only whitespace; punct, digit = "
               "optional leading whitespace then only ASCII punctuation / digits; word_start = leading whitespace then "
               "a letter; word_cont = the rest; special = <|...|> or <...> without whitespace, or empty (by text: the "
               "trace does not mark special tokens).\n");
    cJSON_Delete(order), cJSON_Delete(porder), cJSON_Delete(corder);
}

// ---- tokens.csv ----

static void csv_text(FILE *f, const char *s) { // RFC 4180: quoted, quotes doubled
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputs("\",", f);
}

static void csv_frac(FILE *f, const cJSON *fr, report_field_id occurrences) {
    fprintf(f, "%.0f,%.0f,%.0f,", rep_num(fr, occurrences), rep_num(fr, RF_FRAC_GLOBAL), rep_num(fr, RF_FRAC_TOTAL));
    if (!isnan(rep_num(fr, RF_FRAC_FRACTION))) fprintf(f, "%.17g", rep_num(fr, RF_FRAC_FRACTION));
    fputc('\n', f);
}

// One layer group k's rows at token window x; pre: the row's first columns
// (trace, table, eps, window, subset, group, layers) as a format.
static void csv_group(FILE *f, const cJSON *tk, const cJSON *x, int k, const char *pre) {
    const cJSON *y;
    cJSON_ArrayForEach(y, rep_at(x, RF_TW_TOP, k)) {
        fprintf(f, pre, "top", "t_ge_w");
        fprintf(f, "%.0f,", rep_num(y, RF_TOP_ID));
        csv_text(f, rep_str(y, RF_TOP_TEXT));
        csv_frac(f, y, RF_TOP_OCCURRENCES);
    }
    for (int tw = 0; tw < 2; tw++) {
        const char *sub = report_fields[tw ? RF_KEYED_T_GE_W : RF_KEYED_ALL].key;
        int i = 0;
        cJSON_ArrayForEach(y, rep_get(rep_at(x, RF_TW_POSITION, k), tw ? RF_KEYED_T_GE_W : RF_KEYED_ALL)) {
            const cJSON *b = rep_at(tk, RF_TOK_POSITION_BUCKETS, i++);
            fprintf(f, pre, "position", sub);
            fprintf(f, "%.0f,\"[%.0f, %.0f)\",", rep_num_at(b, 0), rep_num_at(b, 0), rep_num_at(b, 1));
            csv_frac(f, y, RF_KF_OCCURRENCES);
        }
        i = 0;
        cJSON_ArrayForEach(y, rep_get(rep_at(x, RF_TW_CLASS, k), tw ? RF_KEYED_T_GE_W : RF_KEYED_ALL)) {
            const char *c = rep_str_at(rep_get(tk, RF_TOK_CLASSES), i++);
            fprintf(f, pre, "class", sub);
            fprintf(f, "%s,\"%s\",", c, c);
            csv_frac(f, y, RF_KF_OCCURRENCES);
        }
    }
}

int aha_tokens_csv(FILE *f, const cJSON *rep) {
    rep_read_reset();
    fprintf(f, "trace,table,eps,window,subset,group,first_layer,last_layer,key,text,occurrences,global,total,fraction\n");
    const cJSON *tr;
    int t = 0;
    cJSON_ArrayForEach(tr, rep_get(rep, RF_REPORT_TRACES)) {
        const cJSON *tk = rep_get(tr, RF_TRACE_TOKENS), *x;
        cJSON_ArrayForEach(x, rep_get(tk, RF_TOK_WINDOWS)) {
            for (int k = 0; k < rep_len(tk, RF_TOK_GROUPS); k++) {
                const cJSON *g = rep_at(tk, RF_TOK_GROUPS, k);
                char pre[256];
                snprintf(pre, sizeof pre, "%d,%%s,%.9g,%d,%%s,%s,%d,%d,", t, rep_num(tk, RF_TOK_EPS), rep_int(x, RF_TW_WINDOW),
                         rep_str(g, RF_GROUP_NAME), rep_int(g, RF_GROUP_FIRST_LAYER), rep_int(g, RF_GROUP_LAST_LAYER));
                csv_group(f, tk, x, k, pre);
            }
        }
        t++;
    }
    return rep_read_failed() ? -1 : 0;
}
