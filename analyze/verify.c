// aha verify TRACE... (verify.h): every chunk and value of each trace read
// and checked; one line per trace.
#include "verify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "report.h"

#define SLAB_DECISIONS (4 << 20) // values per slab when the caller does not choose

// Dataset id's instance i read whole, block tokens (entries) at a time,
// into buf: aha_tr_read checks each chunk and value.
static int read_all(const aha_tr *tr, trace_dset_id id, int i, int64_t block, void *buf, aha_verify_result *r) {
    const int64_t n = aha_tr_len(tr, id), per = trace_dsets[id].shape == SH_LTH ? (int64_t)tr->m.n_layers * tr->m.n_heads : 1;
    for (int64_t t0 = 0; t0 < n; t0 += block) {
        int64_t m = n - t0 < block ? n - t0 : block;
        if (aha_tr_read(tr, id, i, t0, m, buf) != 0) return -1;
        if (trace_dsets[id].type == TY_STR) aha_tr_free_text(m, buf);
        r->values += m * per;
    }
    return 0;
}

int aha_verify_tr(const aha_tr *tr, int block, aha_verify_result *r) {
    *r = (aha_verify_result){0, 0};
    const int64_t per = (int64_t)tr->m.n_layers * tr->m.n_heads, c = tr->chunk_tokens > 0 ? tr->chunk_tokens : 1;
    int64_t b = block > 0 ? block : (SLAB_DECISIONS / per + c - 1) / c * c; // whole chunks
    void *buf = aha_malloc((size_t)(b * per), 8, "verify"); // the widest value in memory: 8 bytes
    int rc = buf ? aha_tr_check_storage(tr, &r->chunks) : -1;
    for (int id = 0; rc == 0 && id < TD_COUNT; id++)
        for (int i = 0; rc == 0 && i < aha_tr_n_instances(tr, id); i++)
            if (aha_tr_has(tr, id, i)) rc = read_all(tr, id, i, trace_dsets[id].shape == SH_LTH ? b : b * per, buf, r);
    free(buf);
    return rc;
}

// The one line for a trace that passed.
static void ok_line(const aha_tr *tr, const aha_verify_result *r) {
    int parts = 0, missing = 0;
    char where[160];
    if (tr->complete)
        snprintf(where, sizeof where, "%" PRId64 " chunks %s", r->chunks, tr->format_version < 2 ? "read" : "checked");
    else if (aha_tr_parts(tr, &parts, &missing) == 0)
        snprintf(where, sizeof where, "read through its index over %d part file%s, each chunk checked by HDF5", parts,
                 parts == 1 ? "" : "s");
    else
        snprintf(where, sizeof where, "read through its index");
    printf("%s: ok (format %d, %s, %" PRId64 " documents, %" PRId64 " tokens, %" PRId64 " values; %s)", tr->path,
           tr->format_version, tr->complete ? "complete" : "unfinished", tr->n_docs, tr->n_tokens, r->values, where);
    if (tr->format_version < 2)
        printf(" -- but format %d carries no checksums: its values and structure are checked, its bytes cannot be "
               "(aha merge %s -o NEW.h5 rewrites it as format %d)", tr->format_version, tr->path, AHA_TRACE_VERSION);
    printf("\n");
}

int aha_cmd_verify(int argc, char **argv) {
    int block = 0;
    const aha_flag flags[] = {{"--block", FLAG_INT, &block, "tokens per read slab; 0 = about 4M values", ">= 0"},
                              {NULL, 0, NULL, NULL, NULL}};
    static const char *pos[AHA_TRACES_POS]; // static: thousands of paths
    int n, bad = 0;
    int rc = aha_traces_parse(argc, argv, AHA_VERIFY_USAGE, flags, pos, &n);
    if (rc) return rc < 0 ? 0 : rc;
    for (int k = 0; k < n; k++) {
        aha_tr tr;
        aha_verify_result r;
        if (aha_tr_open_flags(&tr, pos[k], AHA_TR_EMPTY) != 0) {
            bad |= aha_cli_fail();
            continue;
        }
        int checked;
        if (aha_verify_tr(&tr, block, &r) != 0 || aha_tr_dataset_check(&tr, 1, &checked) != 0) bad |= aha_cli_fail();
        else ok_line(&tr, &r);
        aha_tr_close(&tr);
    }
    return bad;
}
