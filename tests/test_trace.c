// The trace writer: write synthetic documents, read them back with the HDF5
// C API; refuse to overwrite; --force; resume; meta mismatches; a full disk.
//
//   test_trace                                  the tests
//   test_trace write PATH NDOCS SEED CHUNK [open]
//       the driver of tests/test_trace.py: create PATH (or resume it) and
//       append synthetic documents up to NDOCS, then close (or not: open).
//   test_trace full-disk PATH DIR    (the child of the full-disk test)
#include <errno.h>
#include <glob.h>
#include <hdf5.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "trace.h"
#include "f16.h"
#include "trace_codec.h"
#include "trace_h5.h"
#include "trace_read.h"

// ---- synthetic documents (tests/test_trace.py computes the same) ----

enum { L = 3, H = 4, N_EPS = 2, N_WIN = 2, N_RUNS = 2 };
static const double EPS[N_EPS] = {0.1, 0.01}; // as typed: the trace stores them as float64
static const int WIN[N_WIN] = {4, 16};

static aha_trace_meta synth_meta(int chunk) {
    return (aha_trace_meta){
        .model_path = "synthetic", .arch = "test", .n_layers = L, .n_heads = H, .n_kv_heads = 2,
        .head_dim = 8, .vocab = 50000, .aha = 1, .router = "learned", .tau = 0.5f, .eps = EPS,
        .n_eps = N_EPS, .windows = WIN, .n_windows = N_WIN, .sinks = 1, .werr = 1, .mass = 1,
        .mode = "sweep", .dataset = "synthetic", .command_line = "test_trace",
        .chunk_tokens = chunk, .text_width = 24, .source_width = 47};
}

static int add_runs(aha_trace *t) {
    if (aha_trace_add_run(t, "full", "global", 0) < 0) return -1;
    return aha_trace_add_run(t, "w4", "oracle", 4);
}

// Documents 2j and 2j+1 are two contexts of dataset document 3j (as a shard's
// are, with gaps).
static int64_t synth_index(int64_t k) { return k / 2 * 3; }

static int synth_len(int64_t k, int seed) {
    return 1 + (int)((k * 37 + seed * 11) % 97) + (k % 13 == 5 ? 150 : 0);
}

typedef struct {
    int32_t tokens[400];
    char text[400][24];
    const char *text_ptr[400];
    uint8_t gate[L * 400 * H], rgate[L * 400 * H];
    float logit[L * 400 * H], werr[N_WIN * L * 400 * H], nll[N_RUNS][400], kl[N_RUNS][400];
    float far[N_WIN * L * 400 * H], sink[L * 400 * H];
    uint32_t dep[N_EPS * L * 400 * H];
    aha_trace_run_doc runs[N_RUNS];
    char source[48], sha256[65]; // per-document strings (doc_source, doc_sha256)
    aha_trace_doc doc;
} synth;

// Document k's doc_source and doc_sha256 (its source's length varies, as paths do).
static void synth_strings(int64_t k, char *source, size_t n_source, char *sha, size_t n_sha) {
    snprintf(source, n_source, "dir/%.*s.tok#%" PRId64, (int)(1 + k % 17), "abcdefghijklmnopq", k);
    for (int i = 0; i < 64 && (size_t)i + 1 < n_sha; i++) sha[i] = "0123456789abcdef"[(k * 7 + i) % 16], sha[i + 1] = '\0';
}

static const aha_trace_doc *synth_doc(synth *s, int64_t k, int seed) {
    int n = synth_len(k, seed);
    for (int t = 0; t < n; t++) {
        s->tokens[t] = (int32_t)((k * 1000 + t * 7) % 50000);
        snprintf(s->text[t], sizeof s->text[t], "k%" PRId64 "\u00b7%d", k, t);
        s->text_ptr[t] = s->text[t];
        for (int r = 0; r < N_RUNS; r++) {
            s->nll[r][t] = t == n - 1 ? NAN : (float)((double)(k % 7) + t * 0.5 + r);
            s->kl[r][t] = r == 0 ? 0.f : (float)((t % 4) * 0.25);
        }
    }
    for (int l = 0; l < L; l++)
        for (int t = 0; t < n; t++)
            for (int h = 0; h < H; h++) {
                size_t i = ((size_t)l * n + t) * H + h, plane = (size_t)L * n * H;
                s->gate[i] = (k + l + 2 * t + 3 * h) % 3 == 0;
                s->rgate[i] = (k + l + t + h) % 2;
                s->logit[i] = (float)(((k * 31 + l * 7 + t * 3 + h) % 1000) * 0.0137 - 6.5);
                for (int e = 0; e < N_EPS; e++)
                    s->dep[e * plane + i] =
                        (uint32_t)(1 + (k + 3 * l + 5 * h + 7 * t + 11 * e) % (t + 1));
                for (int w = 0; w < N_WIN; w++)
                    s->werr[w * plane + i] = (float)(((k + l * t + h + 5 * w) % 9) * 0.1);
                for (int w = 0; w < N_WIN; w++)
                    s->far[w * plane + i] = (float)(((k + l * t + 2 * h + 3 * w) % 7) * 0.125);
                s->sink[i] = (float)(((k + t + h) % 5) * 0.2);
            }
    for (int r = 0; r < N_RUNS; r++)
        s->runs[r] = (aha_trace_run_doc){.nll = s->nll[r], .kl = s->kl[r],
                                         .gate = r ? s->rgate : NULL,
                                         .flops_executed = 100.0 * k + r, .flops_full = 200.0 * k};
    synth_strings(k, s->source, sizeof s->source, s->sha256, sizeof s->sha256);
    s->doc = (aha_trace_doc){.n = n, .doc_index = synth_index(k), .source = s->source, .sha256 = s->sha256,
                             .tokens = s->tokens, .token_text = s->text_ptr,
                             .gate = s->gate, .router_logit = s->logit, .dep = s->dep,
                             .werr = s->werr, .runs = s->runs, .mass_far = s->far, .mass_sink = s->sink};
    return &s->doc;
}

static synth S; // large: static

// Append documents [from, to).
static int append_docs(aha_trace *t, int64_t from, int64_t to, int seed) {
    for (int64_t k = from; k < to; k++)
        if (aha_trace_append(t, synth_doc(&S, k, seed)) < 0) return -1;
    return 0;
}

// ---- reading back ----

static void *read_all(hid_t f, const char *path, hid_t mtype, size_t esize, hsize_t *n_out) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    void *v = n < 0 ? NULL : malloc((size_t)n * esize + 1);
    if (v && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) free(v), v = NULL;
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (n_out) *n_out = n < 0 ? 0 : (hsize_t)n;
    return v;
}

// token_text: fixed-length strings of *width bytes each, NUL-padded.
static char *read_text(hid_t f, const char *name, size_t *width) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), ty = d < 0 ? -1 : H5Dget_type(d);
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    *width = ty < 0 || H5Tis_variable_str(ty) != 0 ? 0 : H5Tget_size(ty);
    char *v = n < 0 || !*width ? NULL : calloc((size_t)n * *width + 1, 1);
    if (v && H5Dread(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) free(v), v = NULL;
    if (sp >= 0) H5Sclose(sp);
    if (ty >= 0) H5Tclose(ty);
    if (d >= 0) H5Dclose(d);
    return v;
}

static int64_t attr_int(hid_t loc, const char *name) {
    int64_t v = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a >= 0) H5Aread(a, H5T_NATIVE_INT64, &v), H5Aclose(a);
    return v;
}

static double attr_double(hid_t loc, const char *name) {
    double v = NAN;
    hid_t a = H5Aopen_by_name(loc, ".", name, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Aread(a, H5T_NATIVE_DOUBLE, &v), H5Aclose(a);
    return v;
}

static herr_t count_undescribed(hid_t loc, const char *name, const H5O_info_t *info, void *data) {
    (void)info;
    if (H5Aexists_by_name(loc, name, "description", H5P_DEFAULT) <= 0) {
        printf("  no description: %s\n", name);
        ++*(int *)data;
    }
    return 0;
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

// Check that path holds documents [0, n_docs) of seed exactly; returns the
// number of mismatches (0: all good).
static int verify(const char *path, int64_t n_docs, int seed, int complete) {
    int bad = 0;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 1;
    int undescribed = 0;
    H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, count_undescribed, &undescribed);
    bad += undescribed;
    bad += attr_int(f, "n_docs") != n_docs;
    bad += attr_int(f, "complete") != complete;
    hsize_t nd = 0, nt = 0, n = 0;
    hsize_t ni = 0;
    int64_t *offs = read_all(f, "doc_offsets", H5T_NATIVE_INT64, 8, &nd),
            *index = read_all(f, "doc_index", H5T_NATIVE_INT64, 8, &ni);
    int32_t *tok = read_all(f, "tokens", H5T_NATIVE_INT32, 4, &nt),
            *pos = read_all(f, "position", H5T_NATIVE_INT32, 4, &n);
    uint32_t *dep1 = read_all(f, "dependency/eps_0.01", H5T_NATIVE_UINT32, 4, NULL);
    uint8_t *gate = read_all(f, "gate", H5T_NATIVE_UINT8, 1, NULL),
            *rgate = read_all(f, "runs/w4/gate", H5T_NATIVE_UINT8, 1, NULL);
    float *logit = read_all(f, "router_logit", H5T_NATIVE_FLOAT, 4, NULL);
    float *werr = read_all(f, "window_error/w_16", H5T_NATIVE_FLOAT, 4, NULL);
    float *nll = read_all(f, "runs/w4/nll", H5T_NATIVE_FLOAT, 4, NULL),
          *kl = read_all(f, "runs/w4/kl", H5T_NATIVE_FLOAT, 4, NULL);
    size_t tw = 0, sw = 0, hw = 0;
    char *text = read_text(f, "token_text", &tw), *source = read_text(f, "doc_source", &sw), *sha = read_text(f, "doc_sha256", &hw);
    bad += !source || !sha || hw != 64 || !offs || !index || ni != (hsize_t)n_docs || !tok || !pos || !dep1 || !gate || !rgate || !logit || !werr || !nll || !kl ||
           !text || nd != (hsize_t)n_docs + 1 || n != nt;
    double fe = 0, ff = 0;
    for (int64_t k = 0; !bad && k < n_docs; k++) {
        const aha_trace_doc *d = synth_doc(&S, k, seed);
        int64_t o = offs[k];
        fe += 100.0 * k + 1, ff += 200.0 * k;
        if (offs[k + 1] - o != d->n || index[k] != synth_index(k) ||
            strncmp(source + (size_t)k * sw, d->source, sw) || strlen(d->source) > sw ||
            strncmp(sha + (size_t)k * hw, d->sha256, hw)) {
            bad++;
            break;
        }
        for (int t = 0; t < d->n; t++) {
            char want[48];
            snprintf(want, sizeof want, "k%" PRId64 "\u00b7%d", k, t);
            const char *got = text + (size_t)(o + t) * tw;
            bad += tok[o + t] != d->tokens[t] || pos[o + t] != t || strnlen(got, tw) != strlen(want) ||
                   strncmp(got, want, tw) != 0;
            bad += !same_float(nll[o + t], S.nll[1][t]) || kl[o + t] != S.kl[1][t];
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++) {
                    size_t i = ((size_t)l * d->n + t) * H + h,
                           j = ((size_t)l * nt + (size_t)(o + t)) * H + h;
                    size_t plane = (size_t)L * d->n * H;
                    bad += dep1[j] != d->dep[plane + i] || gate[j] != d->gate[i] ||
                           rgate[j] != S.rgate[i];
                    // float16 values read back as floats: exactly the halves written
                    bad += aha_f32_to_f16(logit[j]) != aha_f32_to_f16(d->router_logit[i]);
                    bad += aha_f32_to_f16(werr[j]) != aha_f32_to_f16(d->werr[plane + i]);
                }
        }
    }
    if (!bad && n_docs > 0) {
        hid_t g = H5Gopen2(f, "runs/w4", H5P_DEFAULT);
        bad += attr_double(g, "flops_executed") != fe || attr_double(g, "flops_full") != ff;
        H5Gclose(g);
    }
    free(source), free(sha);
    free(offs), free(index), free(tok), free(pos), free(dep1), free(gate), free(rgate), free(logit), free(werr),
        free(nll), free(kl), free(text);
    H5Fclose(f);
    return bad;
}

// ---- the driver ----

static int drive(const char *path, int64_t n_docs, int seed, int chunk, int close_it) {
    aha_trace_meta m = synth_meta(chunk);
    aha_trace *t = NULL;
    int64_t done = 0, tokens = 0;
    int rc = access(path, F_OK) == 0 ? aha_trace_resume(&t, path, &m, &done, &tokens)
                                     : aha_trace_create(&t, path, &m, 0);
    if (rc == 0) rc = add_runs(t);
    if (rc == 0) rc = append_docs(t, done, n_docs, seed);
    if (rc == 0) {
        rc = close_it ? aha_trace_close(t) : 0;
        if (!close_it) aha_trace_free(t);
    } else {
        aha_trace_free(t);
    }
    if (rc < 0) fprintf(stderr, "test_trace: %s\n", aha_errmsg());
    return rc < 0 ? 1 : 0;
}

// ---- tests ----

static char dir[256];

static const char *tpath(const char *name) {
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static void test_roundtrip(void) {
    const char *p = tpath("a.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0, "%s", aha_errmsg());
    CHECK(t && add_runs(t) == 0, "%s", aha_errmsg());
    CHECK(t && append_docs(t, 0, 40, 1) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 40, 1, 0) == 0, "the unfinished trace (an index over parts) reads back");
    CHECK(t && aha_trace_close(t) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 40, 1, 1) == 0, "the complete trace reads back");
    CHECK(!exists(tpath("a.h5.parts")) && !exists(tpath("a.h5.tmp")), "close removes the parts");
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "dependency/eps_0.1", H5P_DEFAULT), pl = H5Dget_create_plist(d);
    CHECK(H5Pget_layout(pl) == H5D_CHUNKED, "the complete trace has plain chunked datasets");
    CHECK(attr_double(d, "eps") == 0.1, "eps attribute: the double given");
    H5Pclose(pl), H5Dclose(d), H5Fclose(f);
}

static void test_empty(void) {
    const char *p = tpath("e.h5");
    aha_trace_meta m = synth_meta(0);
    aha_trace *t = NULL;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0, "%s", aha_errmsg());
    CHECK(t && add_runs(t) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 0, 1, 0) == 0, "empty index");
    CHECK(t && aha_trace_close(t) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 0, 1, 1) == 0, "empty complete trace");
}

static void test_overwrite(void) {
    const char *p = tpath("o.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    FILE *fp = fopen(p, "w");
    fputs("precious", fp);
    fclose(fp);
    CHECK(aha_trace_create(&t, p, &m, 0) < 0 && !t, "refused");
    CHECK(strstr(aha_errmsg(), p) && strstr(aha_errmsg(), "exists"), "message: %s", aha_errmsg());
    char buf[16] = "";
    fp = fopen(p, "r");
    CHECK(fp && fgets(buf, sizeof buf, fp) && strcmp(buf, "precious") == 0, "file untouched");
    if (fp) fclose(fp);
    CHECK(aha_trace_create(&t, p, &m, 1) == 0, "force: %s", aha_errmsg());
    CHECK(t && add_runs(t) == 0 && append_docs(t, 0, 3, 2) == 0 && aha_trace_close(t) == 0, "%s",
          aha_errmsg());
    CHECK(verify(p, 3, 2, 1) == 0, "forced trace reads back");
    t = NULL;
    CHECK(aha_trace_create(&t, p, &m, 0) < 0 && strstr(aha_errmsg(), "exists"),
          "an existing trace too");
    CHECK(aha_trace_create(&t, p, &m, 1) == 0 && add_runs(t) == 0, "force over a trace: %s",
          aha_errmsg());
    CHECK(t && append_docs(t, 0, 2, 2) == 0, "%s", aha_errmsg());
    aha_trace_free(t);
    CHECK(verify(p, 2, 2, 0) == 0, "forced trace is new");
    // An unfinished trace whose index was renamed keeps its parts.
    const char *q = tpath("o2.h5");
    CHECK(rename(p, q) == 0 && verify(q, 2, 2, 0) == 0, "renamed index still reads");
    CHECK(aha_trace_create(&t, p, &m, 0) < 0 && strstr(aha_errmsg(), "parts of another trace"),
          "%s", aha_errmsg());
    CHECK(verify(q, 2, 2, 0) == 0, "its parts are untouched");
}

static void test_resume(void) {
    const char *p = tpath("r.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    int64_t docs = -1, toks = -1;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && add_runs(t) == 0 && append_docs(t, 0, 23, 3) == 0,
          "%s", aha_errmsg());
    aha_trace_free(t); // a stop without close
    t = NULL;
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 0, "%s", aha_errmsg());
    CHECK(docs == 23 && toks > 0, "docs_done %" PRId64, docs);
    CHECK(t && aha_trace_append(t, synth_doc(&S, 23, 3)) < 0 &&
              strstr(aha_errmsg(), "not declared again"),
          "runs must be declared again: %s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "full", "global", 0) == 0, "%s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "w8", "oracle", 8) < 0 && strstr(aha_errmsg(), "run 2 differs"),
          "a different run: %s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "w4", "oracle", 4) == 0, "%s", aha_errmsg());
    CHECK(t && append_docs(t, 23, 61, 3) == 0, "%s", aha_errmsg());
    aha_trace_free(t);
    t = NULL;
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 0 && docs == 61, "%s", aha_errmsg());
    CHECK(t && add_runs(t) == 0 && aha_trace_close(t) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 61, 3, 1) == 0, "all documents, once each");
    t = NULL;
    // a complete trace: compared as an unfinished one is (its runs too), and it takes nothing
    aha_trace_meta m3 = m;
    m3.sinks = 2;
    CHECK(aha_trace_resume(&t, p, &m3, &docs, &toks) < 0 && strstr(aha_errmsg(), "--sinks differs (trace: 1; now: 2)"),
          "a complete trace, other settings: %s", aha_errmsg());
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 1 && docs == 61, "a complete trace: %s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "full", "global", 0) == 0 && aha_trace_runs_check(t) < 0 &&
              strstr(aha_errmsg(), "the trace has 2 runs, this run declares 1 (the first missing: w4)"),
          "a run fewer: %s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "w4", "oracle", 4) == 0 && aha_trace_runs_check(t) == 0, "%s", aha_errmsg());
    CHECK(t && aha_trace_append(t, synth_doc(&S, 61, 3)) < 0 && strstr(aha_errmsg(), "complete"), "%s", aha_errmsg());
    aha_trace_free(t);
    CHECK(verify(p, 61, 3, 1) == 0, "the complete trace is untouched");
    // an unfinished trace of an aha before doc_index: its parts lack it, so no resume appends to them
    const char *q = tpath("r_old.h5");
    t = NULL;
    CHECK(aha_trace_create(&t, q, &m, 0) == 0 && add_runs(t) == 0 && append_docs(t, 0, 3, 3) == 0, "%s",
          aha_errmsg());
    aha_trace_free(t);
    t = NULL;
    hid_t f = H5Fopen(q, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0 && H5Ldelete(f, "doc_index", H5P_DEFAULT) >= 0, "index without doc_index");
    if (f >= 0) H5Fclose(f);
    CHECK(aha_trace_resume(&t, q, &m, &docs, &toks) < 0 && !t &&
              strstr(aha_errmsg(), "written by an aha before doc_index"),
          "%s", aha_errmsg());
}

// A path with '%' (HDF5 substitutes in a virtual dataset's source file
// names): the unfinished trace reads back through its index, resumes and
// completes, and its parts are found by their names.
static void test_percent(void) {
    for (int i = 0; i < 3; i++) {
        const char *p = tpath(i == 0 ? "p%b.h5" : i == 1 ? "100%%.h5" : "%s%d.h5");
        char parts[600];
        snprintf(parts, sizeof parts, "%s.parts", p);
        CHECK(drive(p, 9, 4, 8, 0) == 0, "an unfinished trace at %s", p);
        CHECK(verify(p, 9, 4, 0) == 0, "%s: its index reads its parts", p);
        CHECK(drive(p, 17, 4, 8, 1) == 0, "resumed and closed: %s", p);
        CHECK(verify(p, 17, 4, 1) == 0 && !exists(parts), "%s: complete, all documents once", p);
    }
}

// A grid run's number (run attribute param) is kept by a resume, which
// refuses another, and reads back; a run without one reads NaN.
static void test_run_param(void) {
    const char *p = tpath("param.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    int64_t docs, toks;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && aha_trace_add_run(t, "full", "global", 0) == 0 &&
              aha_trace_add_run_param(t, "oracle_e0.1_w4", "oracle", 4, 0.1) == 0 && append_docs(t, 0, 5, 4) == 0,
          "%s", aha_errmsg());
    aha_trace_free(t);
    t = NULL;
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 0 && aha_trace_add_run(t, "full", "global", 0) == 0,
          "%s", aha_errmsg());
    CHECK(t && aha_trace_add_run_param(t, "oracle_e0.1_w4", "oracle", 4, 0.2) < 0 &&
              strstr(aha_errmsg(), "run 2 differs"),
          "another param: %s", aha_errmsg());
    CHECK(t && aha_trace_add_run_param(t, "oracle_e0.1_w4", "oracle", 4, 0.1) == 0 && aha_trace_close(t) == 0,
          "%s", aha_errmsg());
    aha_tr tr;
    CHECK(aha_tr_open(&tr, p) == 0 && tr.n_runs == 2, "%s", aha_errmsg());
    CHECK(isnan(tr.runs[0].param) && tr.runs[1].param == 0.1 && !strcmp(tr.runs[1].policy, "oracle"),
          "params %g %g", tr.runs[0].param, tr.runs[1].param);
    aha_tr_close(&tr);
}

static void test_mismatch(void) { // and resume refusals: a second writer, a missing part
    const char *p = tpath("m.h5");
    aha_trace_meta m = synth_meta(8), m2 = m;
    aha_trace *t = NULL;
    int64_t docs, toks;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && add_runs(t) == 0 && append_docs(t, 0, 2, 4) == 0,
          "%s", aha_errmsg());
    aha_trace_free(t);
    static const double eps2[1] = {0.1};
    m2.eps = eps2, m2.n_eps = 1;
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0, "refused");
    CHECK(strstr(aha_errmsg(), "eps differs (trace: 0.1,0.01; now: 0.1)"), "message: %s",
          aha_errmsg());
    m2 = m, m2.model_path = "other";
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0 && strstr(aha_errmsg(), "model differs"),
          "%s", aha_errmsg());
    m2 = m, m2.n_heads = 5;
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0 && strstr(aha_errmsg(), "n_heads differs"),
          "%s", aha_errmsg());
    m2 = m, m2.device = "cuda:bf16"; // a CPU trace is not continued on a GPU
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0 &&
              strstr(aha_errmsg(), "device differs (trace: cpu; now: cuda:bf16)"),
          "%s", aha_errmsg());
    CHECK(verify(p, 2, 4, 0) == 0, "the trace is untouched");
    m2 = m, m2.command_line = "a different command line is fine";
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) == 0, "%s", aha_errmsg());
    aha_trace *t2 = NULL;
    CHECK(aha_trace_resume(&t2, p, &m, &docs, &toks) < 0 && strstr(aha_errmsg(), "another process"),
          "a second writer: %s", aha_errmsg());
    CHECK(aha_trace_create(&t2, p, &m, 1) < 0 && strstr(aha_errmsg(), "another process"),
          "not even with force: %s", aha_errmsg());
    aha_trace_free(t);
    CHECK(verify(p, 2, 4, 0) == 0, "the trace is untouched");
    glob_t g = {0};
    CHECK(glob(tpath("m.h5.parts/p*.h5"), 0, NULL, &g) == 0 && g.gl_pathc > 0, "a piece");
    CHECK(g.gl_pathc > 0 && rename(g.gl_pathv[0], tpath("moved.h5")) == 0, "moved a part away");
    globfree(&g);
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) < 0 && strstr(aha_errmsg(), "is missing"),
          "a missing part: %s", aha_errmsg());
}

static void test_checks(void) {
    const char *p = tpath("c.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    static const double eps_dup[2] = {0.1, 0.1};
    aha_trace_meta bad = m;
    bad.eps = eps_dup;
    CHECK(aha_trace_create(&t, p, &bad, 0) < 0 && strstr(aha_errmsg(), "eps values repeat"), "%s",
          aha_errmsg());
    CHECK(!exists(p), "nothing written");
    static double eps_many[AHA_TRACE_MAX_EPS + 1]; // more than a trace holds: the reader would refuse it
    for (int i = 0; i <= AHA_TRACE_MAX_EPS; i++) eps_many[i] = (i + 1) / 64.0;
    bad = m, bad.eps = eps_many, bad.n_eps = AHA_TRACE_MAX_EPS + 1;
    CHECK(aha_trace_create(&t, p, &bad, 0) < 0 && strstr(aha_errmsg(), "at most 32 values"), "%s",
          aha_errmsg());
    CHECK(aha_trace_create(&t, tpath("runs.h5"), &m, 0) == 0, "%s", aha_errmsg());
    for (int i = 0; t && i < AHA_TRACE_MAX_RUNS; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        CHECK(aha_trace_add_run(t, name, "local", 0) == 0, "%s", aha_errmsg());
    }
    CHECK(t && aha_trace_add_run(t, "one_more", "local", 0) < 0 && strstr(aha_errmsg(), "at most 64 runs"),
          "%s", aha_errmsg());
    aha_trace_free(t);
    t = NULL;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && add_runs(t) == 0, "%s", aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "full", "local", 0) < 0 && strstr(aha_errmsg(), "repeat"), "%s",
          aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "a/b", "local", 0) < 0, "a '/' in a run name");
    aha_trace_doc d = *synth_doc(&S, 0, 5);
    d.dep = NULL;
    CHECK(t && aha_trace_append(t, &d) < 0 && strstr(aha_errmsg(), "no dep"), "%s", aha_errmsg());
    CHECK(t && append_docs(t, 0, 1, 5) == 0, "a bad document does not stop the trace: %s",
          aha_errmsg());
    CHECK(t && aha_trace_add_run(t, "late", "local", 0) < 0, "runs come before documents");
    aha_trace_free(t);
}

static void test_f16(void) {
    static const struct {
        float f;
        uint16_t h;
    } c[] = {{1.f, 0x3c00},           {-2.f, 0xc000},          {0.1f, 0x2e66},
             {65504.f, 0x7bff},       {65520.f, 0x7c00},       {1e9f, 0x7c00},
             {-INFINITY, 0xfc00},     {5.9604645e-8f, 0x0001}, {2.9802322e-8f, 0x0000},
             {4.4703484e-8f, 0x0001}, {6.1035156e-5f, 0x0400}, {2049.f, 0x6800},
             {2051.f, 0x6802},        {0.f, 0x0000},           {-0.f, 0x8000}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECK(aha_f32_to_f16(c[i].f) == c[i].h, "f16(%g) = 0x%04x, want 0x%04x", c[i].f,
              aha_f32_to_f16(c[i].f), c[i].h);
    CHECK((aha_f32_to_f16(NAN) & 0x7fff) > 0x7c00, "NaN stays NaN");
}

// The child of test_full_disk: files may grow to 96 KiB (RLIMIT_FSIZE, as a
// full disk would stop them); exit status = documents committed, 255 on a
// wrong error.
static int full_disk_child(const char *p) {
    struct rlimit rl = {96 << 10, 96 << 10};
    signal(SIGXFSZ, SIG_IGN); // a write past the limit fails with EFBIG instead of killing
    setrlimit(RLIMIT_FSIZE, &rl);
    aha_trace_meta m = synth_meta(64);
    aha_trace *t = NULL;
    if (aha_trace_create(&t, p, &m, 0) < 0 || add_runs(t) < 0) return 255;
    int k = 0;
    while (k < 200 && aha_trace_append(t, synth_doc(&S, k, 6)) == 0) k++;
    int ok = k < 200 && strstr(aha_errmsg(), "File too large") && strstr(aha_errmsg(), dir);
    printf("  error: %s\n", aha_errmsg());
    ok = ok && aha_trace_append(t, synth_doc(&S, k, 6)) < 0 &&
         strstr(aha_errmsg(), "earlier write failed");
    ok = ok && aha_trace_close(t) < 0;
    fflush(stdout);
    return ok ? k : 255;
}

static void test_full_disk(void) {
    const char *p = tpath("f.h5");
    pid_t pid = fork();
    if (pid == 0) { // exec, not just fork: OpenMP's threads do not survive a fork
        execl("/proc/self/exe", "test_trace", "full-disk", p, dir, (char *)NULL);
        _exit(254);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int k = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
    CHECK(k > 0 && k < 255, "child: %d documents", k);
    CHECK(k > 0 && k < 255 && verify(p, k, 6, 0) == 0, "every committed document is there");
    aha_trace_meta m = synth_meta(64);
    aha_trace *t = NULL;
    int64_t docs = 0, toks;
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 0 && docs == k, "%s", aha_errmsg());
    CHECK(t && add_runs(t) == 0 && append_docs(t, k, 200, 6) == 0 && aha_trace_close(t) == 0, "%s",
          aha_errmsg());
    CHECK(verify(p, 200, 6, 1) == 0, "finished after the disk has room");
}

static void test_layer_window(void) { // natively local layers: written, read, compared as zeros when absent
    const char *p = tpath("lw.h5");
    static const int lw[L] = {0, 512, 0}, lw2[L] = {0, 0, 512}, bad_len[2] = {0, 4}, neg[L] = {0, -1, 0};
    aha_trace_meta m = synth_meta(8), m2;
    aha_trace *t = NULL;
    int64_t docs, toks;
    m2 = m, m2.layer_window = bad_len, m2.n_layer_window = 2;
    CHECK(aha_trace_create(&t, p, &m2, 0) < 0 && strstr(aha_errmsg(), "layer_window must hold n_layers values"),
          "%s", aha_errmsg());
    m2 = m, m2.layer_window = neg, m2.n_layer_window = L;
    CHECK(aha_trace_create(&t, p, &m2, 0) < 0 && strstr(aha_errmsg(), "layer_window values must be >= 0"), "%s",
          aha_errmsg());
    m.layer_window = lw, m.n_layer_window = L;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && add_runs(t) == 0 && append_docs(t, 0, 2, 4) == 0, "%s",
          aha_errmsg());
    aha_trace_free(t);
    m2 = m, m2.layer_window = lw2;
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0 &&
              strstr(aha_errmsg(), "layer_window differs (trace: 0,512,0; now: 0,0,512)"),
          "%s", aha_errmsg());
    m2 = m, m2.layer_window = NULL, m2.n_layer_window = 0; // none given: every layer global
    CHECK(aha_trace_resume(&t, p, &m2, &docs, &toks) < 0 &&
              strstr(aha_errmsg(), "layer_window differs (trace: 0,512,0; now: 0,0,0)"),
          "%s", aha_errmsg());
    CHECK(aha_trace_resume(&t, p, &m, &docs, &toks) == 0 && add_runs(t) == 0 && aha_trace_close(t) == 0, "%s",
          aha_errmsg());
    aha_tr tr;
    CHECK(aha_tr_open(&tr, p) == 0, "%s", aha_errmsg());
    CHECK(tr.m.n_layer_window == L && tr.m.layer_window[1] == 512 && aha_trace_n_global(&tr.m) == 2 &&
              aha_trace_layer_window(&tr.m, 1) == 512 && aha_trace_layer_window(&tr.m, 2) == 0,
          "read back");
    char label[160];
    aha_trace_layers_label(&tr.m, label, sizeof label);
    CHECK(!strcmp(label, "global layers only: 2 of 3; 1 natively local (window 512) shown apart"), "%s", label);
    aha_tr_close(&tr);
    // a meta without the list (older callers, traces from before it) equals an all-zero one
    aha_trace_meta a = synth_meta(8), b = a;
    static const int zeros[L] = {0};
    b.layer_window = zeros, b.n_layer_window = L;
    aha_trace_diff d;
    CHECK(!aha_trace_meta_diff(&a, &b, A_RESUME | A_COMBINE, &d), "absent = all global");
    aha_trace_layers_label(&a, label, sizeof label);
    CHECK(!strcmp(label, "all layers") && aha_trace_n_global(&a) == L, "%s", label);
}

// "Is this the same run?": the flag and both values as typed; inputs by their
// fingerprints (a model by the file that differs), by path only where one
// lacks them.
static void test_meta_diff(void) {
    aha_trace_meta a = synth_meta(8), b = a;
    aha_trace_diff d;
    b.tau = 0.7, b.model_path = "moved/elsewhere"; // a moved model with no fingerprints: its path differs
    CHECK(aha_trace_meta_diff(&a, &b, A_RESUME, &d) && !strcmp(d.what, "model"), "%s", d.what);
    a.model_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  config.json\n"
                     "1111111111111111111111111111111111111111111111111111111111111111  model.safetensors\n";
    b.model_sha256 = a.model_sha256; // fingerprinted: the path is informational
    CHECK(aha_trace_meta_diff(&a, &b, A_RESUME, &d) && !strcmp(d.what, "--tau") && !strcmp(d.a, "0.5") &&
              !strcmp(d.b, "0.7"),
          "%s (%s vs %s)", d.what, d.a, d.b);
    b.tau = a.tau, b.mass = 0;
    CHECK(aha_trace_meta_diff(&a, &b, A_COMBINE, &d) && !strcmp(d.what, "--mass") && !strcmp(d.a, "--mass") &&
              !strcmp(d.b, "no --mass"),
          "%s (%s vs %s)", d.what, d.a, d.b);
    b.mass = a.mass;
    b.model_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  config.json\n"
                     "2222222222222222222222222222222222222222222222222222222222222222  model.safetensors\n";
    CHECK(aha_trace_meta_diff(&a, &b, A_RESUME, &d) && !strcmp(d.what, "the model's model.safetensors") &&
              !strcmp(d.a, "sha256 1111111111111111...") && !strcmp(d.b, "sha256 2222222222222222..."),
          "%s (%s vs %s)", d.what, d.a, d.b);
    b.model_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  config.json\n";
    CHECK(aha_trace_meta_diff(&a, &b, A_RESUME, &d) && !strcmp(d.what, "the model's model.safetensors") &&
              !strcmp(d.b, "not read"),
          "%s (%s vs %s)", d.what, d.a, d.b);
    b.model_sha256 = a.model_sha256, b.router_file = "r.st", b.router_sha256 = "abc";
    CHECK(aha_trace_meta_diff(&a, &b, A_RESUME, &d) && !strcmp(d.what, "--router") && !strcmp(d.a, "none") &&
              !strcmp(d.b, "r.st"),
          "%s (%s vs %s)", d.what, d.a, d.b);
    a.router_file = "moved.st", a.router_sha256 = "abc";
    CHECK(!aha_trace_meta_diff(&a, &b, A_RESUME | A_COMBINE, &d), "the same router file, moved: %s", d.what);
    b.dataset_sha256 = "d1", a.dataset_sha256 = "d2";
    CHECK(aha_trace_meta_diff(&a, &b, A_COMBINE, &d) && !strcmp(d.what, "the dataset (DATA)") &&
              !strcmp(d.a, "synthetic, sha256 d2...") && !strcmp(d.b, "synthetic, sha256 d1..."),
          "%s (%s vs %s)", d.what, d.a, d.b);
}

// The writer hands HDF5 chunks it encoded itself (H5Dwrite_chunk skips the
// filters), so its checksum must be HDF5's bit for bit: a chunk HDF5
// filtered itself (H5Dwrite through trace_codec_pipeline), read raw, equals
// trace_codec_encode's, for values of 1, 2, 4 and 8 bytes and 5-byte
// strings, odd byte counts among them; and a chunk stored uncompressed with
// its checksum (compress 0) reads back through HDF5, which verifies it.
static void test_fletcher(void) {
    static const struct {
        int es, n; // bytes per value, values in the one chunk
    } c[] = {{1, 1001}, {2, 700}, {4, 4099}, {8, 33}, {5, 7}, {5, 1}};
    hid_t f = trace_file_create(tpath("fletcher.h5"));
    CHECK(f >= 0, "%s", aha_errmsg());
    for (size_t k = 0; f >= 0 && k < sizeof c / sizeof c[0]; k++) {
        const int es = c[k].es, n = c[k].n;
        hid_t ty = es == 5 ? trace_h5_str(5) : es == 1 ? H5T_STD_U8LE : es == 2 ? H5T_STD_U16LE
                 : es == 4 ? H5T_STD_U32LE : H5T_STD_U64LE;
        unsigned char *v = malloc((size_t)n * es), *raw = malloc((size_t)n * es + 64), *back = malloc((size_t)n * es);
        for (int i = 0; i < n * es; i++) v[i] = es == 5 ? (unsigned char)('a' + (i * 7 + k) % 26) : (unsigned char)((i * 2654435761u + k) >> 13);
        hsize_t dim = (hsize_t)n, off = 0, size = 0;
        hid_t sp = H5Screate_simple(1, &dim, NULL), p = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(p, 1, &dim);
        trace_codec_pipeline(p);
        char name[2][32];
        snprintf(name[0], sizeof name[0], "hdf5_%zu", k), snprintf(name[1], sizeof name[1], "raw_%zu", k);
        hid_t d = H5Dcreate2(f, name[0], ty, sp, H5P_DEFAULT, p, H5P_DEFAULT);
        uint32_t mask = 9;
        trace_zchunk z = {0}, u = {0};
        int ok = d >= 0 && H5Dwrite(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0 && H5Dflush(d) >= 0 &&
                 H5Dget_chunk_storage_size(d, &off, &size) >= 0 && size <= (hsize_t)n * es + 64 &&
                 H5Dread_chunk(d, H5P_DEFAULT, &off, &mask, raw) >= 0 &&
                 trace_codec_encode(v, (size_t)n * es, (size_t)es, 1, &z) == 0;
        CHECK(ok && mask == 0 && z.mask == 0 && z.size == size && memcmp(z.data, raw, size) == 0,
              "%d values of %d bytes: HDF5 stored %llu bytes, the codec %zu; they %s", n, es, (unsigned long long)size,
              z.size, ok && z.size == size && !memcmp(z.data, raw, size) ? "are equal" : "differ");
        trace_h5_drop(d);
        d = H5Dcreate2(f, name[1], ty, sp, H5P_DEFAULT, p, H5P_DEFAULT);
        ok = d >= 0 && trace_codec_encode(v, (size_t)n * es, (size_t)es, 0, &u) == 0 &&
             H5Dwrite_chunk(d, H5P_DEFAULT, u.mask, &off, u.size, u.data) >= 0 &&
             H5Dread(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0;
        CHECK(ok && u.mask == TRACE_CODEC_RAW && u.size == (size_t)n * es + 4 && memcmp(back, v, (size_t)n * es) == 0,
              "%d values of %d bytes stored uncompressed: HDF5 verifies their checksum and reads them", n, es);
        trace_h5_drop(d), trace_h5_drop(p), trace_h5_drop(sp);
        if (es == 5) trace_h5_drop(ty);
        free(v), free(raw), free(back), free(z.data), free(u.data);
    }
    if (f >= 0) trace_file_close(f, tpath("fletcher.h5"));
}

// token_text is fixed-length: a piece longer than text_width is refused
// (the trace keeps its documents), never cut; a width outside 1..4096 too.
static void test_text_width(void) {
    const char *p = tpath("tw.h5");
    aha_trace_meta m = synth_meta(8);
    aha_trace *t = NULL;
    m.text_width = 0;
    CHECK(aha_trace_create(&t, p, &m, 0) < 0 && strstr(aha_errmsg(), "token_text strings of 0 bytes"), "%s",
          aha_errmsg());
    m.text_width = 6;
    CHECK(aha_trace_create(&t, p, &m, 0) == 0 && add_runs(t) == 0, "%s", aha_errmsg());
    aha_trace_doc d = *synth_doc(&S, 0, 5); // its pieces are "k<k>\u00b7<t>": 56 of 5 or 6 bytes
    CHECK(t && aha_trace_append(t, &d) == 0, "%s", aha_errmsg());
    d = *synth_doc(&S, 12, 5); // "k12\u00b710" is 7
    CHECK(t && aha_trace_append(t, &d) < 0 && strstr(aha_errmsg(), "token_text[10] is 7 bytes, longer than text_width 6"),
          "%s", aha_errmsg());
    aha_trace_free(t);
    aha_tr tr;
    CHECK(aha_tr_open(&tr, p) == 0 && tr.n_docs == 1 && tr.m.text_width == 6, "%s", aha_errmsg());
    char *text[12] = {0};
    CHECK(aha_tr_read(&tr, TD_TOKEN_TEXT, 0, 0, 12, text) == 0 && !strcmp(text[11], "k0\u00b711"), "%s",
          text[11] ? text[11] : aha_errmsg());
    aha_tr_free_text(12, text);
    aha_tr_close(&tr);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "full-disk") == 0) {
        snprintf(dir, sizeof dir, "%s", argv[3]);
        return full_disk_child(argv[2]);
    }
    if (argc >= 6 && strcmp(argv[1], "write") == 0)
        return drive(argv[2], atoll(argv[3]), atoi(argv[4]), atoi(argv[5]),
                     !(argc > 6 && strcmp(argv[6], "open") == 0));
    const char *tmp = getenv("TMPDIR"); // tests/run.sh points it at a tmpfs where it can
    snprintf(dir, sizeof dir, "%s/aha_trace_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return 1;
    TEST("trace: create, append, close, read back with the C API", test_roundtrip());
    TEST("trace: a trace without documents", test_empty());
    TEST("trace: never overwrites unless force", test_overwrite());
    TEST("trace: resume after a stop, declare runs again, finish; a complete trace is compared and takes nothing; an "
         "unfinished trace without doc_index is refused", test_resume());
    TEST("trace: resume with different settings names the field", test_mismatch());
    TEST("trace: a run's param is kept by resume (another is refused) and reads back", test_run_param());
    TEST("trace: a path with '%' is written, read unfinished, resumed and closed", test_percent());
    TEST("trace: bad arguments are errors", test_checks());
    TEST("trace: layer_window is written, read back, resumed only when equal; absent reads as all global",
         test_layer_window());
    TEST("trace: \"same run?\" names the flag and both values as typed; inputs by fingerprint (the model's file "
         "that differs), by path only without one", test_meta_diff());
    TEST("trace: float16 conversion rounds to nearest even", test_f16());
    TEST("trace: the codec's Fletcher-32 is HDF5's, bit for bit; uncompressed chunks keep it", test_fletcher());
    TEST("trace: token_text is fixed-length; a longer piece is refused, never cut", test_text_width());
    TEST("trace: a full disk stops the trace with a clear error, and it resumes", test_full_disk());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!check_total_failed_ && system(cmd) != 0) return 1;
    TEST_EXIT();
}
