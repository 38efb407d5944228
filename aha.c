// aha: measure how much of a transformer's attention needs the whole context.
// This file only dispatches a subcommand to its stage.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blas_core.h"
#include "commands.h"
#include "version.h"

// aha info / inspect: a trace to the trace inspector (analyze/), anything
// else to the model's (runtime/). A trace is an HDF5 file: its signature at
// offset 0, or a .h5 / .hdf5 name (so a broken one still gets the trace
// reader's message); a folder or a .gguf is a model.
static int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 2; i < argc && !path; i++)
        if (argv[i][0] != '-' || strcmp(argv[i], "--") == 0) path = strcmp(argv[i], "--") ? argv[i] : argv[i + 1];
    int trace = 0;
    struct stat st;
    if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        FILE *f = fopen(path, "rb");
        char sig[8] = {0};
        trace = f && fread(sig, 1, 8, f) == 8 && memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0;
        if (f) fclose(f);
    }
    size_t n = path ? strlen(path) : 0;
    trace |= (n > 3 && strcmp(path + n - 3, ".h5") == 0) || (n > 5 && strcmp(path + n - 5, ".hdf5") == 0);
    return trace ? aha_cmd_info_trace(argc, argv) : aha_cmd_info_model(argc, argv);
}

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} commands[] = {
    {"info", cmd_info, "a model (shapes, dtype, router, tokenizer) or a trace (settings, completeness)"},
    {"inspect", cmd_info, "the same as info"},
    {"tokenize", aha_cmd_tokenize, "token ids and pieces of a text"},
    {"generate", aha_cmd_generate, "continue a prompt (greedy by default)"},
    {"ppl", aha_cmd_ppl, "perplexity of a text file"},
    {"record", aha_cmd_record, "record routing decisions and dependency distances to HDF5"},
    {"sweep", aha_cmd_sweep, "one routed run per window (plus full attention) to HDF5"},
    {"fit", aha_cmd_fit, "fit AHA routers to a model from its own full attention (a router file)"},
    {"report", aha_cmd_report, "fractions, long tail, agreement, quality vs sparsity of traces"},
    {"merge", aha_cmd_merge, "shards (aha record --shard) into one trace file"},
    {"verify", aha_cmd_verify, "read every chunk of traces and check checksums and values"},
    {"plot", aha_cmd_plot, "the figures of a trace with gnuplot (data and script beside each)"},
    {"notebook", aha_cmd_notebook, "a Jupyter notebook of a trace: summary, figures, the code behind them"},
};

int main(int argc, char **argv) {
    size_t n = sizeof commands / sizeof commands[0];
    // OpenMP threads spin between parallel regions by default, which on a
    // loaded machine made `aha record` 3x slower than one thread
    // (docs/benchmarks.md, "Threads and OMP_WAIT_POLICY"). libgomp reads the
    // policy once, when it loads: so it is set for a fresh image of this
    // program, unless the user chose one. OpenBLAS's kernels likewise: the
    // ones for this CPU when it fell back to older ones (kernels/ops.h).
    int again = !getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
    const char *core = aha_blas_core_wanted();
    if (core && setenv("OPENBLAS_CORETYPE", core, 1) == 0) again = 1;
    if (again) execv("/proc/self/exe", argv); // on failure: go on, spinning or slower
    // A file-size limit should fail the write (and name the file), not kill us.
    signal(SIGXFSZ, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("aha %s (%s)\n", aha_version(), aha_git_rev());
        return 0;
    }
    for (size_t i = 0; argc >= 2 && i < n; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc, argv);
    int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc >= 2 && !help) {
        fprintf(stderr, "aha: unknown command '%s' (aha --help lists them)\n", argv[1]);
        return 2;
    }
    FILE *out = help ? stdout : stderr; // asked for: stdout; a wrong command line: stderr
    fprintf(out, "usage: aha COMMAND [ARGS] [FLAGS]   (aha COMMAND --help for its flags)\n"
                 "       aha --version             the version and the git revision it was built from\n"
                 "flags take their value as '--ctx 512' or '--ctx=512'\n");
    for (size_t i = 0; i < n; i++) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    return help ? 0 : 2;
}
