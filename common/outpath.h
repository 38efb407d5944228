// Where a command writes, checked before it reads or computes anything. An
// output never replaces one of the command's inputs (compared by device and
// inode, so another spelling, a symlink or a hard link is caught too) nor
// lies inside an input folder (a dataset folder would read it as a document
// on the next run), even with --force; an existing output is replaced only
// with --force; a folder where a file is expected, or a file where a folder
// is, says so.
#pragma once

typedef struct {
    const char *role; // what it is to the command, for the message: "the model", "the dataset"
    const char *path; // NULL: absent (an optional input)
} aha_input;

// One file the command writes; flag names it in the message ("-o"). force:
// an existing file may be replaced (the command's --force, or 1 where the
// command explains an existing file itself). 0, or -1 with one line.
int aha_out_file(const char *flag, const char *path, int force, const aha_input *in, int n_in);
// A folder the command writes into (made when absent), then each of the
// n file names inside it as aha_out_file.
int aha_out_dir(const char *flag, const char *dir, const char *const *names, int n, int force,
                const aha_input *in, int n_in);
