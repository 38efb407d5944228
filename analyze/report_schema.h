// The report's schema, declared once (docs/report-format.md is generated
// from it: make docs). Every field of the JSON report is a row below: the
// object it belongs to, its key, type and shape, unit, which decisions it
// counts, when it is present, and what it means. The builders (report_json.c,
// tokens.c, mass.c, frontier.c) add fields by row, so a key is spelled here
// only; aha_report_check holds a built report to the table (every field
// declared, of its type, in its order, none missing) before anything is
// written from it; the CSV takes an object's numbers in the table's order; and
// every reader (Markdown, CSV, plots/, notebooks-export/) reads a field
// through its row, checked: a field that is missing or of another type is an
// error naming it, never a NULL dereference.
#pragma once
#include <stdint.h>

#include <cjson/cJSON.h>

typedef enum {                // the report's objects
    RO_REPORT,                // the file
    RO_TRACE,                 // traces[i]: one run (its shards combined) or, with --compare, one trace
    RO_SUBSETS,               // trace.fraction_subsets
    RO_DOC,                   // trace.docs[d]
    RO_LOCAL_LAYER,           // trace.local_layers[k]
    RO_QUANTILES,             // d_eps quantiles
    RO_LOCAL_QUANTILES,       // a local layer's quantiles at one eps
    RO_ROUTER,                // trace.routers[r]
    RO_ROUTER_WINDOW,         // a router's fractions at one window
    RO_PAIR,                  // a fraction over both subsets
    RO_FRAC,                  // a fraction with the counts behind it
    RO_LONG_TAIL,             // trace.long_tail[e]
    RO_AGREEMENT,             // trace.agreement[k]
    RO_CONFUSION,             // learned vs oracle counts
    RO_WERR,                  // trace.window_error[i]
    RO_ABOVE,                 // window errors above a threshold
    RO_RUN,                   // trace.runs[r]
    RO_TOKENS,                // trace.tokens
    RO_GROUP,                 // a layer group
    RO_TOKEN_WINDOW,          // tokens.windows[i]
    RO_TOKEN_TOP,             // a top token
    RO_KEYED,                 // rates by key (position bucket, class), both subsets
    RO_KEYED_FRAC,            // one key's rate
    RO_MASS,                  // trace.mass
    RO_MASS_WINDOW,           // mass.windows[i]
    RO_MASS_SPLIT,            // mean mass on sinks, window, far context
    RO_MASS_GROUP,            // one layer group's split at one window
    RO_MASS_GLOBAL,           // the same over the oracle's global decisions
    RO_FRONTIER,              // trace.frontier
    RO_LINE,                  // frontier.lines[k]
    RO_POINT,                 // a frontier point
    RO_SMALLEST,              // the smallest fraction global within delta
    RO_COUNT
} report_obj;

typedef enum {                // a value's type (each element's, for an array)
    RT_INT,                   // an integer
    RT_NUM,                   // a finite number
    RT_NUM_NULL,              // a number, or null where it is undefined (0 decisions, no reference)
    RT_STR,                   // a string
    RT_BOOL,                  // true or false
    RT_OBJ,                   // an object (row.of)
    RT_OBJ_NULL,              // an object (row.of), or null
} report_type;

typedef enum {                // the fields, by object in the report's order
    RF_REPORT_FORMAT, RF_REPORT_VERSION, RF_REPORT_TRACES,
    RF_TRACE_FILES, RF_TRACE_MODEL, RF_TRACE_ARCH, RF_TRACE_DATASET, RF_TRACE_MODE, RF_TRACE_DEVICE,
    RF_TRACE_ROUTER, RF_TRACE_TAU, RF_TRACE_FORMAT_VERSION, RF_TRACE_COMPLETE, RF_TRACE_SHARDS,
    RF_TRACE_SHARDS_MISSING, RF_TRACE_N_LAYERS, RF_TRACE_N_HEADS, RF_TRACE_N_DOCS, RF_TRACE_DOCS,
    RF_TRACE_N_TOKENS, RF_TRACE_DECISIONS, RF_TRACE_LAYER_WINDOW, RF_TRACE_N_GLOBAL_LAYERS,
    RF_TRACE_DECISIONS_COUNTED, RF_TRACE_LAYERS_COUNTED, RF_TRACE_LOCAL_LAYERS, RF_TRACE_MAX_D, RF_TRACE_EPS,
    RF_TRACE_WINDOWS, RF_TRACE_SINKS, RF_TRACE_CTX, RF_TRACE_SUBSETS, RF_TRACE_ROUTERS, RF_TRACE_LONG_TAIL,
    RF_TRACE_AGREEMENT, RF_TRACE_WINDOW_ERROR, RF_TRACE_RUNS, RF_TRACE_TOKENS, RF_TRACE_MASS, RF_TRACE_FRONTIER,
    RF_SUBSETS_DEFAULT, RF_SUBSETS_ALL, RF_SUBSETS_T_GE_W,
    RF_DOC_INDEX, RF_DOC_SOURCE,
    RF_LOCAL_QUANTILES, RF_LOCAL_LAYER, RF_LOCAL_WINDOW,
    RF_Q_MEDIAN, RF_Q_P90, RF_Q_P99, RF_Q_MAX,
    RF_LOCALQ_EPS,
    RF_ROUTER_WINDOWS, RF_ROUTER_ROUTER, RF_ROUTER_TAU, RF_ROUTER_EPS,
    RF_RW_WINDOW, RF_RW_ALL, RF_RW_T_GE_W, RF_RW_PER_LAYER, RF_RW_PER_HEAD, RF_RW_PER_DOC,
    RF_PAIR_ALL, RF_PAIR_T_GE_W,
    RF_FRAC_GLOBAL, RF_FRAC_TOTAL, RF_FRAC_FRACTION,
    RF_LT_EPS, RF_LT_QUANTILES, RF_LT_PER_LAYER_QUANTILES, RF_LT_CCDF, RF_LT_CCDF_PER_LAYER,
    RF_AG_EPS, RF_AG_WINDOW, RF_AG_ALL, RF_AG_T_GE_W, RF_AG_PER_HEAD_T_GE_W,
    RF_CONF_TP, RF_CONF_FP, RF_CONF_FN, RF_CONF_TN, RF_CONF_PRECISION, RF_CONF_RECALL, RF_CONF_F1,
    RF_WERR_WINDOW, RF_WERR_MEAN, RF_WERR_MEDIAN, RF_WERR_P90, RF_WERR_P99, RF_WERR_MAX, RF_WERR_ABOVE,
    RF_ABOVE_THRESHOLD,
    RF_RUN_NAME, RF_RUN_POLICY, RF_RUN_WINDOW, RF_RUN_PARAM, RF_RUN_TOKENS_SCORED, RF_RUN_MEAN_NLL, RF_RUN_PPL,
    RF_RUN_PPL_DELTA, RF_RUN_PPL_CHANGE, RF_RUN_MEAN_KL, RF_RUN_GLOBAL_ALL, RF_RUN_GLOBAL_T_GE_W, RF_RUN_PER_LAYER,
    RF_RUN_FLOPS_EXECUTED, RF_RUN_FLOPS_FULL, RF_RUN_FLOPS_FRACTION, RF_RUN_FLOPS_INCL_ORACLE,
    RF_RUN_FLOPS_FRACTION_INCL_ORACLE,
    RF_TOK_EPS, RF_TOK_MIN_COUNT, RF_TOK_TOP, RF_TOK_TOP_SUBSET, RF_TOK_GROUPS, RF_TOK_POSITION_BUCKETS,
    RF_TOK_CLASSES, RF_TOK_WINDOWS,
    RF_GROUP_NAME, RF_GROUP_FIRST_LAYER, RF_GROUP_LAST_LAYER, RF_GROUP_LAYERS_COUNTED,
    RF_TW_WINDOW, RF_TW_TOP, RF_TW_POSITION, RF_TW_CLASS,
    RF_TOP_ID, RF_TOP_TEXT, RF_TOP_OCCURRENCES,
    RF_KEYED_ALL, RF_KEYED_T_GE_W,
    RF_KF_OCCURRENCES,
    RF_MASS_RECORDED, RF_MASS_EPS, RF_MASS_SINKS, RF_MASS_SUBSET, RF_MASS_GLOBAL, RF_MASS_GROUPS, RF_MASS_WINDOWS,
    RF_MW_GROUPS, RF_MW_WINDOW,
    RF_SPLIT_DECISIONS, RF_SPLIT_SINKS, RF_SPLIT_WINDOW, RF_SPLIT_FAR,
    RF_MG_GLOBAL,
    RF_MGL_FRACTION,
    RF_FR_DELTA, RF_FR_RULE, RF_FR_LINES,
    RF_LINE_WINDOW, RF_LINE_POLICY, RF_LINE_POINTS, RF_LINE_SMALLEST_ALL, RF_LINE_SMALLEST_T_GE_W,
    RF_POINT_RUN, RF_POINT_PARAM, RF_POINT_FRACTION_ALL, RF_POINT_FRACTION_T_GE_W, RF_POINT_PPL_CHANGE,
    RF_POINT_MEAN_KL, RF_POINT_FLOPS_FRACTION,
    RF_SM_FROM, RF_SM_FRACTION, RF_SM_HOW, RF_SM_TO,
    RF_COUNT
} report_field_id;

typedef struct {
    const char *name;         // as the doc names it
    report_obj base;          // an object whose fields come first (RO_COUNT: none)
    const char *desc;         // what one is
} report_object;

typedef struct {
    report_obj obj;           // the object it is a member of
    const char *key;          // its JSON key (and a number's CSV metric)
    report_type type;         // of its value, or of each element of an array
    report_obj of;            // RT_OBJ, RT_OBJ_NULL: the object (RO_COUNT otherwise)
    const char *shape;        // NULL: one value; "[L]", "[L][H]": nested arrays, one per []
    const char *unit;         // of a number ("" where none)
    const char *counts;       // which decisions it counts ("" where none)
    const char *when;         // NULL: always present; else when it is (absent otherwise)
    const char *desc;         // what it means
} report_field;

extern const report_object report_objs[RO_COUNT];
extern const report_field report_fields[RF_COUNT];

// The fields of object k in the report's order (its base's first) into
// out[RF_COUNT]; their count.
int report_obj_fields(report_obj k, report_field_id *out);

// ---- building: every key from its row ----

void rep_add(cJSON *o, report_field_id f, cJSON *v);
void rep_add_num(cJSON *o, report_field_id f, double x); // not finite: null
void rep_add_str(cJSON *o, report_field_id f, const char *s);
void rep_add_bool(cJSON *o, report_field_id f, int b);
cJSON *rep_add_array(cJSON *o, report_field_id f);
cJSON *rep_add_object(cJSON *o, report_field_id f);
// A fraction: {global, total, fraction} (fraction null if total = 0).
cJSON *rep_frac(int64_t global, int64_t total);

// ---- checking a built report ----

// rep against the table: every member declared for its object, of the row's
// type and shape, in the table's order, and every always-present field there.
// 0, or -1 with one line naming the field ("report: traces[0].runs[2].ppl:
// missing").
int aha_report_check(const cJSON *rep);

// ---- reading: each field through its row ----
//
// A field absent where the table says it is always present, or of another
// type, is a failed read: the first sets the error message (aha_err, naming
// it), rep_read_failed() says so until rep_read_reset(), and the accessor
// returns NaN, 0, "" or NULL (cJSON's array walks take NULL as empty), so a
// reader never dereferences NULL and its caller fails on rep_read_failed().

const cJSON *rep_get(const cJSON *o, report_field_id f); // the member; NULL where absent
cJSON *rep_get_mut(cJSON *o, report_field_id f);         // the same, for a builder to add to
double rep_num(const cJSON *o, report_field_id f);       // NaN where null or absent
int rep_int(const cJSON *o, report_field_id f);          // 0 where null or absent
const char *rep_str(const cJSON *o, report_field_id f);  // "" where absent
int rep_true(const cJSON *o, report_field_id f);
int rep_has(const cJSON *o, report_field_id f);          // present (and not null)
int rep_null(const cJSON *o, report_field_id f);         // present and null
int rep_len(const cJSON *o, report_field_id f);          // elements of an array field
// Element i of array field f (an object or an inner array); NULL past its end.
const cJSON *rep_at(const cJSON *o, report_field_id f, int i);
// Element i of an array of numbers / strings: NaN, "" past its end.
double rep_num_at(const cJSON *a, int i);
const char *rep_str_at(const cJSON *a, int i);
int rep_read_failed(void);
void rep_read_reset(void);
