#include "libpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int aha_lib_path(char *path, size_t len, const char *env_name, const char *rel) {
    const char *env = getenv(env_name);
    if (env && *env) return snprintf(path, len, "%s", env), 1;
    ssize_t n = len > 1 ? readlink("/proc/self/exe", path, len - 1) : -1;
    char *slash = n > 0 ? (path[n] = '\0', strrchr(path, '/')) : NULL;
    if (slash) snprintf(slash + 1, len - (size_t)(slash + 1 - path), "%s", rel);
    else snprintf(path, len, "%s", rel);
    return 0;
}
