// The config.json fields and GGUF keys a model's numbers depend on, one row
// each, declared once: the readers walk the rows, any field or key present
// that no row of the model's type reads is refused by name, and
// docs/runtime.md's tables are rendered from them (`make docs`).
#pragma once
#include <stddef.h>

#include "model.h"

typedef enum {
    ROW_ARCH,  // names the architecture: read before the rows
    ROW_INT,   // a non-negative int of aha_config at off
    ROW_FLOAT, // a float of aha_config at off
    ROW_CAP,   // a float of aha_config at off; null (config.json) is 0, none
    ROW_BOOL,  // an int of aha_config at off: 1 for true, 0 for false
    ROW_ONLY,  // stored nowhere: the value must be one of only's
    ROW_FN,    // read by fn
    ROW_INFO,  // read by nothing: it changes no number, for the reason doc gives
} cfg_row_kind;

typedef struct {
    const char *name;  // config.json: the field; GGUF: the key after "{arch}.", or the whole
                       // key when it starts with "general." or "split." ("x.*": every key under x.)
    unsigned types;    // the model types (config.json) or architectures (GGUF) that read it, a bit each
    cfg_row_kind kind;
    size_t off;        // offsetof(aha_config, ...) for ROW_INT, ROW_FLOAT, ROW_CAP, ROW_BOOL
    const char *only;  // ROW_ONLY: the values implemented, '|'-separated, as JSON prints them
    int (*fn)(void *p, const void *v); // ROW_FN: the format's parse state, and the cJSON item
                                       // or aha_gguf_kv
    int required;      // 1: a model without it is refused
    const char *doc;   // what the forward pass does with it, or why it changes nothing
} cfg_row;

// The rows, and the names of the bits of their types.
extern const cfg_row aha_json_rows[];
extern const int aha_n_json_rows;
extern const char *const aha_json_types[]; // [bit] model_type
extern const cfg_row aha_gguf_rows[];
extern const int aha_n_gguf_rows;
extern const char *const aha_gguf_archs[]; // [bit] general.architecture

// The row of rows[0..n) named name for a model of type bit `type`
// ("x.*" rows match every name under x.), NULL when none.
const cfg_row *aha_cfg_row(const cfg_row *rows, int n, const char *name, unsigned type);
// Whether text (as JSON prints a value) is one of only's '|'-separated values.
int aha_cfg_only(const char *only, const char *text);

// The HF config classes' layer rule when no layer_types is given: Gemma-3
// makes every pattern-th layer global, Gemma-2 the odd ones.
int aha_gemma_layer_local(aha_arch a, int l, int pattern);
// What every Gemma-2/3 does, whatever the file says: GeGLU, (1 + w) norms,
// embeddings times sqrt(hidden).
void aha_config_gemma(aha_config *c);
