// Outputs published whole and alone (every output a command writes: a
// router file, a report's folder, a figure folder, a notebook; traces take
// the lock only, their writer publishes its own files).
//
// Alone: a writer first takes the output's lock, an flock on a hidden file
// beside it (.NAME.aha-lock, holding the writer's pid and host), without
// waiting; a second writer fails at once, naming the first's process, and
// removes nothing. The kernel drops the lock when a process dies; the file
// left by a killed writer is taken over by the next.
//
// Whole: the output is written under a hidden staging name beside it
// (.NAME.aha-tmp: a file, or a folder built whole), synced, then renamed
// over the target, so a reader sees the old output or the new one, never a
// part of either. A folder replaces the old folder whole (renameat2's
// exchange), so no file of the old output stays beside the new ones. A write
// that fails (an error, a full disk, a kill) leaves the old output as it was;
// the next writer removes the staging debris.
#pragma once
#include <limits.h>

#include "outpath.h"

// Take path's lock: 0 with *fd, or -1 with "path: another process (pid N
// on HOST) is writing <what>" ("it", "this trace").
int aha_lock_take(const char *path, const char *what, int *fd);
// Release it and remove the lock file; fd -1 does nothing.
void aha_lock_drop(const char *path, int fd);

// path (is_dir: a folder, making the names in it durable) on disk: 0, or -1
// with "path: fsync failed (why)".
int aha_fsync(const char *path, int is_dir);

typedef struct {
    char path[PATH_MAX];    // the target, as given
    char tmp[PATH_MAX];     // the staging file or folder beside it: write here
    int dir;                // 1: a folder
    int force;              // an existing output may be replaced
    const char *flag;       // what names it on the command line ("-o"), for messages
    const char *const *own; // [n_own] a folder: the names of the files the command writes
    int n_own;              // ...
    int fd;                 // the lock's descriptor; -1: not held
} aha_pub;

// Start a file output at path (flag names it in messages): checked against
// the inputs in[0..n_in) (aha_out_file), locked, and refused when it exists
// without force. Write p->tmp, then aha_pub_commit or aha_pub_abort. 0 or -1.
int aha_pub_file(aha_pub *p, const char *flag, const char *path, int force, const aha_input *in, int n_in);
// The same for a folder output: p->tmp is an empty folder made here. An
// existing folder is replaced only with force, and only when it holds
// nothing but files the command writes (own[0..n_own), by name): a folder
// with other files is never removed. An existing empty folder is replaced.
int aha_pub_dir(aha_pub *p, const char *flag, const char *path, int force, const char *const *own, int n_own,
                const aha_input *in, int n_in);
// Sync what p->tmp holds and rename it over the target (a folder: the old
// one removed after), then release the lock. On failure the old output is
// as it was and p->tmp is removed. 0 or -1.
int aha_pub_commit(aha_pub *p);
// Remove p->tmp and release the lock (after an error; the old output stays).
// Safe on a p whose start failed, and twice.
void aha_pub_abort(aha_pub *p);
