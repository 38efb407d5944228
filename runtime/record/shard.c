// --shard auto: which shard a process records, from the variables its
// launcher sets; the file each shard writes; the GPU each rank takes.
#include "shard.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

// env(name) as a non-negative int into *v: 1 when set, 0 when unset, -1
// (error naming it) when set to anything else.
static int env_int(aha_env_fn env, const char *name, int *v) {
    const char *s = env(name);
    if (!s) return 0;
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < 0 || x > 1 << 30) {
        aha_err("--shard auto: %s='%s' is not a non-negative integer", name, s);
        return -1;
    }
    *v = (int)x;
    return 1;
}

// The pair (index, count) a launcher sets: 1 found, 0 neither set, -1 one
// without the other or the index out of range.
static int env_pair(aha_env_fn env, const char *id, const char *count, int *i, int *n) {
    int a = env_int(env, id, i), b = a < 0 ? -1 : env_int(env, count, n);
    if (a < 0 || b < 0) return -1;
    if (!a && !b) return 0;
    if (!a || !b) {
        aha_err("--shard auto: %s is set but %s is not", a ? id : count, a ? count : id);
        return -1;
    }
    if (*n < 1 || *i >= *n) {
        aha_err("--shard auto: %s=%d is not below %s=%d", id, *i, count, *n);
        return -1;
    }
    return 1;
}

// A Slurm job array: task ids MIN, MIN+STEP, ... (COUNT of them) as 0..COUNT-1.
static int slurm_array(aha_env_fn env, int *i, int *n) {
    int id, count, min = 0, step = 1;
    int a = env_int(env, "SLURM_ARRAY_TASK_ID", &id);
    if (a <= 0) return a;
    if (env_int(env, "SLURM_ARRAY_TASK_COUNT", &count) != 1 || env_int(env, "SLURM_ARRAY_TASK_MIN", &min) < 0 ||
        env_int(env, "SLURM_ARRAY_TASK_STEP", &step) < 0) {
        if (!env("SLURM_ARRAY_TASK_COUNT"))
            aha_err("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
        return -1;
    }
    if (step < 1 || id < min || (id - min) % step || (id - min) / step >= count) {
        aha_err("--shard auto: SLURM_ARRAY_TASK_ID=%d is not one of the %d tasks from SLURM_ARRAY_TASK_MIN=%d by "
                "step %d (an array with gaps, e.g. --array=1,5,9, has no shard numbering)", id, count, min, step);
        return -1;
    }
    *i = (id - min) / step, *n = count;
    return 1;
}

int aha_shard_auto(aha_shard *s, aha_env_fn env) {
    static const char *ranks[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                     {"PMI_RANK", "PMI_SIZE"},
                                     {"SLURM_PROCID", "SLURM_NTASKS"}};
    int ai = 0, an = 1, ri = 0, rn = 1, rank = -1;
    int array = slurm_array(env, &ai, &an);
    if (array < 0) return -1;
    for (int k = 0; k < 3 && rank < 0; k++) {
        int found = env_pair(env, ranks[k][0], ranks[k][1], &ri, &rn);
        if (found < 0) return -1;
        if (found) rank = k;
    }
    if (!array && rank < 0) {
        aha_err("--shard auto: no launcher in the environment: none of SLURM_ARRAY_TASK_ID (sbatch --array), "
                "OMPI_COMM_WORLD_RANK (mpirun), PMI_RANK, SLURM_PROCID (srun) is set; give --shard I/N");
        return -1;
    }
    // an array task that runs several tasks: shards array-major, rank-minor
    s->i = ai * rn + ri, s->n = an * rn;
    char a[96] = "", r[96] = "";
    if (array) snprintf(a, sizeof a, "array task %d of %d", ai, an);
    if (rank >= 0) snprintf(r, sizeof r, "%s%s=%d of %d", array ? ", " : "", ranks[rank][0], ri, rn);
    snprintf(s->from, sizeof s->from, "%s%s", a, r);
    return 0;
}

int aha_shard_path(char *out, size_t len, const char *pattern, int i, int n) {
    size_t k = 0;
    int has_i = 0;
    for (const char *p = pattern; *p; p++) {
        char num[16] = "";
        if (*p != '%') num[0] = *p;
        else if (p[1] == 'i' || p[1] == 'n') snprintf(num, sizeof num, "%d", *++p == 'i' ? (has_i = 1, i) : n);
        else if (p[1] == '%') num[0] = *++p;
        else {
            aha_err("-o %s: '%%%c' is not %%i (the shard), %%n (their count) or %%%%", pattern, p[1] ? p[1] : ' ');
            return -1;
        }
        size_t m = strlen(num);
        if (k + m >= len) {
            aha_err("-o %s: the name is too long", pattern);
            return -1;
        }
        memcpy(out + k, num, m), k += m;
    }
    out[k] = '\0';
    return has_i;
}

void aha_shard_mpi_path(char *out, size_t len, const char *trace, int i, int n) {
    size_t m = strlen(trace);
    int h5 = m > 3 && !strcmp(trace + m - 3, ".h5");
    snprintf(out, len, "%.*s.shard-%d-of-%d%s", (int)(h5 ? m - 3 : m), trace, i, n, h5 ? ".h5" : "");
}

int aha_shard_local_rank(aha_env_fn env) {
    static const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"};
    for (int k = 0; k < 3; k++) {
        int v;
        if (env_int(env, names[k], &v) == 1) return v;
    }
    return -1;
}

int aha_shard_gpu(aha_env_fn env, int n_devices, char *out, size_t len) {
    int local = aha_shard_local_rank(env);
    const char *visible = env("CUDA_VISIBLE_DEVICES");
    if (local < 0) return -1;
    if (!visible || !*visible) {
        if (n_devices < 1) return -1;
        snprintf(out, len, "%d", local % n_devices);
        return 0;
    }
    int count = 1; // entries of the list the launcher (or the user) set
    for (const char *p = visible; *p; p++) count += *p == ',';
    if (count == 1) return -1; // one GPU for this rank already
    const char *p = visible;
    for (int k = local % count; k > 0; k--) p = strchr(p, ',') + 1;
    size_t m = strcspn(p, ",");
    snprintf(out, len, "%.*s", (int)m, p);
    return 0;
}

int aha_shard_count_gpus(void) {
    DIR *d = opendir("/dev");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, "nvidia", 6) && e->d_name[6] >= '0' && e->d_name[6] <= '9';
    if (d) closedir(d);
    return n;
}

int aha_mpi_launched(aha_env_fn env) {
    const char *s = env("OMPI_COMM_WORLD_SIZE");
    if (!s) s = env("PMI_SIZE");
    return s ? atoi(s) : 0;
}
