// build/mpi/libaha_mpi.so: the few MPI calls an aha job makes (mpi_api.h).
// Compiled by mpicc only; ./aha loads it under mpirun, so ./aha needs no
// libmpi where nobody runs MPI.
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpi_api.h"

static void why_of(int code, const char *what, char *why, size_t why_len) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(code, s, &n);
    snprintf(why, why_len, "%s: %s", what, s);
}

static int init(int *rank, int *size, char *why, size_t why_len) {
    int rc = MPI_Init(NULL, NULL);
    if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
    if (rc != MPI_SUCCESS) why_of(rc, "MPI_Init", why, why_len);
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int gather(int rc, const char *msg, int *all_rc, char *all_msg, int msg_len, char *why, size_t why_len) {
    char mine[msg_len];
    memset(mine, 0, (size_t)msg_len);
    snprintf(mine, (size_t)msg_len, "%s", msg ? msg : "");
    int e = MPI_Gather(&rc, 1, MPI_INT, all_rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (e == MPI_SUCCESS) e = MPI_Gather(mine, msg_len, MPI_CHAR, all_msg, msg_len, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (e != MPI_SUCCESS) why_of(e, "MPI_Gather", why, why_len);
    return e == MPI_SUCCESS ? 0 : -1;
}

static void finalize(void) { MPI_Finalize(); }

const aha_mpi_api *aha_mpi_api_get(void) {
    static const aha_mpi_api api = {AHA_MPI_API_VERSION, init, gather, finalize};
    return &api;
}
