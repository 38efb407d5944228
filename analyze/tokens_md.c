// Which tokens need global attention (tokens.h): the Markdown section and
// tokens.csv, both rendered from the JSON report's "tokens".
#include <math.h>
#include <string.h>

#include "report.h"
#include "tokens.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const cJSON *at(const cJSON *a, int i) { return cJSON_GetArrayItem(a, i); }
static double num(const cJSON *o, const char *k) {
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

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

static void md_rate(FILE *f, const cJSON *fr) {
    double x = num(fr, "fraction");
    if (isnan(x)) fprintf(f, " - |");
    else fprintf(f, " %.4f |", x);
}

// One table: a row per key (label(i)), a column per layer group.
static void md_keyed(FILE *f, const char *first, const cJSON *groups, const cJSON *per_group, int n,
                     void (*label)(FILE *, const cJSON *, int), const cJSON *labels) {
    const cJSON *g;
    fprintf(f, "| %s | tokens |", first);
    cJSON_ArrayForEach(g, groups) fprintf(f, " %s |", get(g, "name")->valuestring);
    fprintf(f, "\n|---|---:|");
    cJSON_ArrayForEach(g, groups) fprintf(f, "---:|");
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        const cJSON *all = at(get(at(per_group, 0), "t_ge_w"), i);
        if (num(all, "occurrences") == 0) continue; // e.g. positions below w: the CSV and JSON list them
        fprintf(f, "| ");
        label(f, labels, i);
        fprintf(f, " | %.0f |", num(all, "occurrences"));
        for (int k = 0; k < cJSON_GetArraySize(per_group); k++) md_rate(f, at(get(at(per_group, k), "t_ge_w"), i));
        fputc('\n', f);
    }
}

static void bucket_label(FILE *f, const cJSON *b, int i) {
    const cJSON *x = at(b, i);
    fprintf(f, "[%.0f, %.0f)", at(x, 0)->valuedouble, at(x, 1)->valuedouble);
}
static void class_label(FILE *f, const cJSON *c, int i) { fputs(at(c, i)->valuestring, f); }

void aha_tokens_md(FILE *f, const cJSON *tr, int w) {
    const cJSON *tk = get(tr, "tokens"), *ws = get(tk, "windows"), *groups = get(tk, "groups"), *g;
    if (!tk) return;
    int wi = cJSON_GetArraySize(ws) / 2;
    for (int i = 0; i < cJSON_GetArraySize(ws); i++)
        if (w && num(at(ws, i), "window") == w) wi = i;
    const cJSON *x = at(ws, wi);
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    int win = (int)num(x, "window"), ng = cJSON_GetArraySize(groups);
    fprintf(f, "### Which tokens need global attention at w=%d (oracle eps %g, %s; %s)\n\n", win, num(tk, "eps"),
            aha_report_subset(1), set);
    fprintf(f, "Global rate = global decisions / (layers x heads x occurrences), over tokens at position t >= w in "
               "their context (below it the oracle is always local). Top tokens: at least %.0f occurrences at "
               "t >= w, ranked per layer group; a cell is the piece (spaces as \u2423), its rate and occurrences.\n\n",
            num(tk, "min_count"));
    fprintf(f, "| rank |"); // all layers (the last group) first, as in every table of the section
    for (int k = 0; k < ng; k++) fprintf(f, " %s |", get(at(groups, (k + ng - 1) % ng), "name")->valuestring);
    fprintf(f, "\n|---:|");
    cJSON_ArrayForEach(g, groups) fprintf(f, "---|");
    fputc('\n', f);
    int rows = 0;
    for (int k = 0; k < ng; k++)
        if (cJSON_GetArraySize(at(get(x, "top"), k)) > rows) rows = cJSON_GetArraySize(at(get(x, "top"), k));
    // the last group is all layers: shown first
    for (int r = 0; r < rows; r++) {
        fprintf(f, "| %d |", r + 1);
        for (int k = 0; k < ng; k++) {
            const cJSON *t = at(at(get(x, "top"), (k + ng - 1) % ng), r);
            if (!t) {
                fprintf(f, " |");
                continue;
            }
            fputc(' ', f);
            md_piece(f, get(t, "text")->valuestring);
            fprintf(f, " %.4f (%.0f) |", num(t, "fraction"), num(t, "occurrences"));
        }
        fputc('\n', f);
    }
    if (!rows) fprintf(f, "| - | (no token with %.0f occurrences at t >= w) |\n", num(tk, "min_count"));
    // the other tables: all layers first too
    cJSON *order = cJSON_CreateArray(), *porder = cJSON_CreateArray(), *corder = cJSON_CreateArray();
    for (int k = 0; k < ng; k++) {
        int j = (k + ng - 1) % ng;
        cJSON_AddItemReferenceToArray(order, (cJSON *)at(groups, j));
        cJSON_AddItemReferenceToArray(porder, (cJSON *)at(get(x, "position"), j));
        cJSON_AddItemReferenceToArray(corder, (cJSON *)at(get(x, "class"), j));
    }
    fprintf(f, "\n#### Global rate by position in the context (log2 buckets; oracle eps %g, w=%d, %s; %s)\n\n",
            num(tk, "eps"), win, aha_report_subset(1), set);
    fprintf(f, "(Buckets without tokens at t >= w left out.)\n\n");
    md_keyed(f, "position", order, porder, cJSON_GetArraySize(get(tk, "position_buckets")), bucket_label,
             get(tk, "position_buckets"));
    fprintf(f, "\n#### Global rate by token class (oracle eps %g, w=%d, %s; %s)\n\n", num(tk, "eps"), win,
            aha_report_subset(1), set);
    md_keyed(f, "class", order, corder, cJSON_GetArraySize(get(tk, "classes")), class_label, get(tk, "classes"));
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

static void csv_frac(FILE *f, const cJSON *fr) {
    fprintf(f, "%.0f,%.0f,%.0f,", num(fr, "occurrences"), num(fr, "global"), num(fr, "total"));
    if (!isnan(num(fr, "fraction"))) fprintf(f, "%.17g", num(fr, "fraction"));
    fputc('\n', f);
}

void aha_tokens_csv(FILE *f, const cJSON *rep) {
    fprintf(f, "trace,table,eps,window,subset,group,first_layer,last_layer,key,text,occurrences,global,total,fraction\n");
    const cJSON *tr;
    int t = 0;
    cJSON_ArrayForEach(tr, get(rep, "traces")) {
        const cJSON *tk = get(tr, "tokens"), *x;
        if (!tk) {
            t++;
            continue;
        }
        cJSON_ArrayForEach(x, get(tk, "windows")) {
            for (int k = 0; k < cJSON_GetArraySize(get(tk, "groups")); k++) {
                const cJSON *g = at(get(tk, "groups"), k), *y;
                char pre[256];
                snprintf(pre, sizeof pre, "%d,%%s,%.9g,%.0f,%%s,%s,%.0f,%.0f,", t, num(tk, "eps"), num(x, "window"),
                         get(g, "name")->valuestring, num(g, "first_layer"), num(g, "last_layer"));
                cJSON_ArrayForEach(y, at(get(x, "top"), k)) {
                    fprintf(f, pre, "top", "t_ge_w");
                    fprintf(f, "%.0f,", num(y, "id"));
                    csv_text(f, get(y, "text")->valuestring);
                    csv_frac(f, y);
                }
                for (int tw = 0; tw < 2; tw++) {
                    const char *sub = tw ? "t_ge_w" : "all";
                    int i = 0;
                    cJSON_ArrayForEach(y, get(at(get(x, "position"), k), sub)) {
                        const cJSON *b = at(get(tk, "position_buckets"), i++);
                        fprintf(f, pre, "position", sub);
                        fprintf(f, "%.0f,\"[%.0f, %.0f)\",", at(b, 0)->valuedouble, at(b, 0)->valuedouble, at(b, 1)->valuedouble);
                        csv_frac(f, y);
                    }
                    i = 0;
                    cJSON_ArrayForEach(y, get(at(get(x, "class"), k), sub)) {
                        const char *c = at(get(tk, "classes"), i++)->valuestring;
                        fprintf(f, pre, "class", sub);
                        fprintf(f, "%s,\"%s\",", c, c);
                        csv_frac(f, y);
                    }
                }
            }
        }
        t++;
    }
}
