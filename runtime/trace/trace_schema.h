// The trace file's schema, declared once (docs/trace-format.md is generated
// from it: make docs). Every root attribute, group, dataset and run attribute
// of an aha trace is a row of a table below, with its type, shape, when it is
// present and its description; a dataset's row also says where a document
// (aha_trace_doc) holds its values. The writer creates exactly these and
// takes each document's values where the rows say, the reader reads and
// checks their shapes, aha merge copies them, resume's and combine's "same
// run" check compares the rows marked for it, and aha notebook's Python takes
// the dataset names from here: a row added here (and its field in
// aha_trace_doc, filled by the recorder) appears in all of them.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define AHA_TRACE_FORMAT "aha-trace"
#define AHA_TRACE_VERSION 2 // format_version written, and the newest one read (1: strings in the global heap)
// What one trace may hold: the writer refuses more, so every trace it writes
// reads back.
#define AHA_TRACE_MAX_EPS 32
#define AHA_TRACE_MAX_WINDOWS 64
#define AHA_TRACE_MAX_RUNS 64
#define AHA_TRACE_MAX_LAYERS 4096 // entries of a per-layer list (layer_window), and L
#define AHA_TRACE_MAX_HEADS 4096  // H
#define AHA_TRACE_MAX_WIDTH 4096  // bytes of one string of a string dataset (text_width)
#define AHA_TRACE_MAX_STR (1 << 20) // bytes of a string attribute
#define TRACE_STR_(x) #x
#define TRACE_STR(x) TRACE_STR_(x) // a number macro as a string

// ---- what a trace describes: the structs the tables' rows point into ----

typedef struct {              // what the run is: root attributes
    const char *model_path;   // as given on the command line
    const char *model_sha256; // every file the model was loaded from, as sha256sum prints them
                              // ("<hex>  <name>\n" each, names relative to the model path, sorted)
    const char *arch;         // e.g. "llama"
    int n_layers, n_heads;    // L and H of every [L, T, H] dataset
    const int *layer_window;  // [n_layer_window] each layer's native sliding window in keys
                              // (HF: a query at p sees keys p-window+1..p); 0 = full causal
    int n_layer_window;       // n_layers, or 0: every layer full causal (traces before it)
    int n_kv_heads, head_dim; // the model's, recorded as they are
    int vocab;                // vocabulary size
    int aha;                  // 1: the model has a learned router (gate, router_logit)
    const char *router;       // observe: "learned" / "none"; routed: the policy
    double tau;               // learned-router threshold
    const char *router_file;  // --router: the fitted router file fused into q_proj ("" or NULL: none)
    const char *router_sha256; // its SHA-256 in hex ("" or NULL: none)
    const double *eps;        // [n_eps] dependency thresholds -> dependency/eps_<e>
    int n_eps;                // 1..AHA_TRACE_MAX_EPS
    const int *windows;       // [n_windows] windows of interest
    int n_windows;            // 0..AHA_TRACE_MAX_WINDOWS (>= 1 with werr)
    int sinks;                // always-visible sink tokens
    int werr;                 // 1: window_error/w_<w> for every window
    int mass;                 // 1: mass_far/w_<w> for every window, and mass_sinks
    const char *mode;         // "observe" | "routed" | "sweep"
    const char *dataset;      // what was read, e.g. a path
    const char *dataset_sha256; // SHA-256 over every document's digest (doc_sha256), in order
    int64_t dataset_docs;     // how many documents that is, all shards' (0: not recorded)
    int source_width;         // bytes of the longest doc_source of the run (doc_source's
                              // fixed-length strings' width; not an attribute)
    const char *command_line; // kept from the first run when resumed
    const char *device;       // where it ran: "cpu", "cuda:f32", "cuda:bf16", ...
    const char *shard;        // "I/N": documents d with d % N == I; "" (or NULL): all
    const char *weights;      // CPU weights: "stored" (read in their stored type) | "f32" (converted at load)
    int chunk_tokens;         // tokens per chunk; 0 = automatic (~0.5-1 MiB chunks)
    // What else decides the numbers (aha record's flags):
    int ctx;                  // tokens per context: longer documents are split
    int batch;                // tokens per forward call
    int64_t seed;             // the random router's seed
    const char *format;       // dataset format as asked ("auto", "jsonl", ...)
    const char *text_field;   // JSONL: the field read ("" = "text")
    const char *read_as;      // what the documents were read as ("gsm8k", "text+tokens"):
                              // with --data-format auto, what was detected
    int64_t bos;              // the BOS id put before every text document; -1: none
    int64_t max_docs;         // documents of the dataset read (0: all)
    int64_t max_tokens;       // tokens recorded over all shards (0: all)
    int text_width;           // bytes of the longest token_text piece the run can write (its
                              // fixed-length strings' width): 1..AHA_TRACE_MAX_WIDTH
} aha_trace_meta;

typedef struct {            // the build and machine that made a trace (kept when resumed)
    char *version, *git_revision, *compiler, *cflags; // of the build
    char *host, *hdf5;      // machine name, HDF5 library version
    char *created;          // UTC ISO 8601 time of the first run
    char *command_line;     // the first run's command
} aha_trace_prov;

typedef struct {           // what the file says of its own state
    int64_t format_version; // AHA_TRACE_VERSION when written
    int64_t complete;       // 1: closed normally; 0: unfinished or killed
    int64_t n_docs;         // documents it holds
    int64_t n_tokens;       // tokens it holds
    int64_t chunk_tokens;   // chunk length along T
    int64_t id;             // random at creation, kept when resumed; in the part files'
                            // names, so an index finds only its own parts
} aha_trace_state;

typedef struct {           // one run's results for one document
    const float *nll;      // [n] next-token NLL (NaN for the document's last token)
    const float *kl;       // [n] KL(full || this run) per token (0 for the full run)
    const uint8_t *gate;   // [L, n, H] decisions attention used (1 = global);
                           // NULL for a run whose policy is "global"
    double flops_executed; // attention FLOPs executed on this document
    double flops_full;     // ... and what full attention would have executed
} aha_trace_run_doc;

typedef struct {                   // one document, as the writer takes it (aha_trace_append)
    int n;                         // tokens (>= 1)
    int64_t doc_index;             // its number in the dataset (doc_index; -1: not known)
    const char *source;            // where it came from (doc_source; "": not known)
    const char *sha256;            // its digest, 64 hex characters (doc_sha256; "": not known)
    const int32_t *tokens;         // [n]
    const char *const *token_text; // [n] NUL-terminated UTF-8 pieces
    const uint8_t *gate;           // [L, n, H] learned-router decisions (aha only)
    const float *router_logit;     // [L, n, H] (aha only; stored as float16)
    const uint32_t *dep;           // [n_eps][L, n, H] dependency distance d_eps (1..t+1)
    const float *werr;             // [n_windows][L, n, H] relative window-output
                                   // error (werr only; stored as float16)
    const aha_trace_run_doc *runs; // [n_runs] in aha_trace_add_run order
    const float *mass_far;         // [n_windows][L, n, H] mass on keys sinks..t-w (mass only;
                                   // stored as float16)
    const float *mass_sink;        // [L, n, H] mass on the sinks (mass only; float16)
} aha_trace_doc;

typedef struct {           // one run: the group runs/<name>
    char *name, *policy;   // owned
    int window;            // the policy's window (0: none)
    double param;          // the policy's number in a sweep grid (eps, threshold, tau, P, k); NaN: none
    int has_gate;          // runs/<name>/gate exists: policy is not "global"
    double flops_executed; // attention FLOPs, totals over the documents
    double flops_full;     // ...what full attention would have executed
    int full_pass;         // 1: the policy decides from the full-attention pass, which runs first
                           // (aha_policy_full_pass); -1: not recorded (read: derived from the policy)
} aha_trace_run;

// ---- element types: one table of traits ----

typedef enum { TY_I32, TY_I64, TY_U8, TY_U32, TY_F16, TY_F32, TY_F64, TY_STR, TY_COUNT } trace_type;

typedef struct {
    const char *name; // as the docs write it
    size_t size;      // bytes of one element in memory (float16: the bits; strings: a char *)
    const void *fill; // what a virtual dataset reads where its part file is missing
} trace_type_traits;

extern const trace_type_traits trace_types[TY_COUNT];

// ---- the tables ----

// When a group or dataset exists, and how many there are.
typedef enum {
    W_ALWAYS,   // one
    W_AHA,      // one, when the model has a learned router (meta.aha)
    W_EPS,      // one per eps ({eps})
    W_WERR,     // one per window when meta.werr ({window}); a group: when meta.werr
    W_MASS,     // one per window when meta.mass ({window}); a group: when meta.mass
    W_MASS1,    // one, when meta.mass
    W_RUN,      // one per run ({run}, {policy}, {window})
    W_RUN_GATE, // one per run whose policy is not "global"
} trace_when;

// Shapes of datasets: along the token axis, doc_offsets, or one per document.
typedef enum { SH_T, SH_LTH, SH_DOCS, SH_DOC, SH_COUNT } trace_shape;

// Datasets, in the order the writer creates them.
typedef enum {
    TD_TOKENS,
    TD_POSITION,
    TD_TOKEN_TEXT,
    TD_DOC_OFFSETS,
    TD_DOC_INDEX,
    TD_DOC_SOURCE,
    TD_DOC_SHA256,
    TD_GATE,
    TD_ROUTER_LOGIT,
    TD_DEP,
    TD_WERR,
    TD_MASS_FAR,
    TD_MASS_SINKS,
    TD_RUN_NLL,
    TD_RUN_KL,
    TD_RUN_GATE,
    TD_COUNT
} trace_dset_id;

// Where a document (aha_trace_doc) holds a dataset's values.
typedef enum {
    FROM_DOC,      // its field at `at`: an array, [n] or [L, n, H] (a row of several instances:
                   // [instances][L, n, H]); of a row of one value per document (SH_DOC), the value
    FROM_RUN,      // the field at `at` of each run's aha_trace_run_doc (d->runs[run])
    FROM_POSITION, // nowhere: the writer numbers the tokens of each document from 0
    FROM_ENDS,     // nowhere: where each document ends, the writer's store counts (doc_offsets)
} trace_from;

typedef struct {
    const char *key;  // short name (aha notebook's DS["key"])
    const char *path; // name template: {eps}, {window}, {run} (see trace_fill)
    trace_type type;  // in the file (float16: read back as float32)
    trace_shape shape;
    trace_when when;
    const char *attr; // numeric attribute of each one ("eps", "window"), or NULL
    trace_from from;  // where a document holds its values
    size_t at;        // ... offsetof the field there (FROM_DOC, FROM_RUN)
    const char *desc; // its description attribute (a template)
} trace_dset;

extern const trace_dset trace_dsets[TD_COUNT];

// Coordinates: 1-D datasets at the root that index the other datasets' axes
// and name them (HDF5 dimension scales, which netCDF-4 readers such as
// xarray take for shared, named dimensions: every dataset's token axis is
// the one `token`). A trace without them (written before them) reads the
// same; their presence (`token`) is the new form.
typedef enum { TC_TOKEN, TC_DOC, TC_LAYER, TC_HEAD, TC_EPS, TC_WINDOW, TC_COUNT } trace_coord_id;
typedef struct {
    const char *path; // its name, the dimension's
    trace_type type;
    const char *desc; // its description attribute
} trace_coord;
extern const trace_coord trace_coords[TC_COUNT];
// The coordinate each axis of a dataset of a shape indexes (-1: past its rank,
// or none: doc_offsets' n_docs + 1).
extern const int trace_shape_dims[SH_COUNT][3];
// Each TY_STR row's strings are fixed-length: offsetof the int in
// aha_trace_meta that holds their width in bytes, or 0 for a row whose width
// is the same in every trace (trace_str_width_fixed: doc_sha256's 64 hex
// digits). 0 for the other rows.
extern const size_t trace_str_width_off[TD_COUNT];
extern const int trace_str_width_fixed[TD_COUNT];

// The width in bytes of string dataset row id's values in a trace of meta m.
static inline int aha_trace_str_width(const aha_trace_meta *m, trace_dset_id id) {
    return trace_str_width_off[id] ? *(const int *)((const char *)m + trace_str_width_off[id])
                                   : trace_str_width_fixed[id];
}
// Where m holds it (a row with trace_str_width_off[id] only).
static inline int *aha_trace_str_width_at(aha_trace_meta *m, trace_dset_id id) {
    return (int *)((char *)m + trace_str_width_off[id]);
}

// Attributes: kind of the C field a row reads into and writes from.
typedef enum {
    AK_STR,  // char * (const char * in aha_trace_meta), a fixed-length UTF-8 string of its length
    AK_INT,  // int, stored int64
    AK_I64,  // int64_t
    AK_F64,  // double
    AK_F64S, // const double * with an int count, stored float64 [n]
    AK_INTS, // const int * with an int count, stored int64 [n]
} trace_attr_kind;

// The struct a row's field is in.
typedef enum { OBJ_CONST, OBJ_META, OBJ_PROV, OBJ_STATE, OBJ_RUN, OBJ_COUNT } trace_obj;

enum {                 // trace_attr flags
    A_REQUIRED = 1,    // every reader refuses a file without it
    A_OPTIONAL = 2,    // every reader takes its default when absent (added after version 1)
    A_RESUME = 4,      // resume: must equal what the resumed run records
    A_COMBINE = 8,     // shards combined or merged: must be equal
    A_PER_LAYER = 16,  // a list of n_layers values; absent or empty reads as n_layers zeros
    A_SWITCH = 32,     // a flag without a value (--mass): 1 reads "--mass" in messages, 0 "no --mass"
    A_BY_CONTENT = 64, // a path whose file is identified by its content: the next row is its
                       // fingerprint (SHA-256), compared instead; the path only against a trace
                       // that lacks the fingerprint (written before fingerprints)
};

typedef struct {
    const char *name;
    trace_attr_kind kind;
    trace_obj obj;
    size_t off, n_off;  // offsetof the field (and of its count) in obj's struct
    int cap;            // a list: the most values a trace holds
    const char *value;  // OBJ_CONST: the value written; else the default when absent
    unsigned flags;     // A_*
    const char *flag;   // what sets it on the command line ("--tau", "MODEL"), for messages; NULL: none
    const char *doc;    // its meaning, for docs/trace-format.md
} trace_attr;

typedef struct {
    const char *path;          // "/", "provenance", "runs/{run}", ...
    trace_when when;           // W_ALWAYS, W_WERR, W_MASS or W_RUN
    const trace_attr *attrs;   // [n_attrs] its attributes after "description"
    int n_attrs;
    const char *desc;          // its description attribute (a template)
} trace_group;

// Groups, in the order the writer creates them ("/" first: the root).
enum { TG_ROOT, TG_PROVENANCE, TG_DEPENDENCY, TG_WINDOW_ERROR, TG_MASS_FAR, TG_RUNS, TG_RUN, TG_COUNT };
extern const trace_group trace_groups[TG_COUNT];

// ---- names and descriptions ----

typedef struct {     // what fills a template's {key}s, as text
    const char *eps, *window, *sinks, *run, *policy;
} trace_vars;

// tmpl with every {key} replaced by v's text into out (cut at size). 0, or
// -1 when the result does not fit or a key is unknown or missing.
int trace_fill(char *out, size_t size, const char *tmpl, const trace_vars *v);

// ---- a row's instances in one trace ----
// How many instances dataset row id has in a trace of meta m with n_runs
// runs (eps, windows, runs; 1 for the others), and whether instance i is one
// of the trace's (runs[i].has_gate for a run's gate; runs may be NULL for
// the other rows).
int trace_row_count(trace_dset_id id, const aha_trace_meta *m, int n_runs);
int trace_row_has(trace_dset_id id, int i, const aha_trace_meta *m, const aha_trace_run *runs, int n_runs);
// Instance i's name (run: its run's name, for a run's rows) into path and,
// desc not NULL, its description. 0, or -1 when one does not fit.
int trace_row_name(trace_dset_id id, int i, const aha_trace_meta *m, const char *run, char *path, size_t size,
                   char *desc, size_t dsize);
// Elements of one instance over n tokens (n documents for SH_DOC): n, or L * n * H.
int64_t trace_row_elems(trace_dset_id id, const aha_trace_meta *m, int64_t n);

// ---- the meta ----

// The meta checked for writing: 0, or -1 with a message naming path.
int aha_trace_meta_check(const aha_trace_meta *m, const char *path);
// A deep copy (strings and arrays owned; a NULL device becomes "cpu", other
// NULL strings ""), freed by aha_trace_meta_free. 0 or -1 (out of memory).
int aha_trace_meta_copy(aha_trace_meta *d, const aha_trace_meta *s);
void aha_trace_meta_free(aha_trace_meta *m);
// "Is this the same run?": how a and b differ, for a message.
typedef struct {
    const trace_attr *attr; // the first root attribute that differs
    char what[160];         // it as the user names it: the flag ("--tau"), "the model's config.json",
                            // "the dataset (DATA)", or the attribute's name
    char a[600], b[600];    // its two values as the user typed them ("0.7", "--mass" / "no --mass",
                            // a fingerprint's file and digest)
} aha_trace_diff;
// The first root attribute whose flags include `which` (A_RESUME, A_COMBINE)
// that differs between a and b, described in *d: 1, or 0 when none does. A
// path marked A_BY_CONTENT counts by its fingerprint when both have one.
int aha_trace_meta_diff(const aha_trace_meta *a, const aha_trace_meta *b, unsigned which, aha_trace_diff *d);
void aha_trace_prov_free(aha_trace_prov *p);

// ---- natively local layers (layer_window) ----
// A layer with a native sliding window runs it in every mode: its router
// decides nothing and its d_eps is at most the window by construction, so
// every number that counts routing decisions counts the other, global,
// layers only. A trace without layer_window has only global layers.
static inline int aha_trace_layer_window(const aha_trace_meta *m, int l) {
    return l >= 0 && l < m->n_layer_window && m->layer_window ? m->layer_window[l] : 0;
}
// Layers with no native window (n_layers when none has one).
int aha_trace_n_global(const aha_trace_meta *m);
// What the decisions counted are, for labels: "all layers", or e.g.
// "global layers only: 3 of 18; 15 natively local (window 512) shown apart".
void aha_trace_layers_label(const aha_trace_meta *m, char *buf, size_t size);

// ---- a run's quality, defined once for aha record's summary and the report ----
// Perplexity is exp(mean NLL) over the tokens that have a next token (a NaN
// NLL, each document's last token, has none); mean KL against full attention
// is over every token, each of which has a next-token distribution. A
// non-finite value otherwise counts, so it shows in the result.
typedef struct {
    double nll_sum, kl_sum; // over the tokens counted
    int64_t n_nll, n_kl;    // ... how many
} aha_trace_quality;

void aha_trace_quality_add(aha_trace_quality *q, const float *nll, const float *kl, int64_t n);
double aha_trace_ppl(const aha_trace_quality *q);     // NaN without tokens
double aha_trace_mean_kl(const aha_trace_quality *q); // NaN without tokens
void aha_trace_run_free(aha_trace_run *r);
