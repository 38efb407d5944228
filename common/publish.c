// Outputs published whole and alone (publish.h).
#include "publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

// path's folder ("." for a bare name) into dir, and its last name into base;
// trailing slashes dropped. -1 with a message when path names no file of
// its own (".", "..", "/") or is too long.
static int split(const char *flag, const char *path, char *dir, char *base) {
    char p[PATH_MAX];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    if (n >= sizeof p) return aha_err("%s: path too long", path), -1;
    memcpy(p, path, n), p[n] = '\0';
    char *slash = strrchr(p, '/');
    const char *b = slash ? slash + 1 : p;
    if (strlen(b) > NAME_MAX) return aha_err("%s: name too long", path), -1;
    if (!*b || !strcmp(b, ".") || !strcmp(b, "..")) {
        aha_err("%s: names no file or folder of its own; %s takes a new name (e.g. %s out)", path, flag, flag);
        return -1;
    }
    strcpy(base, b);
    if (!slash) strcpy(dir, ".");
    else snprintf(dir, PATH_MAX, "%.*s", slash == p ? 1 : (int)(slash - p), p);
    return 0;
}

// The hidden file beside path that serves it: DIR/.BASE.aha-<what>.
static int beside(const char *flag, const char *path, const char *what, char out[PATH_MAX]) {
    char dir[PATH_MAX], base[NAME_MAX + 1];
    if (split(flag, path, dir, base) != 0) return -1;
    if (snprintf(out, PATH_MAX, "%s/.%s.aha-%s", dir, base, what) >= PATH_MAX) {
        aha_err("%s: path too long", path);
        return -1;
    }
    return 0;
}

int aha_lock_take(const char *path, const char *what, int *fd) {
    char lock[PATH_MAX];
    *fd = -1;
    if (beside("-o", path, "lock", lock) != 0) return -1;
    // The file may be removed by the writer that held it just after we open
    // it: a lock on a file no longer at that name is no lock, so try again.
    for (int tries = 0; tries < 16; tries++) {
        int f = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (f < 0) {
            aha_err("%s: cannot create its lock file %s (%s)", path, lock, strerror(errno));
            return -1;
        }
        if (flock(f, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char who[200] = "";
            ssize_t n = pread(f, who, sizeof who - 1, 0);
            close(f);
            who[n > 0 ? n : 0] = '\0';
            who[strcspn(who, "\n")] = '\0';
            if (e == EWOULDBLOCK)
                aha_err("%s: another process (%s) is writing %s", path, who[0] ? who : "its pid not written yet", what);
            else aha_err("%s: cannot lock %s (%s)", path, lock, strerror(e));
            return -1;
        }
        struct stat a, b;
        if (fstat(f, &a) == 0 && stat(lock, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            char me[200], host[128] = "unknown";
            gethostname(host, sizeof host - 1);
            int k = snprintf(me, sizeof me, "pid %d on %s\n", (int)getpid(), host);
            if (ftruncate(f, 0) != 0 || pwrite(f, me, (size_t)k, 0) != k) { // only a name for messages
            }
            *fd = f;
            return 0;
        }
        close(f);
    }
    aha_err("%s: cannot take its lock %s (it keeps being replaced)", path, lock);
    return -1;
}

void aha_lock_drop(const char *path, int fd) {
    char lock[PATH_MAX];
    if (fd < 0) return;
    if (beside("-o", path, "lock", lock) == 0) unlink(lock); // while held: no one else holds this file
    close(fd);
}

// Remove folder dir and the files in it; 0, or -1 (errno set) when it holds
// a folder or something cannot be removed.
static int remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlinkat(dirfd(d), e->d_name, 0) != 0) rc = -1;
    closedir(d);
    return rc == 0 && rmdir(dir) == 0 ? 0 : -1;
}

// Debris of a writer killed while it wrote (the lock is ours: no one writes it now).
static int remove_staging(const aha_pub *p) {
    struct stat s;
    if (lstat(p->tmp, &s) != 0) return 0;
    if (S_ISDIR(s.st_mode) ? remove_dir(p->tmp) == 0 : unlink(p->tmp) == 0) return 0;
    aha_err("%s: cannot remove what a killed writer left there (%s)", p->tmp, strerror(errno));
    return -1;
}

int aha_fsync(const char *path, int is_dir) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        aha_err("%s: fsync failed (%s)", path, strerror(e));
        return -1;
    }
    close(fd);
    return 0;
}

// An existing target as the command may replace it: a file with force; a
// folder with force (or empty), holding nothing but the command's files.
static int check_existing(const aha_pub *p) {
    struct stat s;
    if (lstat(p->path, &s) != 0) return 0;
    if (!p->dir) {
        if (S_ISDIR(s.st_mode)) return aha_err("%s: is a folder, and %s names a file here", p->path, p->flag), -1;
        if (!p->force) return aha_err("%s: exists (use --force to overwrite)", p->path), -1;
        return 0;
    }
    if (!S_ISDIR(s.st_mode)) return aha_err("%s: is a file, and %s names a folder here", p->path, p->flag), -1;
    DIR *d = opendir(p->path);
    if (!d) return aha_err("%s: cannot read (%s)", p->path, strerror(errno)), -1;
    int n = 0, rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int own = 0;
        for (int i = 0; i < p->n_own && !own; i++) own = !strcmp(e->d_name, p->own[i]);
        n++;
        if (!own) {
            aha_err("%s: holds %s, which this command does not write; %s replaces the folder whole, so it must "
                    "name a folder of the command's own (a new one, or one it wrote)",
                    p->path, e->d_name, p->flag);
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && n && !p->force) {
        aha_err("%s: exists (use --force to replace it)", p->path);
        rc = -1;
    }
    return rc;
}

static int pub_start(aha_pub *p, const char *flag, const char *path, int dir, int force, const char *const *own,
                     int n_own) {
    p->dir = dir, p->force = force, p->flag = flag, p->own = own, p->n_own = n_own;
    if (snprintf(p->path, sizeof p->path, "%s", path) >= (int)sizeof p->path)
        return aha_err("%s: path too long", path), -1;
    if (beside(flag, path, "tmp", p->tmp) != 0 || aha_lock_take(path, "it", &p->fd) != 0) return -1;
    int rc = check_existing(p) == 0 && remove_staging(p) == 0 ? 0 : -1;
    if (rc == 0 && dir && mkdir(p->tmp, 0777) != 0) {
        aha_err("%s: cannot create (%s)", p->tmp, strerror(errno));
        rc = -1;
    }
    if (rc != 0) aha_pub_abort(p);
    return rc;
}

int aha_pub_file(aha_pub *p, const char *flag, const char *path, int force, const aha_input *in, int n_in) {
    memset(p, 0, sizeof *p);
    p->fd = -1;
    return aha_out_file(flag, path, 1, in, n_in) == 0 ? pub_start(p, flag, path, 0, force, NULL, 0) : -1;
}

int aha_pub_dir(aha_pub *p, const char *flag, const char *path, int force, const char *const *own, int n_own,
                const aha_input *in, int n_in) {
    memset(p, 0, sizeof *p);
    p->fd = -1;
    return aha_out_dir(flag, path, NULL, 0, 1, in, n_in) == 0 ? pub_start(p, flag, path, 1, force, own, n_own) : -1;
}

// Every file in folder dir, then the folder, on disk.
static int sync_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return aha_err("%s: cannot read (%s)", dir, strerror(errno)), -1;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            aha_err("%s/%s: fsync failed (%s)", dir, e->d_name, strerror(errno));
            rc = -1;
        }
        if (fd >= 0) close(fd);
    }
    closedir(d);
    return rc == 0 ? aha_fsync(dir, 1) : -1;
}

// from takes the name to, which must not exist (EEXIST), where the file
// system has no RENAME_NOREPLACE: link() for a file, rename() for a folder
// (which refuses a folder that is not empty).
static int rename_new(const char *from, const char *to, int dir) {
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    if (dir) return rename(from, to);
    return link(from, to) == 0 ? unlink(from), 0 : -1;
}

// The new folder from takes the name of the old one at to, and from the
// old one's (which the caller removes); without RENAME_EXCHANGE, the old
// one moves aside first (for a moment the name is free).
static int exchange(const aha_pub *p) {
    if (renameat2(AT_FDCWD, p->tmp, AT_FDCWD, p->path, RENAME_EXCHANGE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    char old[PATH_MAX];
    if (beside(p->flag, p->path, "old", old) != 0 || (remove_dir(old) != 0 && errno != ENOENT)) return -1;
    if (rename(p->path, old) != 0) return -1;
    if (rename(p->tmp, p->path) != 0) {
        int e = errno;
        rename(old, p->path); // the old output back
        errno = e;
        return -1;
    }
    if (rename(old, p->tmp) != 0) remove_dir(old); // else the caller removes it
    return 0;
}

int aha_pub_commit(aha_pub *p) {
    char dir[PATH_MAX], base[NAME_MAX + 1];
    struct stat s;
    int rc = split(p->flag, p->path, dir, base) != 0 || (p->dir ? sync_dir(p->tmp) : aha_fsync(p->tmp, 0)) != 0 ||
                     check_existing(p) != 0
                 ? -1
                 : 0;
    if (rc == 0) {
        const int exists = lstat(p->path, &s) == 0;
        rc = !exists ? rename_new(p->tmp, p->path, p->dir) : p->dir ? exchange(p) : rename(p->tmp, p->path);
        if (rc != 0 && errno == EEXIST)
            aha_err("%s: made meanwhile by a writer that took no lock; left as it is", p->path);
        else if (rc != 0) aha_err("%s: cannot rename to %s (%s)", p->tmp, p->path, strerror(errno));
        else rc = aha_fsync(dir, 1);
    }
    aha_pub_abort(p); // after an exchange: the old folder
    return rc;
}

void aha_pub_abort(aha_pub *p) {
    if (p->fd < 0) return;
    // the error that stopped the writer stays the one said, naming the output rather than its staging name
    char why[1024 + 2 * PATH_MAX];
    const char *m = aha_errmsg(), *at = strstr(m, p->tmp);
    if (at) snprintf(why, sizeof why, "%.*s%s%s", (int)(at - m), m, p->path, at + strlen(p->tmp));
    else snprintf(why, sizeof why, "%s", m);
    remove_staging(p);
    aha_err("%s", why);
    aha_lock_drop(p->path, p->fd);
    p->fd = -1;
}
