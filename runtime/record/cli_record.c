// The recording commands: aha record (observe or one routed run) and
// aha sweep (one routed run per window), flags to aha_record_opts.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "outpath.h"
#include "record.h"
#include "run.h"
#include "shard.h"

// "a,b,c" -> at most max values, each in range (an aha_flag range); ints
// when is_int. 0 or -1 with an error naming the flag.
static int parse_list(const char *flag, const char *s, int is_int, const char *range, void *out, int max, int *n) {
    char buf[1024];
    if (aha_flag_list_check(flag, s) != 0) return -1;
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf) {
        aha_err("%s: longer than %zu characters", flag, sizeof buf - 1);
        return -1;
    }
    *n = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (end == tok || *end || !isfinite(v) || (is_int && (v != floor(v) || fabs(v) > INT_MAX))) {
            aha_err("%s: '%s' is not %s", flag, tok, is_int ? "a whole number" : "a number");
            return -1;
        }
        if (aha_flag_range_check(flag, range, v, tok) != 0) return -1;
        if (*n == max) {
            aha_err("%s: at most %d values", flag, max);
            return -1;
        }
        for (int i = 0; i < *n; i++)
            if (is_int ? ((int *)out)[i] == (int)v : ((double *)out)[i] == v) {
                aha_err("%s: %s is given twice (each value once)", flag, tok);
                return -1;
            }
        if (is_int) ((int *)out)[(*n)++] = (int)v;
        else ((double *)out)[(*n)++] = v;
    }
    return 0;
}

// argv as one line: as typed (the trace's command_line), or with resume the
// command that continues the trace: --force dropped, --resume added, each
// argument quoted for the shell where it needs it.
static char *join_argv(int argc, char **argv, int resume) {
    size_t len = sizeof " --resume";
    for (int i = 0; i < argc; i++) len += 4 * strlen(argv[i]) + 3; // every character a quote: '\''
    char *s = calloc(len, 1), *p = s;
    int has_resume = 0;
    for (int i = 0; s && i < argc; i++) {
        const char *a = argv[i];
        if (resume && !strcmp(a, "--force")) continue;
        has_resume |= !strcmp(a, "--resume");
        if (p > s) *p++ = ' ';
        if (!resume || (*a && !a[strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-")])) {
            p = stpcpy(p, a);
            continue;
        }
        *p++ = '\'';
        for (; *a; a++) p = *a == '\'' ? stpcpy(p, "'\\''") : (*p++ = *a, p);
        *p++ = '\'';
    }
    if (s && resume && !has_resume) strcpy(p, " --resume");
    return s;
}

// --policies into o: the grid, every oracle eps in the dependency pass's
// list (the report finds d_eps for each), window errors on for werr.
static int grid_opts(aha_record_opts *o, const char *policies, const char *heads_from, aha_policy *grid) {
    if (aha_grid_parse(policies, grid, AHA_GRID_MAX, &o->n_grid) != 0) return -1;
    o->grid = grid;
    o->heads_from = heads_from;
    for (int g = 0; g < o->n_grid; g++) {
        const unsigned needs = aha_policies[grid[g].kind].needs;
        if (needs & AHA_NEEDS_WERR) o->werr = 1;
        if (!(needs & AHA_NEEDS_DEP)) continue;
        int have = 0;
        for (int e = 0; e < o->n_eps; e++) have |= (float)o->eps[e] == (float)grid[g].param;
        if (have) continue;
        if (o->n_eps == AHA_MAX_EPS) {
            aha_err("--policies: oracle:%g needs its eps in --eps, which holds at most %d", grid[g].param, AHA_MAX_EPS);
            return -1;
        }
        o->eps[o->n_eps++] = grid[g].param;
    }
    return 0;
}

static const char *env_get(const char *name) { return getenv(name); }

// --shard into o (I/N; auto: from the launcher's environment, -o's %i and %n
// the shard's), and *job when an MPI launcher started this process without
// --shard I/N and -o names one trace: then every rank records a shard and
// rank 0 writes the trace (aha_shard_job). With --device cuda under a
// launcher, this rank's GPU by its local rank.
static int shard_resolve(aha_record_opts *o, const char *shard, char *out, size_t len, int *job) {
    aha_shard s = {0};
    int launched = aha_mpi_launched(env_get), has_i = 0;
    if ((shard || launched) && (has_i = aha_shard_path(out, len, o->out, 0, 1)) < 0) return -1;
    if (shard && strcmp(shard, "auto")) {
        char end;
        if (sscanf(shard, "%d/%d%c", &o->shard_i, &o->shard_n, &end) != 2 || o->shard_n < 1 || o->shard_i < 0 ||
            o->shard_i >= o->shard_n) {
            aha_err("--shard: '%s' is not I/N with 0 <= I < N, or auto", shard);
            return -1;
        }
    } else if (launched && !has_i) {
        *job = 1; // aha_shard_job: the rank from MPI itself
    } else if (shard || launched) { // auto, or mpirun with -o run-%i.h5: a trace per rank
        if (aha_shard_auto(&s, env_get) != 0) return -1;
        if (!has_i && s.n > 1) {
            aha_err("-o %s: with --shard auto (%s) every shard needs its own file: put %%i in it, e.g. -o run-%%i.h5",
                    o->out, s.from);
            return -1;
        }
        o->shard_i = s.i;
        o->shard_n = s.n;
        if (!o->quiet) fprintf(stderr, "--shard auto: shard %d/%d (%s)\n", s.i, s.n, s.from);
    }
    if ((shard || launched) && !*job) { // the shard's own file
        if (aha_shard_path(out, len, o->out, o->shard_i, o->shard_n ? o->shard_n : 1) < 0) return -1;
        o->out = out;
    }
    char gpu[64];
    if (!strncmp(o->device, "cuda", 4) && aha_shard_gpu(env_get, aha_shard_count_gpus(), gpu, sizeof gpu) == 0) {
        setenv("CUDA_VISIBLE_DEVICES", gpu, 1); // before the CUDA backend loads
        if (!o->quiet)
            fprintf(stderr, "local rank %d: GPU %s (CUDA_VISIBLE_DEVICES)\n", aha_shard_local_rank(env_get), gpu);
    }
    return 0;
}

static int run_command(int argc, char **argv, int sweep) {
    aha_record_opts o = {.s = AHA_RUN_SETTINGS_DEFAULT, .device = "cpu", .dtype = "f32"};
    const char *windows = "16,32,64,128,256,512,1024", *eps = "0.01,0.05,0.1";
    const char *shard = NULL, *policies = NULL, *heads_from = NULL;
    int window = 128, threads = 0;
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &o.out, "output trace (HDF5); required", NULL},
        {"--windows", FLAG_STR, &windows, sweep ? "windows, one routed run each" : "windows to summarise (and --werr, --mass)", NULL},
        {"--eps", FLAG_STR, &eps, "out-of-window mass thresholds for d_eps (the first drives oracle)", NULL},
        {"--route", FLAG_STR, &o.route, sweep ? "one router for every window: oracle | learned | ... (this or --policies)" : "routed mode: global | local | learned | oracle | random:P | heads:FILE", NULL},
        {"--window", FLAG_INT, &window, "window of the routed run (record --route)", ">= 1"},
        // sweep's only: record parses them to refuse them below, and does not list them
        {"--policies", FLAG_STR, &policies, !sweep ? NULL : "sweep grid, a run per point and window: 'oracle:EPS,.. werr:THR,.. learned:TAU,.. random:P,.. topk:K,.. local' (oracle's eps join --eps, werr turns --werr on)", NULL},
        {"--heads-from", FLAG_STR, &heads_from, !sweep ? NULL : "observe trace whose per-head oracle rate at each window ranks topk:K's heads", NULL},
        {"--tau", FLAG_DOUBLE, &o.tau, "learned router: global iff sigmoid(logit) > tau; 0 = 0.5, or the --router file's", "[0, 1)"},
        {"--router", FLAG_STR, &o.router_file, "a router file (aha fit) for this model: the learned router (fused into q_proj)", NULL},
        {"--seed", FLAG_INT, &o.s.seed, "seed of random:P routing", NULL},
        {"--werr", FLAG_BOOL, &o.werr, "also record the window-output relative error per window", NULL},
        {"--mass", FLAG_BOOL, &o.mass, "also record where attention mass goes per window: far context (mass_far/w_<w>) and sinks (mass_sinks)", NULL},
        AHA_CONTEXT_FLAGS(o.s),
        AHA_DATA_FLAGS(o.s),
        {"--skip-bad", FLAG_BOOL, &o.skip_bad, "report bad lines and documents and go on", NULL},
        {"--force", FLAG_BOOL, &o.force, "overwrite an existing trace", NULL},
        {"--resume", FLAG_BOOL, &o.resume, "continue a trace a killed run left", NULL},
        {"--shard", FLAG_STR, &shard, "I/N: record only documents d with d % N == I (one trace per shard; aha report reads them together); auto: I and N from the launcher (sbatch --array, srun, mpirun), -o's %i the shard, %n N; under mpirun without it, one shard per rank and one trace at -o", NULL},
        AHA_DEVICE_FLAGS(o.device, o.dtype),
        AHA_WEIGHTS_FLAG(o.s.weights),
        AHA_THREADS_FLAG(threads),
        {"--quiet", FLAG_BOOL, &o.quiet, "no progress bar", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[2];
    AHA_PARSE(sweep ? "usage: aha sweep MODEL DATA (--route POLICY | --policies GRID) -o sweep.h5"
                    : "usage: aha record MODEL DATA -o trace.h5",
              flags, pos, 2);
    const char *out = o.out;
    o.s.model = pos[0];
    o.s.data = pos[1];
    o.mode = sweep ? AHA_MODE_SWEEP : o.route ? AHA_MODE_ROUTED : AHA_MODE_OBSERVE;
    if (!out) {
        aha_err("-o TRACE is required");
        return aha_cli_fail();
    }
    if (sweep && !o.route == !policies) {
        aha_err("aha sweep needs --route POLICY (one router per window) or --policies GRID, not both");
        return aha_cli_fail();
    }
    if (!sweep && (policies || heads_from)) {
        aha_err("--policies and --heads-from are aha sweep's");
        return aha_cli_fail();
    }
    char shard_out[PATH_MAX];
    int job = 0;
    if (shard_resolve(&o, shard, shard_out, sizeof shard_out, &job) != 0) return aha_cli_fail();
    if (o.force && o.resume) {
        aha_err("--force and --resume contradict each other");
        return aha_cli_fail();
    }
    if (o.route && aha_policy_parse("--route", o.route, &o.policy) != 0) return aha_cli_fail();
    // an existing trace: the recorder says whether --resume or --force applies
    const aha_input in[] = {{"the model", o.s.model}, {"the dataset", o.s.data}, {"the router file", o.router_file},
                            {"the --heads-from trace", heads_from},
                            {"the heads: file", o.route && o.policy.kind == AHA_ROUTER_HEADS ? o.policy.file : NULL}};
    const int n_in = sizeof in / sizeof *in;
    if (aha_out_file("-o", o.out, 1, in, n_in) != 0 || (job && aha_out_file("-o", out, 1, in, n_in) != 0))
        return aha_cli_fail();
    if (parse_list("--windows", windows, 1, ">= 1", o.windows, AHA_MAX_WINDOWS, &o.n_windows) != 0 ||
        parse_list("--eps", eps, 0, "[0, 1]", o.eps, AHA_MAX_EPS, &o.n_eps) != 0)
        return aha_cli_fail();
    aha_policy grid[AHA_GRID_MAX];
    if (policies && grid_opts(&o, policies, heads_from, grid) != 0) return aha_cli_fail();
    if (sweep) {
        memcpy(o.routed_windows, o.windows, sizeof o.windows);
        o.n_routed = o.n_windows;
    } else if (o.route) {
        o.routed_windows[0] = window;
        o.n_routed = 1;
    }
    aha_set_threads(threads);
    char *cmd = join_argv(argc, argv, 0), *again = join_argv(argc, argv, 1), *note = NULL;
    // Ctrl-C: the trace keeps its completed contexts (as after kill -9), and this says how to go on
    if (again && asprintf(&note, "\naha: interrupted: %s keeps every completed context; continue it with:\n  %s\n",
                          job ? out : o.out, again) < 0)
        note = NULL;
    aha_on_interrupt(STDERR_FILENO, note);
    o.command_line = cmd ? cmd : "";
    int rc = job ? aha_shard_job(&o, out) : aha_record_run(&o);
    aha_on_interrupt(0, NULL);
    free(cmd);
    free(again);
    free(note);
    if (job) return rc; // the job's exit code, its errors printed
    return rc == 0 ? 0 : aha_cli_fail();
}

int aha_cmd_record(int argc, char **argv) { return run_command(argc, argv, 0); }
int aha_cmd_sweep(int argc, char **argv) { return run_command(argc, argv, 1); }
