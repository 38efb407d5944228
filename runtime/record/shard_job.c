// mpirun -n N aha record ... -o trace.h5: one shard per rank, each in its own
// file beside trace.h5 (they stay, so a killed job resumes), and one trace
// that rank 0 merges when every rank has finished.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "flags.h"
#include "shard.h"
#include "trace.h"

#define MSG_LEN 512 // one rank's error line

// Rank 0: each failed rank's line, or the shards merged into trace. 0 or 1.
static int job_end(const aha_record_opts *o, const char *trace, int size, const int *all_rc, const char *all_msg) {
    int failed = 0;
    const char *last = "";
    for (int r = 0; r < size; r++) {
        const char *msg = all_msg + (size_t)r * MSG_LEN;
        if (!all_rc[r]) continue;
        if (strcmp(msg, last)) fprintf(stderr, "aha: rank %d of %d: %s\n", r, size, msg); // once when all say it
        last = msg, failed++;
    }
    if (failed) {
        fprintf(stderr, "aha: %s: %d of %d ranks failed; the finished shards stay (aha info SHARD): rerun with "
                        "--resume to record only what is missing\n", trace, failed, size);
        return 1;
    }
    char (*paths)[PATH_MAX] = aha_calloc((size_t)size, sizeof *paths, "shard paths");
    const char **in = aha_calloc((size_t)size, sizeof *in, "shard paths");
    int missing = 0, unordered = 0, rc = !paths || !in;
    for (int r = 0; !rc && r < size; r++) aha_shard_mpi_path(paths[r], sizeof paths[r], trace, r, size), in[r] = paths[r];
    // --resume rewrites the merged trace: the shards are what it continued
    rc = rc || aha_trace_merge(trace, in, size, o->command_line, o->force || o->resume, &missing, &unordered) != 0;
    if (rc) fprintf(stderr, "aha: %s: merging the %d shards: %s\n", trace, size, aha_errmsg());
    else if (unordered) aha_trace_merge_unordered(trace, unordered, size);
    if (!rc) printf("merged %d shards into %s\n", size, trace);
    free(paths), free(in);
    return rc;
}

int aha_shard_job(aha_record_opts *o, const char *trace) {
    int rank, size;
    if (aha_mpi_init(&rank, &size) != 0) return aha_cli_fail();
    char path[PATH_MAX];
    aha_shard_mpi_path(path, sizeof path, trace, rank, size);
    o->shard_i = rank, o->shard_n = size, o->out = path;
    int rc = 0;
    if (access(trace, F_OK) == 0 && !o->force && !o->resume) { // before any work, as a record refuses
        aha_err("%s: exists (--resume records what its shards miss and merges it again, --force starts over)", trace);
        rc = -1;
    }
    if (rc == 0) rc = aha_record_run(o); // --resume: a complete shard is compared, then left as it is
    int *all_rc = rank ? NULL : aha_calloc((size_t)size, sizeof *all_rc, "ranks");
    char *all_msg = rank ? NULL : aha_calloc((size_t)size, MSG_LEN, "ranks");
    int exit_code = rc ? 1 : 0;
    if (rank == 0 && (!all_rc || !all_msg)) {
        fprintf(stderr, "aha: rank 0: %s\n", aha_errmsg());
        exit_code = 1;
    } else if (aha_mpi_gather(rc, rc ? aha_errmsg() : "", all_rc, all_msg, MSG_LEN) != 0) {
        fprintf(stderr, "aha: rank %d of %d: %s\n", rank, size, aha_errmsg());
        exit_code = 1;
    } else if (rank == 0) {
        exit_code = job_end(o, trace, size, all_rc, all_msg);
    }
    free(all_rc), free(all_msg);
    aha_mpi_finalize();
    return exit_code;
}
