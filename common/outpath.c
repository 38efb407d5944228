#include "outpath.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"

// The input that s is (same device and inode), or NULL.
static const aha_input *same_as(const struct stat *s, const aha_input *in, int n_in) {
    struct stat t;
    for (int i = 0; i < n_in; i++)
        if (in[i].path && stat(in[i].path, &t) == 0 && t.st_dev == s->st_dev && t.st_ino == s->st_ino) return &in[i];
    return NULL;
}

// p without its last component: "a/b" -> "a", "b" -> ".", "/b" -> "/".
static void parent(char *p) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    char *slash = strrchr(p, '/');
    if (!slash) strcpy(p, ".");
    else slash[slash == p] = '\0';
}

// The input folder that path lies inside (at any depth), or NULL: every
// folder from path's parent up to the root, symlinks resolved.
static const aha_input *inside(const char *path, const aha_input *in, int n_in) {
    char dir[PATH_MAX], real[PATH_MAX];
    int found = snprintf(dir, sizeof dir, "%s", path) < (int)sizeof dir;
    while (found) { // the nearest folder above path that exists
        parent(dir);
        if (realpath(dir, real)) break;
        found = strcmp(dir, ".") && strcmp(dir, "/");
    }
    if (!found) return NULL;
    for (;;) {
        struct stat s;
        const aha_input *hit = stat(real, &s) == 0 ? same_as(&s, in, n_in) : NULL;
        if (hit || !strcmp(real, "/")) return hit;
        parent(real);
    }
}

// What out is to the inputs: -1 with the message when it is one, or lies
// inside an input folder.
static int not_an_input(const char *flag, const char *path, const struct stat *s, const aha_input *in, int n_in) {
    if (!path[0]) {
        aha_err("%s \"\": an empty path names no file", flag);
        return -1;
    }
    const aha_input *hit = s ? same_as(s, in, n_in) : NULL;
    if (hit) {
        aha_err("%s: is %s (%s); %s never replaces an input, even with --force", path, hit->role, hit->path, flag);
        return -1;
    }
    if ((hit = inside(path, in, n_in))) {
        aha_err("%s: lies inside %s (the folder %s); %s must be outside it", path, hit->role, hit->path, flag);
        return -1;
    }
    return 0;
}

int aha_out_file(const char *flag, const char *path, int force, const aha_input *in, int n_in) {
    struct stat s;
    const int exists = stat(path, &s) == 0;
    if (not_an_input(flag, path, exists ? &s : NULL, in, n_in) != 0) return -1;
    if (exists && S_ISDIR(s.st_mode)) {
        aha_err("%s: is a folder, and %s names a file here", path, flag);
        return -1;
    }
    if (exists && !force) {
        aha_err("%s: exists (use --force to overwrite)", path);
        return -1;
    }
    return 0;
}

int aha_out_dir(const char *flag, const char *dir, const char *const *names, int n, int force,
                const aha_input *in, int n_in) {
    struct stat s;
    const int exists = stat(dir, &s) == 0;
    if (not_an_input(flag, dir, exists ? &s : NULL, in, n_in) != 0) return -1;
    if (exists && !S_ISDIR(s.st_mode)) {
        aha_err("%s: is a file, and %s names a folder here", dir, flag);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path) {
            aha_err("%s: path too long", dir);
            return -1;
        }
        if (aha_out_file(flag, path, force, in, n_in) != 0) return -1;
    }
    return 0;
}
