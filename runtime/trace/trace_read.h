// Reading aha traces (docs/trace-format.md) without the model: root
// attributes, runs, and [L, T, H] datasets in token blocks so that memory
// stays bounded whatever the trace's size. A trace still being written (or
// left by a killed run) is an index of virtual datasets over PATH.parts/;
// HDF5 resolves those itself, so both kinds read the same.
//
// Functions return 0 or -1 with a one-line message naming the file (err.h).
#pragma once
#include <stdint.h>

#define AHA_TR_VERSION 1      // newest format_version this reader knows
#define AHA_TR_MAX_EPS 16
#define AHA_TR_MAX_WINDOWS 64
#define AHA_TR_MAX_RUNS 64

typedef struct {
    char name[64];            // runs/<name>
    char policy[32];          // "global", "oracle", "learned", ...
    int window;               // routed window (0 for the full run)
    int has_gate;             // runs/<name>/gate [L, T, H] exists
    double flops_executed;    // attention FLOPs, all documents
    double flops_full;        // ... what full attention would have executed
} aha_tr_run;

typedef struct {
    const char *path;         // as given
    int64_t file;             // hid_t of the open file
    int format_version;
    char model[512], arch[64], router[64], mode[32], dataset[512], device[32];
    int n_layers, n_heads;    // L, H
    int n_kv_heads, head_dim, vocab; // the model's other shapes, as recorded
    int complete;             // 0: a killed or unfinished run (index over parts)
    int sinks;
    double tau;
    int n_eps;
    double eps[AHA_TR_MAX_EPS];       // [n_eps] in recorded order
    int n_windows;
    int windows[AHA_TR_MAX_WINDOWS];  // [n_windows] ascending, distinct
    int has_gate;             // learned router: gate [L, T, H]
    int has_werr;             // window_error/w_<w> [L, T, H] for every window (--werr)
    int64_t n_tokens;         // T: tokens the datasets hold
    int64_t n_docs;           // documents (contexts) doc_offsets delimits
    int chunk_tokens;         // the datasets' chunk length along T
    int n_runs;
    aha_tr_run runs[AHA_TR_MAX_RUNS];
} aha_tr;

// Open and validate: a missing or non-HDF5 file, a foreign HDF5 file, a newer
// format_version and an empty trace are errors.
int aha_tr_open(aha_tr *tr, const char *path);
void aha_tr_close(aha_tr *tr);
// "dependency/eps_<e>" for eps index e.
const char *aha_tr_dep_name(const aha_tr *tr, int e, char *buf, int size);
// Read [L, n, H] at tokens [t0, t0+n) of dataset name as uint8 (u8=1) or
// uint32 (u8=0) into buf, laid out [L, n, H].
int aha_tr_read_lth(const aha_tr *tr, const char *name, int64_t t0, int64_t n, int u8, void *buf);
// "window_error/w_<w>" for window index i.
const char *aha_tr_werr_name(const aha_tr *tr, int i, char *buf, int size);
// Read [L, n, H] float values (float16 in the file) the same way.
int aha_tr_read_lth_f32(const aha_tr *tr, const char *name, int64_t t0, int64_t n, float *buf);
// Read n elements at [t0, t0+n) of a 1-D dataset: kind 'i' int32, 'l' int64,
// 'f' float32.
int aha_tr_read_1d(const aha_tr *tr, const char *name, int64_t t0, int64_t n, char kind, void *buf);
// Token texts [t0, t0+n) as malloc'd strings (free with aha_tr_free_text).
int aha_tr_read_text(const aha_tr *tr, int64_t t0, int64_t n, char **out);
void aha_tr_free_text(const aha_tr *tr, int64_t n, char **text);
// 0 when b can be combined with a (same schema, model, shapes, router, eps,
// windows); else -1 with a message naming the first field that differs.
int aha_tr_check_same(const aha_tr *a, const aha_tr *b);
