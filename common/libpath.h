// Where ./aha finds a library it opens itself (the MPI job's, build/mpi/):
// an environment variable's path, else the path relative to the executable.
#pragma once
#include <stddef.h>

// 1 when env_name named it, 0 when it is rel beside /proc/self/exe.
int aha_lib_path(char *path, size_t len, const char *env_name, const char *rel);
