// The trace store (runtime/trace/store/store.h) on synthetic columns, with
// no trace schema: records appended, read back with the HDF5 C API from the
// index (unfinished) and the final file; resumed after a release; a writer
// killed with SIGKILL at random moments loses no committed record and
// resumes; refusals (an existing file, a second writer, a missing part).
//
//   test_store                        the tests
//   test_store write PATH N CHUNK     the crash test's child: create PATH (or
//       resume it), append records up to N ("committed K" after each), close
#include <errno.h>
#include <glob.h>
#include <hdf5.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "store.h"
#include "trace_h5.h"

// ---- synthetic records ----

enum { ROWS = 2, WIDTH = 3, TEXT = 8, NAME = 12, MAXN = 40 };

static int64_t rec_len(int64_t k) { return 1 + (k * 7 + k / 5) % 31; } // 1..31: some longer than a chunk

static int32_t val_a(int64_t k, int t) { return (int32_t)(k * 1000 + t); }
static float val_b(int64_t k, int r, int t, int w) {
    return (float)k + 0.5f * (float)t + 0.01f * (float)(r * WIDTH + w);
}
static void val_c(int64_t k, int t, char out[TEXT + 1]) { // of 3..8 bytes
    char s[48];
    snprintf(s, sizeof s, "%c%lld.%d", 'a' + (int)(k % 26), (long long)k, t);
    snprintf(out, TEXT + 1, "%.8s", s);
}
static int64_t val_idx(int64_t k) { return k * 7 - 3; }
static void val_name(int64_t k, char out[NAME + 1]) {
    char s[48];
    snprintf(s, sizeof s, "rec-%lld", (long long)k);
    snprintf(out, NAME + 1, "%.12s", s);
}

typedef struct { // the store's columns and types, as a caller declares them
    hid_t text, name;
} types;

static int header(void *ctx, hid_t f, const trace_store_state *st) { // the state, as attributes
    (void)ctx;
    const int64_t v[5] = {st->complete, st->n_rec, st->n, st->chunk, st->id};
    static const char *const names[5] = {"complete", "n_rec", "n", "chunk", "id"};
    for (int i = 0; i < 5; i++)
        if (trace_attr_put(f, names[i], H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v[i]) < 0) return -1;
    return trace_attr_describe(f, "a store of synthetic columns");
}

static const int32_t fill_a = -1;
static const int64_t fill_idx = -2;

// A handle with the columns (open: to create or resume), or -1.
static int store_new(trace_store **s, const char *path, int64_t chunk, const types *ty) {
    const trace_store_def def = {.what = "store", .chunk = chunk, .ends = "ends", .ends_desc = "where each record ends",
                                 .header = header};
    const trace_store_col a = {.path = "a", .rank = 1, .rows = 1, .width = 1, .ftype = H5T_STD_I32LE,
                               .mtype = H5T_NATIVE_INT32, .fill = &fill_a, .desc = "ints"};
    const trace_store_col b = {.path = "g/b", .rank = 3, .rows = ROWS, .width = WIDTH, .ftype = H5T_IEEE_F32LE,
                               .mtype = H5T_NATIVE_FLOAT, .desc = "floats [rows, T, width]", .attr = "scale",
                               .attr_value = 0.5};
    const trace_store_col c = {.path = "c", .rank = 1, .rows = 1, .width = 1, .ftype = ty->text,
                               .mtype = ty->text, .desc = "text"};
    const trace_store_col idx = {.path = "idx", .rank = 1, .rows = 1, .width = 1, .ftype = H5T_STD_I64LE,
                                 .mtype = H5T_NATIVE_INT64, .fill = &fill_idx, .desc = "a number per record"};
    const trace_store_col name = {.path = "name", .rank = 1, .rows = 1, .width = 1, .ftype = ty->name,
                                  .mtype = ty->name, .desc = "a name per record"};
    if (trace_store_new(s, path, &def) < 0) return -1;
    if (trace_store_add(*s, &a) < 0 || trace_store_add(*s, &b) < 0 || trace_store_add(*s, &c) < 0 ||
        trace_store_add_rec(*s, &idx) < 0 || trace_store_add_rec(*s, &name) < 0) {
        trace_store_free(*s);
        *s = NULL;
        return -1;
    }
    return 0;
}

// Append record k.
static int append(trace_store *s, int64_t k) {
    static int32_t a[MAXN];
    static float b[ROWS * MAXN * WIDTH];
    static char c[MAXN * TEXT];
    char name[NAME + 1];
    const int n = (int)rec_len(k);
    for (int t = 0; t < n; t++) {
        char text[TEXT + 1];
        a[t] = val_a(k, t);
        val_c(k, t, text);
        memset(c + t * TEXT, 0, TEXT);
        memcpy(c + t * TEXT, text, strlen(text));
        for (int r = 0; r < ROWS; r++)
            for (int w = 0; w < WIDTH; w++) b[(r * n + t) * WIDTH + w] = val_b(k, r, t, w);
    }
    val_name(k, name);
    const void *values[3] = {a, b, c};
    const trace_store_val recs[2] = {{.i = val_idx(k)}, {.s = name}};
    const trace_store_rec rec = {.n = n, .values = values, .recs = recs};
    return trace_store_append(s, &rec);
}

// The state the header of the store at path records; -1 when it cannot be read.
static int state_read(const char *path, trace_store_state *st) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int64_t v[5];
    static const char *const names[5] = {"complete", "n_rec", "n", "chunk", "id"};
    int ok = f >= 0;
    for (int i = 0; ok && i < 5; i++) {
        hid_t a = H5Aopen(f, names[i], H5P_DEFAULT);
        ok = a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &v[i]) >= 0;
        if (a >= 0) H5Aclose(a);
    }
    if (f >= 0) H5Fclose(f);
    if (ok) *st = (trace_store_state){(int)v[0], v[1], v[2], v[3], v[4]};
    return ok ? 0 : -1;
}

// ---- reading back ----

static void *read_all(hid_t f, const char *name, hid_t mtype, size_t es, hsize_t *dims, int *rank) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d < 0 ? -1 : H5Dget_space(d);
    *rank = sp < 0 ? 0 : H5Sget_simple_extent_ndims(sp);
    hsize_t n = 1;
    if (*rank > 0) H5Sget_simple_extent_dims(sp, dims, NULL);
    for (int i = 0; i < *rank; i++) n *= dims[i];
    void *v = *rank > 0 ? calloc(n + 1, es) : NULL;
    if (v && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
        free(v);
        v = NULL;
    }
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return v;
}

// Check that path holds records [0, n) exactly, every column; n < 0: as many
// as it holds (at least -n - 1). Returns the records it holds, or -1.
static int64_t verify(const char *path, int64_t n, hid_t text_t, hid_t name_t) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return -1;
    hsize_t de[1], da[1], db[3], dc[1], di[1], dn[1];
    int re, ra, rb, rc, ri, rn;
    int64_t *ends = read_all(f, "ends", H5T_NATIVE_INT64, 8, de, &re);
    int32_t *a = read_all(f, "a", H5T_NATIVE_INT32, 4, da, &ra);
    float *b = read_all(f, "g/b", H5T_NATIVE_FLOAT, 4, db, &rb);
    char *c = read_all(f, "c", text_t, TEXT, dc, &rc);
    int64_t *idx = read_all(f, "idx", H5T_NATIVE_INT64, 8, di, &ri);
    char *names = read_all(f, "name", name_t, NAME, dn, &rn);
    int64_t got = ends && re == 1 ? (int64_t)de[0] - 1 : -1, bad = 0, T = 0;
    if (got < 0 || (n >= 0 && got != n) || (n < 0 && got < -n - 1) || !a || !b || !c || !idx || !names ||
        ends[0] != 0 || di[0] != (hsize_t)got || dn[0] != (hsize_t)got || rb != 3 || db[0] != ROWS || db[2] != WIDTH)
        bad++;
    for (int64_t k = 0; !bad && k < got; k++) {
        const int64_t len = rec_len(k);
        char text[TEXT + 1], name[NAME + 1];
        val_name(k, name);
        if (ends[k + 1] != T + len || idx[k] != val_idx(k) || strncmp(names + k * NAME, name, NAME) != 0) bad++;
        for (int t = 0; !bad && t < len; t++) {
            val_c(k, t, text);
            if (a[T + t] != val_a(k, t) || strncmp(c + (T + t) * TEXT, text, TEXT) != 0) bad++;
            for (int r = 0; r < ROWS; r++)
                for (int w = 0; w < WIDTH; w++)
                    if (b[((size_t)r * db[1] + (size_t)(T + t)) * WIDTH + w] != val_b(k, r, t, w)) bad++;
        }
        T += len;
    }
    if (!bad && (da[0] != (hsize_t)T || db[1] != (hsize_t)T || dc[0] != (hsize_t)T)) bad++;
    free(ends);
    free(a);
    free(b);
    free(c);
    free(idx);
    free(names);
    H5Fclose(f);
    return bad ? -1 : got;
}

// ---- the tests ----

static char dir[256];
static types ty;

static int parts(const char *path) { // part files of path's parts folder
    char pat[600];
    glob_t g = {0};
    snprintf(pat, sizeof pat, "%s.parts/*.h5", path);
    int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    return n;
}

static void test_roundtrip(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/r.h5", dir);
    trace_store *s = NULL;
    CHECK(store_new(&s, p, 8, &ty) == 0 && trace_store_create(s, 0) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 0, ty.text, ty.name) == 0, "an empty store reads");
    for (int64_t k = 0; s && k < 60; k++) CHECK(append(s, k) == 0, "record %lld: %s", (long long)k, aha_errmsg());
    CHECK(verify(p, 60, ty.text, ty.name) == 60, "the index reads every record");
    trace_store_state st = {0};
    CHECK(state_read(p, &st) == 0 && !st.complete && st.n_rec == 60 && st.chunk == 8, "its header has its state");
    CHECK(parts(p) < 20, "compaction keeps the parts few: %d", parts(p)); // ~900 elements of 8 per chunk
    CHECK(s && trace_store_close(s) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 60, ty.text, ty.name) == 60, "the final file reads every record");
    CHECK(state_read(p, &st) == 0 && st.complete, "it is complete");
    struct stat sb;
    char dir_parts[600];
    snprintf(dir_parts, sizeof dir_parts, "%s.parts", p);
    CHECK(stat(dir_parts, &sb) != 0, "the parts are gone");
}

static void test_resume(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/u.h5", dir);
    trace_store *s = NULL;
    trace_store_state st = {0};
    CHECK(store_new(&s, p, 4, &ty) == 0 && trace_store_create(s, 0) == 0, "%s", aha_errmsg());
    for (int64_t k = 0; s && k < 23; k++) CHECK(append(s, k) == 0, "%s", aha_errmsg());
    trace_store_free(s); // released unfinished
    CHECK(state_read(p, &st) == 0 && st.n_rec == 23, "its state");
    CHECK(store_new(&s, p, 4, &ty) == 0 && trace_store_resume(s, &st) == 0, "%s", aha_errmsg());
    CHECK(s && trace_store_get(s).n_rec == 23 && trace_store_get(s).id == st.id, "resumed where it was");
    for (int64_t k = 23; s && k < 50; k++) CHECK(append(s, k) == 0, "%s", aha_errmsg());
    CHECK(s && trace_store_close(s) == 0, "%s", aha_errmsg());
    CHECK(verify(p, 50, ty.text, ty.name) == 50, "every record, once");
}

static void test_refusals(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/x.h5", dir);
    trace_store *s = NULL, *s2 = NULL;
    trace_store_state st = {0};
    CHECK(store_new(&s, p, 8, &ty) == 0 && trace_store_create(s, 0) == 0 && append(s, 0) == 0 && append(s, 1) == 0,
          "%s", aha_errmsg());
    CHECK(store_new(&s2, p, 8, &ty) < 0 && strstr(aha_errmsg(), "another process") &&
              strstr(aha_errmsg(), "this store"),
          "a second writer: %s", aha_errmsg());
    trace_store_free(s);
    CHECK(store_new(&s, p, 8, &ty) == 0 && trace_store_create(s, 0) < 0 && strstr(aha_errmsg(), "exists"),
          "an existing store: %s", aha_errmsg());
    trace_store_free(s);
    CHECK(verify(p, 2, ty.text, ty.name) == 2, "untouched");
    glob_t g = {0};
    char pat[600];
    snprintf(pat, sizeof pat, "%s.parts/p*.h5", p);
    CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0 && unlink(g.gl_pathv[0]) == 0, "a part removed");
    globfree(&g);
    CHECK(state_read(p, &st) == 0, "its state");
    CHECK(store_new(&s, p, 8, &ty) == 0 && trace_store_resume(s, &st) < 0 && strstr(aha_errmsg(), "is missing"),
          "a missing part: %s", aha_errmsg());
    trace_store_free(s);
    CHECK(store_new(&s, p, 8, &ty) == 0 && trace_store_create(s, 1) == 0 && append(s, 0) == 0, "force: %s",
          aha_errmsg());
    trace_store_discard(s);
    CHECK(access(p, F_OK) != 0 && parts(p) == 0, "a discarded store leaves nothing");
}

// The crash test's child: create or resume path and append up to n records.
static int writer(const char *path, int64_t n, int64_t chunk) {
    trace_store *s = NULL;
    trace_store_state st = {0};
    const int have = access(path, F_OK) == 0;
    if (have && state_read(path, &st) != 0) return 3;
    if (have && st.complete) return 0;
    if (store_new(&s, path, chunk, &ty) < 0) return 2;
    if (have ? trace_store_resume(s, &st) < 0 : trace_store_create(s, 0) < 0) {
        fprintf(stderr, "%s\n", aha_errmsg());
        trace_store_free(s);
        return 2;
    }
    for (int64_t k = trace_store_get(s).n_rec; k < n; k++) {
        if (append(s, k) < 0) return 2;
        printf("committed %lld\n", (long long)k + 1);
        fflush(stdout);
    }
    return trace_store_close(s) < 0 ? 2 : 0;
}

// The writer killed at random moments while it appends, 30 times, then let finish.
static void test_kill(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/k.h5", dir);
    const int64_t n = 200;
    int kills = 0;
    int done = 0;
    int64_t before = 0; // records held when last killed
    srand((unsigned)time(NULL));
    for (int round = 0; round < 100 && !done; round++) {
        int fd[2];
        if (pipe(fd) != 0) break;
        pid_t pid = fork();
        if (pid == 0) { // exec, not just fork: OpenMP's threads do not survive a fork
            dup2(fd[1], 1);
            close(fd[0]);
            execl("/proc/self/exe", "test_store", "write", p, "200", "4", (char *)NULL); // n, chunk
            _exit(254);
        }
        close(fd[1]);
        char buf[1 << 16];
        ssize_t r = 0;
        ssize_t got = 0;
        buf[0] = '\0';
        while (kills < 30 && !strstr(buf, "committed") && (r = read(fd[0], buf + got, 100)) > 0) {
            got += r; // the writer is appending: kill it within the next few appends
            buf[got] = '\0';
        }
        struct timespec nap = {0, (long)(rand() % 5000) * 1000L};
        nanosleep(&nap, NULL);
        if (kills < 30) kill(pid, SIGKILL);
        while ((r = read(fd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += r;
        buf[got] = '\0';
        close(fd[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        long long committed = 0;
        for (char *l = strstr(buf, "committed "); l; l = strstr(l + 1, "committed ")) committed = atoll(l + 10);
        done = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        kills += WIFSIGNALED(st);
        CHECK(WIFSIGNALED(st) || done, "the writer failed: exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        if (access(p, F_OK) != 0) continue; // killed before its index was there
        const int64_t held = verify(p, -committed - 1, ty.text, ty.name);
        if (!done) before = held;
        CHECK(held >= committed, "after a kill: %lld records read back, %lld committed", (long long)held, committed);
        if (check_failed_) break;
    }
    CHECK(done && verify(p, n, ty.text, ty.name) == n, "finished: every record, once");
    CHECK(kills >= 10, "only %d kills", kills);
    printf("  (%d kills; %lld of %lld records held at the last)\n", kills, (long long)before, (long long)n);
}

int main(int argc, char **argv) {
    H5dont_atexit();
    ty.text = trace_h5_str(TEXT);
    ty.name = trace_h5_str(NAME);
    if (argc == 5 && strcmp(argv[1], "write") == 0) return writer(argv[2], atoll(argv[3]), atoll(argv[4]));
    const char *tmp = getenv("TMPDIR"); // tests/run.sh points it at a tmpfs where it can
    snprintf(dir, sizeof dir, "%s/aha_store_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return 1;
    TEST("store: synthetic columns appended, read back from the index and the final file", test_roundtrip());
    TEST("store: released unfinished, resumed from its header's state, finished", test_resume());
    TEST("store: an existing store, a second writer, a missing part are refused; discard leaves nothing",
         test_refusals());
    TEST("store: SIGKILL at random moments loses no committed record; resume finishes", test_kill());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!check_total_failed_ && system(cmd) != 0) return 1;
    TEST_EXIT();
}
