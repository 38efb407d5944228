// The table build/mpi/libaha_mpi.so gives ./aha (runtime/mpi/mpi_lib.c, built
// by mpicc where make finds it; mpi_job.c opens it). Plain C types only: ./aha
// itself is compiled without mpi.h and runs where there is no libmpi.
#pragma once
#include <stddef.h>

#define AHA_MPI_API_SYMBOL "aha_mpi_api_get"
#define AHA_MPI_API_VERSION 1

typedef struct {
    int version;                                       // AHA_MPI_API_VERSION
    int (*init)(int *rank, int *size, char *why, size_t why_len);
    // rc, msg[msg_len] of every rank to rank 0's all_rc[size], all_msg[size * msg_len]
    int (*gather)(int rc, const char *msg, int *all_rc, char *all_msg, int msg_len, char *why, size_t why_len);
    void (*finalize)(void);
} aha_mpi_api;

typedef const aha_mpi_api *(*aha_mpi_api_fn)(void);
