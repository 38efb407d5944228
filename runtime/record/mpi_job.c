// The MPI job for ./aha: build/mpi/libaha_mpi.so (built where make finds
// mpicc), opened only when a launcher started this process, as the CUDA
// backend is. Without it, an mpirun of aha is one clear error.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "libpath.h"
#include "mpi_api.h"
#include "shard.h"

static const aha_mpi_api *api;

// AHA_MPI_LIB, else build/mpi/libaha_mpi.so beside the executable.
static int load(void) {
    if (api) return 0;
    char path[PATH_MAX];
    aha_lib_path(path, sizeof path, "AHA_MPI_LIB", "build/mpi/libaha_mpi.so");
    if (access(path, F_OK) != 0) {
        aha_err("an MPI launcher started aha, but this aha was built without MPI (no %s: make found no mpicc); "
                "use --shard auto -o run-%%i.h5 for one trace per rank", path);
        return -1;
    }
    // RTLD_GLOBAL: Open MPI opens its own plugins, which need libmpi's symbols
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    aha_mpi_api_fn fn = h ? (aha_mpi_api_fn)dlsym(h, AHA_MPI_API_SYMBOL) : NULL;
    const aha_mpi_api *a = fn ? fn() : NULL;
    if (!a || a->version != AHA_MPI_API_VERSION) {
        aha_err("cannot load %s (%s)", path, a ? "another aha's build: rebuild it" : dlerror());
        return -1;
    }
    api = a;
    return 0;
}

int aha_mpi_init(int *rank, int *size) {
    char why[512];
    if (load() != 0) return -1;
    if (api->init(rank, size, why, sizeof why) != 0) {
        aha_err("%s", why);
        return -1;
    }
    return 0;
}

int aha_mpi_gather(int rc, const char *msg, int *all_rc, char *all_msg, int msg_len) {
    char why[512];
    if (api->gather(rc, msg, all_rc, all_msg, msg_len, why, sizeof why) != 0) {
        aha_err("%s", why);
        return -1;
    }
    return 0;
}

void aha_mpi_finalize(void) {
    if (api) api->finalize();
}
