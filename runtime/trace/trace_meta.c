// The trace's metadata: checked, copied, compared on resume; and the
// provenance of the build that creates a trace.
#include "trace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "err.h"
#include "version.h"

static char *str_dup(const char *s) { return strdup(s ? s : ""); }

void trace_meta_free(aha_trace_meta *m) {
    free((char *)m->model_path);
    free((char *)m->arch);
    free((char *)m->router);
    free((char *)m->mode);
    free((char *)m->dataset);
    free((char *)m->command_line);
    free((char *)m->device);
    free((char *)m->shard);
    free((float *)m->eps);
    free((int *)m->windows);
    memset(m, 0, sizeof *m);
}

int trace_meta_copy(aha_trace_meta *d, const aha_trace_meta *s) {
    *d = *s;
    d->model_path = str_dup(s->model_path), d->arch = str_dup(s->arch),
    d->router = str_dup(s->router);
    d->mode = str_dup(s->mode), d->dataset = str_dup(s->dataset),
    d->command_line = str_dup(s->command_line);
    d->device = str_dup(s->device ? s->device : "cpu");
    d->shard = str_dup(s->shard);
    float *eps = malloc((size_t)s->n_eps * sizeof *eps + 1);
    int *win = malloc((size_t)s->n_windows * sizeof *win + 1);
    if (eps) memcpy(eps, s->eps, (size_t)s->n_eps * sizeof *eps);
    if (win) memcpy(win, s->windows, (size_t)s->n_windows * sizeof *win);
    d->eps = eps, d->windows = win;
    return d->model_path && d->arch && d->router && d->mode && d->dataset && d->command_line &&
                   d->device && d->shard && eps && win
               ? 0
               : -1;
}

int trace_meta_check(const aha_trace_meta *m, const char *path) {
    const char *bad = NULL;
    if (!m->model_path || !m->arch || !m->router || !m->mode)
        bad = "model_path, arch, router and mode are required";
    else if (m->n_layers < 1 || m->n_heads < 1)
        bad = "n_layers and n_heads must be >= 1";
    else if (m->n_eps < 0 || (m->n_eps > 0 && !m->eps))
        bad = "bad eps list";
    else if (m->n_windows < 0 || (m->n_windows > 0 && !m->windows))
        bad = "bad windows list";
    else if (m->werr && m->n_windows < 1)
        bad = "window errors need windows";
    else if (m->chunk_tokens < 0)
        bad = "chunk_tokens < 0";
    for (int i = 0; !bad && i < m->n_eps; i++) {
        char a[32], b[32];
        if (!(m->eps[i] >= 0 && m->eps[i] <= 1)) bad = "eps must be in [0, 1]";
        snprintf(a, sizeof a, "%g", m->eps[i]);
        for (int j = 0; !bad && j < i; j++)
            if (snprintf(b, sizeof b, "%g", m->eps[j]), strcmp(a, b) == 0)
                bad = "eps values repeat";
    }
    for (int i = 0; !bad && i < m->n_windows; i++) {
        if (m->windows[i] < 1) bad = "windows must be >= 1";
        for (int j = 0; !bad && j < i; j++)
            if (m->windows[j] == m->windows[i]) bad = "windows repeat";
    }
    if (bad) aha_err("%s: cannot write a trace: %s", path, bad);
    return bad ? -1 : 0;
}

static void list_fmt(char *out, size_t size, const float *f, const int *w, int n) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)(f ? snprintf(out + k, size - k, "%s%g", i ? "," : "", f[i])
                        : snprintf(out + k, size - k, "%s%d", i ? "," : "", w[i]));
}

// The first field in which what the trace recorded (f) and what this run
// records (m) differ, as an error.
int trace_meta_diff(const char *path, const aha_trace_meta *f, const aha_trace_meta *m) {
    char a[512] = "", b[512] = "";
    const char *field = NULL;
#define STR(name, x)                                                                               \
    if (!field && strcmp(f->x, m->x ? m->x : "") != 0)                                             \
        field = name, snprintf(a, sizeof a, "%s", f->x),                                           \
        snprintf(b, sizeof b, "%s", m->x ? m->x : "");
#define INT(name, x)                                                                               \
    if (!field && f->x != m->x)                                                                    \
        field = name, snprintf(a, sizeof a, "%d", f->x), snprintf(b, sizeof b, "%d", m->x);
    STR("model", model_path)
    STR("architecture", arch)
    INT("n_layers", n_layers)
    INT("n_heads", n_heads)
    INT("n_kv_heads", n_kv_heads)
    INT("head_dim", head_dim)
    INT("vocab", vocab)
    INT("aha", aha)
    STR("router", router)
    if (!field && f->tau != m->tau)
        field = "tau", snprintf(a, sizeof a, "%g", f->tau), snprintf(b, sizeof b, "%g", m->tau);
    if (!field &&
        (f->n_eps != m->n_eps || memcmp(f->eps, m->eps, (size_t)m->n_eps * sizeof *m->eps) != 0)) {
        field = "eps";
        list_fmt(a, sizeof a, f->eps, NULL, f->n_eps);
        list_fmt(b, sizeof b, m->eps, NULL, m->n_eps);
    }
    if (!field &&
        (f->n_windows != m->n_windows ||
         memcmp(f->windows, m->windows, (size_t)m->n_windows * sizeof *m->windows) != 0)) {
        field = "windows";
        list_fmt(a, sizeof a, NULL, f->windows, f->n_windows);
        list_fmt(b, sizeof b, NULL, m->windows, m->n_windows);
    }
    INT("sinks", sinks)
    INT("werr", werr)
    STR("mode", mode)
    STR("dataset", dataset)
    const char *dev = m->device ? m->device : "cpu"; // as trace_meta_copy records it
    if (!field && strcmp(f->device, dev) != 0)
        field = "device", snprintf(a, sizeof a, "%s", f->device), snprintf(b, sizeof b, "%s", dev);
    STR("shard", shard)
#undef STR
#undef INT
    if (field) aha_err("%s: cannot resume: %s differs (trace: %s; now: %s)", path, field, a, b);
    return field ? -1 : 0;
}

int trace_prov_init(aha_trace *t) {
    trace_prov *p = &t->prov;
    struct utsname u;
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5[32], created[32];
    time_t now = time(NULL);
    struct tm tm;
    H5get_libversion(&maj, &min, &rel);
    snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    p->version = str_dup(aha_version()), p->git_revision = str_dup(aha_git_rev());
    p->compiler = str_dup(aha_compiler()), p->cflags = str_dup(aha_cflags());
    p->host = str_dup(uname(&u) == 0 ? u.nodename : "unknown"), p->hdf5 = str_dup(hdf5);
    p->created = str_dup(created), p->command_line = str_dup(t->m.command_line);
    if (p->version && p->git_revision && p->compiler && p->cflags && p->host && p->hdf5 &&
        p->created && p->command_line)
        return 0;
    aha_err("%s: out of memory", t->path);
    return -1;
}

void trace_prov_free(trace_prov *p) {
    free(p->version), free(p->git_revision), free(p->compiler), free(p->cflags);
    free(p->host), free(p->hdf5), free(p->created), free(p->command_line);
}
