// One shard per launched process: the shard from the launcher's environment
// (--shard auto), each shard's file name (-o run-%i.h5), the GPU of a rank,
// and the MPI job (mpi_job.c) that ends an mpirun with one trace.
#pragma once
#include <stddef.h>

typedef const char *(*aha_env_fn)(const char *name); // getenv, or a test's table

typedef struct {
    int i, n;         // this process records shard i of n
    char from[200];   // the variables that said so, for messages
} aha_shard;

// The shard from the environment: a Slurm job array (SLURM_ARRAY_TASK_ID,
// _COUNT, _MIN, _STEP) times the tasks of one job step, whose rank is the
// first found of Open MPI (OMPI_COMM_WORLD_RANK, _SIZE), PMI (PMI_RANK,
// PMI_SIZE) and srun (SLURM_PROCID, SLURM_NTASKS). 0, or -1 with an error
// naming what is missing.
int aha_shard_auto(aha_shard *s, aha_env_fn env);

// pattern with %i -> i, %n -> n, %% -> %. 1 when it has %i, 0 when not, -1
// (error) when the name is too long or has another % sequence.
int aha_shard_path(char *out, size_t len, const char *pattern, int i, int n);

// An MPI job's shard file beside its trace: "t.h5" -> "t.shard-2-of-3.h5".
void aha_shard_mpi_path(char *out, size_t len, const char *trace, int i, int n);

// The node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID), or -1 when no launcher says it.
int aha_shard_local_rank(aha_env_fn env);

// One GPU per rank: the CUDA_VISIBLE_DEVICES value for this rank into out,
// the local rank's entry (mod their count) of the visible list, or of
// 0..n_devices-1 when no list is set. 0, or -1 when there is nothing to
// choose (no local rank, no device, or the launcher gave this rank one GPU).
int aha_shard_gpu(aha_env_fn env, int n_devices, char *out, size_t len);

// GPUs on this node without CUDA: the /dev/nvidiaN device files.
int aha_shard_count_gpus(void);

// The MPI job (build/mpi/libaha_mpi.so, loaded only under a launcher).
// aha_mpi_launched: the job's size when an MPI launcher started this process
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE), else 0.
int aha_mpi_launched(aha_env_fn env);
// MPI_Init: this rank and the job's size. 0, or -1 with an error (this aha
// was built without MPI, or the library failed).
int aha_mpi_init(int *rank, int *size);
// Every rank's exit status and error line to rank 0 (all_rc[size],
// all_msg[size][msg_len]; NULL elsewhere). 0, or -1 with an error.
int aha_mpi_gather(int rc, const char *msg, int *all_rc, char *all_msg, int msg_len);
void aha_mpi_finalize(void);

// The MPI job of aha record / sweep: rank r of n records shard r/n of o into
// trace's shard file (aha_shard_mpi_path); when every rank has finished, rank
// 0 merges them into trace, or, when any failed, prints each failed rank's
// error line and fails. The exit code: rank 0's says the job's.
#include "record.h"
int aha_shard_job(aha_record_opts *o, const char *trace);
