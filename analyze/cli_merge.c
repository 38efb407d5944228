// aha merge: shards of one run (aha record --shard, or any traces aha report
// would combine) into one trace file (aha_trace_merge), so that the notebook
// and h5py read one file.
#include <stdio.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "report.h"
#include "trace.h"

int aha_cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    int force = 0;
    const aha_flag flags[] = {{"-o", FLAG_STR, &out, "the merged trace (required)", NULL},
                              {"--force", FLAG_BOOL, &force, "overwrite an existing file", NULL},
                              {NULL, 0, NULL, NULL, NULL}};
    static const char *pos[AHA_TRACES_POS]; // static: thousands of paths
    int n;
    int rc = aha_traces_parse(argc, argv, "usage: aha merge SHARD... -o merged.h5", flags, pos, &n);
    if (rc) return rc < 0 ? 0 : rc;
    if (!out) {
        aha_err("-o FILE is required");
        return aha_cli_fail();
    }
    if (aha_traces_out("-o", out, NULL, 0, force, pos, n) != 0) return aha_cli_fail();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "aha merge of %d traces, the first %s", n, pos[0]);
    int missing = 0, unordered = 0;
    if (aha_trace_merge(out, pos, n, cmd, force, &missing, &unordered) != 0) return aha_cli_fail();
    if (unordered) aha_trace_merge_unordered(out, unordered, n);
    if (missing) fprintf(stderr, "aha: warning: %s: %d shards of the run missing; its shard attribute names those it holds\n", out, missing);
    printf("merged %d traces into %s\n", n, out);
    return 0;
}
