// aha report TRACE... : gather the traces and write the report.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "frontier.h"
#include "report.h"
#include "mass.h"
#include "report_schema.h"
#include "report_text.h"
#include "tokens.h"

cJSON *aha_report_load(const char *const *paths, int n, int compare, int block) {
    int ns = compare ? n : 1;
    aha_stats *s = aha_calloc((size_t)ns, sizeof *s, "traces");
    cJSON *rep = NULL;
    int k = 0;
    for (; s && k < ns; k++)
        if (aha_stats_gather(&s[k], compare ? paths + k : paths, compare ? 1 : n, block) != 0) break;
    if (s && k == ns && !(rep = aha_report_json(s, ns))) aha_err("out of memory building the report");
    for (int i = 0; rep && i < ns; i++)
        if (s[i].shards_missing)
            fprintf(stderr, "aha: warning: %s: shards %s of a run, %d missing: the numbers cover those only\n",
                    s[i].paths[0], s[i].shards, s[i].shards_missing);
    for (int i = 0; s && i < k; i++) aha_stats_free(&s[i]);
    free(s);
    return rep;
}

cJSON *aha_report_build(const char *const *paths, int n, const aha_report_what *w) {
    cJSON *rep = aha_report_load(paths, n, w->compare, w->block);
    rep_read_reset();
    if (!rep || (w->tokens && aha_tokens_report(rep, paths, n, w->compare, w->block, w->min_count, w->top) != 0) ||
        (w->mass && aha_mass_report(rep, paths, n, w->compare, w->block) != 0) || aha_report_frontier(rep, w->delta) != 0 ||
        rep_read_failed() || aha_report_check(rep) != 0) {
        cJSON_Delete(rep);
        return NULL;
    }
    return rep;
}

// The formats, in the order they are written (json last: it makes the
// numbers raw text), and their files in -o DIR.
static const struct {
    const char *fmt, *file;
} formats[] = {{"md", "report.md"}, {"csv", "report.csv"}, {"tokens.csv", "tokens.csv"}, {"json", "report.json"}};
enum { N_FORMATS = sizeof formats / sizeof *formats };

// Write format i to dir/its file (or stdout without dir).
static int write_format(cJSON *rep, int i, const char *dir, const aha_report_opts *o) {
    const char *fmt = formats[i].fmt;
    char path[PATH_MAX + 64];
    FILE *f = stdout;
    if (dir) {
        snprintf(path, sizeof path, "%s/%s", dir, formats[i].file);
        if (!(f = fopen(path, "w"))) {
            aha_err("%s: %s", path, strerror(errno));
            return -1;
        }
    }
    int rc = 0;
    if (strcmp(fmt, "json") == 0) {
        aha_report_exact(rep);
        char *s = cJSON_PrintUnformatted(rep);
        if (s) fprintf(f, "%s\n", s);
        free(s);
    } else if (strcmp(fmt, "csv") == 0) {
        rc = aha_report_csv(f, rep);
    } else if (strcmp(fmt, "tokens.csv") == 0) {
        rc = aha_tokens_csv(f, rep);
    } else {
        rc = aha_report_md(f, rep, o);
    }
    int bad = ferror(f);
    if (dir) bad |= fclose(f) != 0;
    else fflush(f);
    if (bad) aha_err("%s: write failed", dir ? path : "stdout");
    return rc || bad ? -1 : 0;
}

int aha_traces_parse(int argc, char **argv, const char *usage, const aha_flag *flags, const char **pos, int *n) {
    int rc = aha_cli_parse_n(argc, argv, usage, flags, pos, 1, AHA_TRACES_POS, n);
    if (rc == 0 && *n > AHA_MAX_TRACES) {
        aha_err("more than %d traces in one command: merge groups of them first (aha merge SHARD... -o PART.h5), "
                "then give the parts",
                AHA_MAX_TRACES);
        return aha_cli_fail();
    }
    return rc;
}

// traces[0..n) as the inputs an output must not be (malloc'd), or NULL.
static aha_input *trace_inputs(const char *const *traces, int n) {
    aha_input *in = aha_malloc((size_t)n, sizeof *in, "traces");
    for (int i = 0; in && i < n; i++) in[i] = (aha_input){"a trace it reads", traces[i]};
    return in;
}

int aha_traces_out(const char *flag, const char *out, const char *const *names, int n_names, int force,
                   const char *const *traces, int n) {
    aha_input *in = trace_inputs(traces, n);
    int rc = !in     ? -1
             : names ? aha_out_dir(flag, out, names, n_names, force, in, n)
                     : aha_out_file(flag, out, force, in, n);
    free(in);
    return rc;
}

int aha_traces_pub(aha_pub *p, const char *flag, const char *out, const char *const *own, int n_own, int force,
                   const char *const *traces, int n) {
    aha_input *in = trace_inputs(traces, n);
    p->fd = -1;
    int rc = !in   ? -1
             : own ? aha_pub_dir(p, flag, out, force, own, n_own, in, n)
                   : aha_pub_file(p, flag, out, force, in, n);
    free(in);
    return rc;
}

// --out-format's values: auto (all three with -o, md without), md, csv, json.
enum { OUT_AUTO, OUT_MD, OUT_CSV, OUT_JSON };
static const char *const out_names[] = {"auto", "md", "csv", "json"};
static const aha_enum out_formats = AHA_ENUM(out_names);

int aha_cmd_report(int argc, char **argv) {
    const char *out = NULL;
    int format = OUT_AUTO;
    int compare = 0, window = 0, max_rows = 20, block = 0, min_count = 5, top = 20, force = 0;
    const char *delta_s = AHA_FRONTIER_DELTA;
    double delta = 0;
    const aha_flag flags[] = {
        AHA_FLAG_ENUM("--out-format", format, out_formats,
                      "what is written; auto: md, csv and json with -o, md without"),
        AHA_FLAG_ALIAS("--format", "--out-format"),
        {"-o", FLAG_STR, &out, "directory for report.<format>; stdout without it", NULL},
        {"--force", FLAG_BOOL, &force, "replace -o DIR, a report's folder, whole", NULL},
        {"--compare", FLAG_BOOL, &compare, "one report per trace, side by side (else shards of one run, combined)",
         NULL},
        {"--window", FLAG_INT, &window, "window of the per-head Markdown table; 0 = the middle recorded one", ">= 0"},
        {"--max-rows", FLAG_INT, &max_rows, "per-document rows in Markdown", ">= 0"},
        {"--block", FLAG_INT, &block, "tokens per read slab; 0 = about 4M decisions", ">= 0"},
        {"--min-count", FLAG_INT, &min_count, "top tokens: only those with at least this many occurrences at t >= w",
         ">= 1"},
        {"--top", FLAG_INT, &top, "top tokens by global rate listed per layer group and window", ">= 0"},
        {"--delta", FLAG_STR, &delta_s,
         "frontier: the smallest fraction global with perplexity change <= delta (0.01 = +1%)", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    static const char *pos[AHA_TRACES_POS]; // static: thousands of paths
    int n;
    int rc = aha_traces_parse(argc, argv, "usage: aha report TRACE... [--out-format md|csv|json] [-o DIR]", flags, pos, &n);
    if (rc) return rc < 0 ? 0 : rc;
    if (aha_frontier_delta(delta_s, &delta) != 0) return aha_cli_fail();
    int want[N_FORMATS];
    const char *own[N_FORMATS];           // what a report's folder may hold: --force replaces it whole
    for (int i = 0; i < N_FORMATS; i++) { // tokens.csv has columns of its own: beside report.csv in -o DIR only
        const int tokens = !strcmp(formats[i].fmt, "tokens.csv");
        want[i] = tokens ? out && (format == OUT_AUTO || format == OUT_CSV)
                         : format != OUT_AUTO ? !strcmp(out_names[format], formats[i].fmt) : (out || i == 0);
        own[i] = formats[i].file;
    }
    aha_pub pub = {.fd = -1}; // -o DIR: built beside it, then in its place whole
    if (out && aha_traces_pub(&pub, "-o", out, own, N_FORMATS, force, pos, n) != 0) return aha_cli_fail();
    aha_report_what what = {compare, block, 1, min_count, top, 1, delta};
    cJSON *rep = aha_report_build(pos, n, &what);
    const cJSON *tr;
    if (!rep) {
        rc = -1;
    } else {
        cJSON_ArrayForEach(tr, rep_get(rep, RF_REPORT_TRACES)) {
            if (window && aha_report_window(tr, window) < 0) rc = -1;
        }
    }
    aha_report_opts o = {window, max_rows};
    for (int i = 0; rc == 0 && i < N_FORMATS; i++)
        if (want[i]) rc = write_format(rep, i, out ? pub.tmp : NULL, &o);
    cJSON_Delete(rep);
    if (rc == 0 && out) rc = aha_pub_commit(&pub);
    aha_pub_abort(&pub);
    for (int i = 0; rc == 0 && out && i < N_FORMATS; i++)
        if (want[i]) fprintf(stderr, "wrote %s/%s\n", out, formats[i].file);
    return rc == 0 ? 0 : aha_cli_fail();
}
