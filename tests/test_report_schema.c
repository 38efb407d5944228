// The report's table (analyze/report_schema.c) against the report aha builds.
// A synthetic trace with every feature (a learned router, --werr, --mass, a
// natively local layer, routed runs whose frontier interpolates) gives a
// report that passes the check and holds every row of the table. Then each
// field in turn is removed, and mistyped: the check is one line naming it,
// and every reader of the report (Markdown, report.csv, tokens.csv, every
// figure of aha plot and aha plot --compare, gnuplot stubbed out) reads the
// broken report without a crash (test_report_schema_san runs this under
// ASan) and, where it reads the field, fails naming it.
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "plot.h"
#include "report.h"
#include "report_schema.h"
#include "tokens.h"
#include "trace.h"

enum { L = 3, H = 2, N_EPS = 2, N_WIN = 2, N_RUNS = 3, MAX_T = 16 };
static const double EPS[N_EPS] = {0.01, 0.1};
static const int WIN[N_WIN] = {2, 4};
static const int LAYER_WINDOW[L] = {0, 4, 0}; // layer 1 natively local
static char dir[256], trace_path[512];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { // xorshift64
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct {              // one document's arrays
    int32_t tokens[MAX_T];
    char text[MAX_T][8];
    const char *text_ptr[MAX_T];
    uint8_t gate[L * MAX_T * H], rgate[2][L * MAX_T * H];
    float logit[L * MAX_T * H], werr[N_WIN * L * MAX_T * H], far[N_WIN * L * MAX_T * H], sink[L * MAX_T * H];
    float nll[N_RUNS][MAX_T], kl[N_RUNS][MAX_T];
    uint32_t dep[N_EPS * L * MAX_T * H];
    aha_trace_run_doc runs[N_RUNS];
} synth;

// Document of n tokens: d_eps at the first eps anywhere in 1..t+1 (at most
// the window on the local layer), at the second no more; the oracle runs
// route by them at w = 2, the one at eps 0.1 sparser and worse (+5% ppl),
// the one at eps 0.01 as good as full attention: the frontier interpolates.
static aha_trace_doc synth_doc(synth *s, int n, int64_t index) {
    const size_t plane = (size_t)L * n * H;
    for (int t = 0; t < n; t++) {
        s->tokens[t] = (int32_t)(urand() * 6);
        snprintf(s->text[t], sizeof s->text[t], "t%d", s->tokens[t]);
        s->text_ptr[t] = s->text[t];
        for (int r = 0; r < N_RUNS; r++)
            s->nll[r][t] = t == n - 1 ? NAN : r == 2 ? 1.05f : 1.0f, s->kl[r][t] = r ? 0.01f * (float)r : 0.0f;
    }
    for (int l = 0; l < L; l++)
        for (int t = 0; t < n; t++)
            for (int h = 0; h < H; h++) {
                size_t i = ((size_t)l * n + t) * H + h;
                uint32_t d = 1 + (uint32_t)(urand() * (t + 1));
                if (LAYER_WINDOW[l] && d > (uint32_t)LAYER_WINDOW[l]) d = (uint32_t)LAYER_WINDOW[l];
                s->dep[i] = d, s->dep[plane + i] = d > 1 ? d - 1 : 1;
                s->gate[i] = !LAYER_WINDOW[l] && urand() < 0.4;
                s->logit[i] = s->gate[i] ? 1.0f : -1.0f;
                for (int e = 0; e < 2; e++) s->rgate[e][i] = !LAYER_WINDOW[l] && s->dep[e * plane + i] > (uint32_t)WIN[0];
                s->sink[i] = (float)(0.3 * urand());
                for (int w = 0; w < N_WIN; w++)
                    s->werr[w * plane + i] = (float)(0.2 * urand()), s->far[w * plane + i] = (float)(0.5 * urand());
            }
    for (int r = 0; r < N_RUNS; r++)
        s->runs[r] = (aha_trace_run_doc){s->nll[r], s->kl[r], r ? s->rgate[r - 1] : NULL, r ? 60.0 : 100.0, 100.0};
    return (aha_trace_doc){.n = n, .doc_index = index, .source = "doc|source", .sha256 = "", .tokens = s->tokens,
                           .token_text = s->text_ptr, .gate = s->gate, .router_logit = s->logit, .dep = s->dep,
                           .werr = s->werr, .runs = s->runs, .mass_far = s->far, .mass_sink = s->sink};
}

static int write_trace(const char *path) {
    aha_trace_meta m = {.model_path = "synthetic", .arch = "test", .n_layers = L, .n_heads = H, .n_kv_heads = 1,
                        .head_dim = 8, .vocab = 6, .aha = 1, .router = "grid", .tau = 0.5, .eps = EPS, .n_eps = N_EPS,
                        .windows = WIN, .n_windows = N_WIN, .sinks = 1, .werr = 1, .mass = 1, .mode = "sweep",
                        .dataset = "synthetic", .command_line = "test_report_schema", .ctx = MAX_T,
                        .layer_window = LAYER_WINDOW, .n_layer_window = L, .text_width = 8, .source_width = 16};
    static synth s;
    static const int lens[] = {12, 9};
    aha_trace *t = NULL;
    if (aha_trace_create(&t, path, &m, 1) < 0 || aha_trace_add_run(t, "full", "global", 0) < 0 ||
        aha_trace_add_run_param(t, "oracle_e0.01_w2", "oracle", WIN[0], EPS[0]) < 0 ||
        aha_trace_add_run_param(t, "oracle_e0.1_w2", "oracle", WIN[0], EPS[1]) < 0)
        return aha_trace_free(t), -1;
    for (int k = 0; k < 2; k++) {
        aha_trace_doc d = synth_doc(&s, lens[k], k);
        if (aha_trace_append(t, &d) < 0) return aha_trace_free(t), -1;
    }
    return aha_trace_close(t);
}

// The report of the synthetic trace, as aha report builds it.
static cJSON *build(void) {
    const char *p = trace_path;
    aha_report_what w = {0, 0, 1, 1, 5, 1, 0.01};
    return aha_report_build(&p, 1, &w);
}

// ---- walking a report by the table ----

static int depth(const report_field *r) {
    int n = 0;
    for (const char *p = r->shape; p && *p; p++) n += *p == '[';
    return n;
}

// Every member of object o (of kind k) and below: seen[f]++, and the object
// holding the first member of row f into *first[f].
static void walk(cJSON *o, report_obj k, int *seen, cJSON **first);

static void walk_value(cJSON *v, int d, report_obj of, int *seen, cJSON **first) {
    cJSON *x;
    if (d == 0 && cJSON_IsObject(v)) walk(v, of, seen, first);
    else if (d > 0) cJSON_ArrayForEach(x, v) walk_value(x, d - 1, of, seen, first);
}

static void walk(cJSON *o, report_obj k, int *seen, cJSON **first) {
    report_field_id fs[RF_COUNT];
    for (int i = 0, n = report_obj_fields(k, fs); i < n; i++) {
        const report_field *r = &report_fields[fs[i]];
        cJSON *v = cJSON_GetObjectItemCaseSensitive(o, r->key);
        if (!v) continue;
        if (!seen[fs[i]]++) first[fs[i]] = o;
        if (r->type == RT_OBJ || r->type == RT_OBJ_NULL) walk_value(v, depth(r), r->of, seen, first);
    }
}

// rep's copy with row f's first member removed (mistype: replaced by a
// value of another type); NULL when rep has none.
static cJSON *broken(const cJSON *rep, report_field_id f, int mistype) {
    cJSON *b = cJSON_Duplicate(rep, 1), *first[RF_COUNT] = {0};
    int seen[RF_COUNT] = {0};
    walk(b, RO_REPORT, seen, first);
    const report_field *r = &report_fields[f];
    if (!first[f]) return cJSON_Delete(b), NULL;
    if (!mistype) cJSON_DeleteItemFromObjectCaseSensitive(first[f], r->key);
    else cJSON_ReplaceItemInObjectCaseSensitive(first[f], r->key,
                                                !r->shape && r->type == RT_STR ? cJSON_CreateNumber(1) : cJSON_CreateString("x"));
    return b;
}

// ---- the tests ----

static void test_complete(const cJSON *rep) {
    int seen[RF_COUNT] = {0};
    cJSON *first[RF_COUNT];
    CHECK(rep, "the report: %s", aha_errmsg());
    walk((cJSON *)rep, RO_REPORT, seen, first);
    for (int f = 0; f < RF_COUNT; f++)
        CHECK(seen[f], "%s.%s: declared, but not in a report with every feature", report_objs[report_fields[f].obj].name,
              report_fields[f].key);
    CHECK(aha_report_check(rep) == 0, "%s", aha_errmsg());
}

// The message is one line that names row f's key (".key:" or " key:") and says what is wrong.
static int names(report_field_id f, const char *what) {
    const char *m = aha_errmsg(), *k = report_fields[f].key;
    int named = 0;
    for (const char *at = strstr(m, k); at && !named; at = strstr(at + 1, k))
        named = at > m && (at[-1] == '.' || at[-1] == ' ') && at[strlen(k)] == ':';
    return named && strncmp(m, "report: ", 8) == 0 && strstr(m, what) && !strchr(m, '\n');
}

static void test_check(const cJSON *rep) {
    for (int f = 0; f < RF_COUNT; f++)
        for (int mistype = 0; mistype < 2; mistype++) {
            cJSON *b = broken(rep, (report_field_id)f, mistype);
            int rc = aha_report_check(b);
            if (!mistype && report_fields[f].when) CHECK(rc == 0, "%s absent: refused (%s)", report_fields[f].key, aha_errmsg());
            else CHECK(rc < 0 && names((report_field_id)f, mistype ? "where the table says" : "missing"),
                       "%s %s: %s", report_fields[f].key, mistype ? "mistyped" : "missing", rc ? aha_errmsg() : "accepted");
            cJSON_Delete(b);
        }
    cJSON *b = cJSON_Duplicate(rep, 1), *tr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(b, "traces"), 0);
    cJSON_AddNumberToObject(tr, "no_such_field", 1);
    CHECK(aha_report_check(b) < 0 && strstr(aha_errmsg(), "traces[0].no_such_field: not a field"), "%s", aha_errmsg());
    cJSON_DeleteItemFromObjectCaseSensitive(tr, "no_such_field");
    cJSON_AddItemToObject(tr, "model", cJSON_DetachItemFromObjectCaseSensitive(tr, "model")); // now last
    CHECK(aha_report_check(b) < 0 && strstr(aha_errmsg(), "traces[0].model: out of the table's order"), "%s", aha_errmsg());
    cJSON_Delete(b);
}

// Every reader of report b; the number that failed, each naming f's key.
static int read_all(const cJSON *b, report_field_id f, int *unnamed) {
    static const aha_plot_opts o = {AHA_PLOT_PNG, 400, 300, 0, 0, 8, NULL};
    FILE *null = fopen("/dev/null", "w");
    const char *fig[AHA_PLOT_MAX];
    aha_report_opts mo = {0, 20};
    int n_fig, failed = 0, rc[5];
    rc[0] = aha_report_md(null, b, &mo);
    rc[1] = aha_report_csv(null, b);
    rc[2] = aha_tokens_csv(null, b);
    rc[3] = aha_plot_all(b, trace_path, dir, &o, fig, &n_fig);
    rc[4] = aha_plot_compare(b, dir, &o, fig, &n_fig);
    fclose(null);
    for (int k = 0; k < 5; k++) { // a plot may stop first on what the field's absence did (no window, ...)
        failed += rc[k] != 0;
        if (rc[k] && k < 3 && !names(f, "")) ++*unnamed;
    }
    return failed;
}

static void test_readers(const cJSON *rep) {
    int unnamed = 0, noticed = 0;
    int ok = read_all(rep, RF_COUNT, &unnamed) == 0;
    CHECK(ok, "the whole report reads: %s", aha_errmsg());
    for (int f = 0; ok && f < RF_COUNT; f++) {
        cJSON *b = broken(rep, (report_field_id)f, 0);
        noticed += read_all(b, (report_field_id)f, &unnamed) > 0;
        cJSON_Delete(b);
    }
    CHECK(unnamed == 0, "%d failed reads not naming the field", unnamed);
    // the fields every reader needs: a reader that went on without them would print "" or nan
    cJSON *b = broken(rep, RF_TRACE_MODEL, 0);
    FILE *null = fopen("/dev/null", "w");
    aha_report_opts mo = {0, 20};
    CHECK(aha_report_md(null, b, &mo) < 0 && strstr(aha_errmsg(), "report: trace.model: missing"), "%s", aha_errmsg());
    cJSON_Delete(b);
    b = broken(rep, RF_RUN_PPL_CHANGE, 1);
    CHECK(aha_report_md(null, b, &mo) < 0 && strstr(aha_errmsg(), "run.ppl_change: a string where the table says number or null"),
          "%s", aha_errmsg());
    fclose(null);
    cJSON_Delete(b);
    CHECK(noticed > RF_COUNT / 2, "only %d of %d fields missed by a reader", noticed, RF_COUNT);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/aha_report_schema_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(trace_path, sizeof trace_path, "%s/t.h5", dir);
    // gnuplot stubbed out (true): the figures' files are written, nothing is rendered
    char bin[300], stub[320], path[4096];
    snprintf(bin, sizeof bin, "%s/bin", dir), snprintf(stub, sizeof stub, "%s/gnuplot", bin);
    if (mkdir(bin, 0777) != 0 || symlink("/bin/true", stub) != 0) return perror(stub), 1;
    snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    if (write_trace(trace_path) != 0) return fprintf(stderr, "test_report_schema: %s\n", aha_errmsg()), 1;
    cJSON *rep = build();
    TEST("report table: a report with every feature holds every field of the table and passes the check", test_complete(rep));
    TEST("report table: a field missing or of another type is one line naming it", test_check(rep));
    TEST("report table: every reader (md, csv, tokens.csv, figures) reads a broken report without a crash, failing "
         "where it needs the field", test_readers(rep));
    cJSON_Delete(rep);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_report_schema: could not remove %s\n", dir);
    TEST_EXIT();
}
