// libFuzzer target for the trace reader: a trace image in memory (HDF5's
// core driver: no file is read or written) either fails to open with a
// one-line message, or opens, and then what aha verify and aha report run on
// a trace -- every chunk and value read and checked, the report's
// statistics, token and mass tables gathered and turned into JSON -- each
// succeeds or fails with a one-line message: never a signal, a sanitizer
// report, unbounded memory, or an HDF5 object left open. Seeds:
// tests/fuzz/corpus_trace (tests/fuzz/make_corpus_trace.sh).
#include <hdf5.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "mass.h"
#include "report.h"
#include "report_schema.h"
#include "stats.h"
#include "tokens.h"
#include "trace_read.h"
#include "verify.h"

// HDF5 1.10 leaks a few blocks on some error paths of a damaged file (in
// its object header cache): not this reader's; its own leaks still count,
// and so does every HDF5 object it leaves open (ids_same below).
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libhdf5\n"; }

// 1 when HDF5 holds as many ids of each kind as it did after the first input:
// nothing of this reader's left open (predefined types and default property
// lists are ids too, hence a baseline, not 0).
static int ids_same(void) {
    static const H5I_type_t kinds[] = {H5I_FILE, H5I_GROUP, H5I_DATATYPE, H5I_DATASPACE, H5I_DATASET, H5I_ATTR,
                                       H5I_GENPROP_LST};
    static hsize_t base[sizeof kinds / sizeof kinds[0]];
    static int have;
    int same = 1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        hsize_t n = 0;
        H5Inmembers(kinds[i], &n);
        if (!have) base[i] = n;
        same &= n == base[i];
    }
    have = 1;
    return same;
}

// A failure must say what it is in one line.
static void one_line(int rc) {
    if (rc != 0 && strchr(aha_errmsg(), '\n')) abort();
}

// What aha report computes from an open trace, its JSON built and dropped.
static void report(const aha_tr *tr) {
    const char *name = tr->path;
    aha_stats s;
    int rc = aha_stats_gather_open(&s, tr, 1, &name, 64);
    one_line(rc);
    if (rc == 0) { // whatever the reader accepts, its report holds to the report's table
        cJSON *rep = aha_report_json(&s, 1);
        if (rep && aha_report_check(rep) != 0) abort();
        cJSON_Delete(rep);
        aha_stats_free(&s);
    }
    aha_tokens k;
    if (tr->m.n_eps > 0) {
        one_line(rc = aha_tokens_gather_open(&k, tr, 1, 64));
        if (rc == 0) {
            cJSON_Delete(aha_tokens_json(&k, 1, 5));
            aha_tokens_free(&k);
        }
    }
    cJSON *m = aha_mass_json_open(tr, 1, 64);
    one_line(m ? 0 : -1);
    cJSON_Delete(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    aha_tr tr;
    H5dont_atexit();
    int rc = aha_tr_open_image(&tr, "fuzz.h5", data, size, AHA_TR_EMPTY);
    one_line(rc);
    if (rc == 0) {
        aha_verify_result r;
        one_line(aha_verify_tr(&tr, 64, &r));
        if (tr.n_docs > 0) report(&tr);
        aha_tr_close(&tr);
    }
    if (!ids_same()) abort();
    return 0;
}
