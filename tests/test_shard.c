// --shard auto from simulated launchers (runtime/record/shard.c), the shard file
// names, and one GPU per rank by local rank: the device choice, without a GPU.
#include "check.h"
#include "err.h"
#include "shard.h"

static const char *const *env_table; // "NAME=value" pairs, NULL-terminated

static const char *fake_env(const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = env_table; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

// The shard the table gives: 0 with *s, or -1 with the error in aha_errmsg.
static int shard_of(const char *const *table, aha_shard *s) {
    env_table = table;
    return aha_shard_auto(s, fake_env);
}

static void test_launchers(void) {
    aha_shard s;
    const char *array[] = {"SLURM_ARRAY_TASK_ID=7", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=4", NULL};
    CHECK(shard_of(array, &s) == 0 && s.i == 3 && s.n == 4, "array 4..7, task 7: %d/%d", s.i, s.n);
    const char *step[] = {"SLURM_ARRAY_TASK_ID=6", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=0",
                          "SLURM_ARRAY_TASK_STEP=2", NULL};
    CHECK(shard_of(step, &s) == 0 && s.i == 3 && s.n == 4, "array 0-6:2, task 6: %d/%d", s.i, s.n);
    const char *srun[] = {"SLURM_PROCID=2", "SLURM_NTASKS=5", NULL};
    CHECK(shard_of(srun, &s) == 0 && s.i == 2 && s.n == 5, "srun: %d/%d", s.i, s.n);
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", NULL};
    CHECK(shard_of(ompi, &s) == 0 && s.i == 1 && s.n == 3 && strstr(s.from, "OMPI_COMM_WORLD_RANK"), "ompi");
    const char *pmi[] = {"PMI_RANK=0", "PMI_SIZE=2", NULL};
    CHECK(shard_of(pmi, &s) == 0 && s.i == 0 && s.n == 2, "pmi: %d/%d", s.i, s.n);
    // mpirun inside an sbatch allocation inherits the batch step's SLURM_PROCID=0: the MPI rank wins
    const char *inside[] = {"SLURM_PROCID=0", "SLURM_NTASKS=3", "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3", NULL};
    CHECK(shard_of(inside, &s) == 0 && s.i == 2 && s.n == 3, "mpirun in sbatch: %d/%d", s.i, s.n);
    // an array task running 2 srun tasks: shards array-major
    const char *both[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=0",
                          "SLURM_PROCID=1", "SLURM_NTASKS=2", NULL};
    CHECK(shard_of(both, &s) == 0 && s.i == 3 && s.n == 6, "array x srun: %d/%d", s.i, s.n);
}

static void test_launcher_errors(void) {
    aha_shard s;
    const char *none[] = {"HOME=/root", NULL};
    CHECK(shard_of(none, &s) != 0 && strstr(aha_errmsg(), "no launcher in the environment") &&
              strstr(aha_errmsg(), "SLURM_ARRAY_TASK_ID") && strstr(aha_errmsg(), "OMPI_COMM_WORLD_RANK"),
          "no launcher: %s", aha_errmsg());
    const char *half[] = {"SLURM_PROCID=1", NULL};
    CHECK(shard_of(half, &s) != 0 && strstr(aha_errmsg(), "SLURM_PROCID is set but SLURM_NTASKS is not"), "%s",
          aha_errmsg());
    const char *big[] = {"PMI_RANK=4", "PMI_SIZE=4", NULL};
    CHECK(shard_of(big, &s) != 0 && strstr(aha_errmsg(), "PMI_RANK=4 is not below PMI_SIZE=4"), "%s", aha_errmsg());
    const char *bad[] = {"OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2", NULL};
    CHECK(shard_of(bad, &s) != 0 && strstr(aha_errmsg(), "OMPI_COMM_WORLD_RANK='x' is not"), "%s", aha_errmsg());
    const char *gaps[] = {"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=1", NULL};
    CHECK(shard_of(gaps, &s) != 0 && strstr(aha_errmsg(), "not one of the 3 tasks"), "%s", aha_errmsg());
    const char *nocount[] = {"SLURM_ARRAY_TASK_ID=5", NULL};
    CHECK(shard_of(nocount, &s) != 0 && strstr(aha_errmsg(), "SLURM_ARRAY_TASK_COUNT is not"), "%s", aha_errmsg());
}

static void test_paths(void) {
    char out[64];
    CHECK(aha_shard_path(out, sizeof out, "run-%i-of-%n.h5", 3, 8) == 1 && !strcmp(out, "run-3-of-8.h5"), "%s", out);
    CHECK(aha_shard_path(out, sizeof out, "100%%-%n.h5", 3, 8) == 0 && !strcmp(out, "100%-8.h5"), "%s", out);
    CHECK(aha_shard_path(out, sizeof out, "run-%d.h5", 3, 8) == -1 && strstr(aha_errmsg(), "'%d' is not %i"), "%s",
          aha_errmsg());
    CHECK(aha_shard_path(out, 8, "long-name-%i.h5", 3, 8) == -1 && strstr(aha_errmsg(), "too long"), "too long");
    aha_shard_mpi_path(out, sizeof out, "out/t.h5", 2, 3);
    CHECK(!strcmp(out, "out/t.shard-2-of-3.h5"), "%s", out);
    aha_shard_mpi_path(out, sizeof out, "trace", 0, 1);
    CHECK(!strcmp(out, "trace.shard-0-of-1"), "%s", out);
}

static void test_gpu(void) {
    char gpu[16];
    env_table = (const char *[]){"OMPI_COMM_WORLD_LOCAL_RANK=5", NULL};
    CHECK(aha_shard_gpu(fake_env, 4, gpu, sizeof gpu) == 0 && !strcmp(gpu, "1"), "local rank 5 of 4 GPUs: %s", gpu);
    CHECK(aha_shard_gpu(fake_env, 0, gpu, sizeof gpu) == -1, "no GPU: nothing to choose");
    env_table = (const char *[]){"SLURM_LOCALID=2", "CUDA_VISIBLE_DEVICES=4,5,6", NULL};
    CHECK(aha_shard_gpu(fake_env, 8, gpu, sizeof gpu) == 0 && !strcmp(gpu, "6"), "visible list: %s", gpu);
    env_table = (const char *[]){"SLURM_LOCALID=4", "CUDA_VISIBLE_DEVICES=4,5,6", NULL};
    CHECK(aha_shard_gpu(fake_env, 8, gpu, sizeof gpu) == 0 && !strcmp(gpu, "5"), "visible list wraps: %s", gpu);
    env_table = (const char *[]){"SLURM_LOCALID=3", "CUDA_VISIBLE_DEVICES=2", NULL};
    CHECK(aha_shard_gpu(fake_env, 8, gpu, sizeof gpu) == -1, "srun --gpus-per-task gave it one: kept");
    env_table = (const char *[]){"MPI_LOCALRANKID=1", NULL};
    CHECK(aha_shard_gpu(fake_env, 2, gpu, sizeof gpu) == 0 && !strcmp(gpu, "1"), "MPICH: %s", gpu);
    env_table = (const char *[]){"CUDA_VISIBLE_DEVICES=0,1", NULL};
    CHECK(aha_shard_gpu(fake_env, 2, gpu, sizeof gpu) == -1, "no local rank: nothing to choose");
    env_table = (const char *[]){"OMPI_COMM_WORLD_SIZE=3", NULL};
    CHECK(aha_mpi_launched(fake_env) == 3, "mpirun's size");
    env_table = (const char *[]){"SLURM_NTASKS=3", NULL};
    CHECK(aha_mpi_launched(fake_env) == 0, "srun alone is no MPI launcher");
}

int main(void) {
    TEST("shard auto: Slurm arrays (min, step), srun, Open MPI, PMI, mpirun inside sbatch", test_launchers());
    TEST("shard auto: no launcher, half a pair, out of range, not a number, an array with gaps", test_launcher_errors());
    TEST("shard files: -o %i / %n / %%, the MPI job's shard names", test_paths());
    TEST("one GPU per rank by local rank (Open MPI, Slurm, MPICH), the visible list", test_gpu());
    TEST_EXIT();
}
