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

// The kinds of model file aha reads, one bit each in a row's types: the one
// list of architecture names. A kind is a config.json model_type, a GGUF
// general.architecture, or both; each names an aha_arch.
enum {
    K_LLAMA,
    K_MISTRAL,
    K_QWEN2,
    K_QWEN3,
    K_OLMO2,
    K_FAOLMO,
    K_GEMMA2,
    K_GEMMA3,
    K_PHI3,
    K_SMOLLM3,
    K_OLMOE,
    K_QWEN2MOE,
    K_QWEN3MOE,
    K_MIXTRAL,
    K_GEMMA3_MM, // the outer object of a multimodal Gemma-3 (its text_config is a gemma3_text): last
    AHA_N_KINDS
};
typedef struct {
    const char *model_type; // config.json's, NULL: no HF form
    const char *gguf;       // GGUF's general.architecture, NULL: llama.cpp writes it as another
    aha_arch arch;
    int aha;          // 1: q_proj carries the AHA router rows (faolmo)
    const char *what; // for the docs, NULL: the name says it
} aha_kind;
extern const aha_kind aha_kinds[AHA_N_KINDS];
// The kinds config.json names (every one) and those a GGUF names (with a
// gguf name in aha_kinds), as bit sets.
#define AHA_KINDS_JSON ((1u << AHA_N_KINDS) - 1)
#define AHA_KINDS_GGUF (AHA_KINDS_JSON & ~(1u << K_MISTRAL | 1u << K_FAOLMO | 1u << K_MIXTRAL | 1u << K_GEMMA3_MM))

// The rows.
extern const cfg_row aha_json_rows[];
extern const int aha_n_json_rows;
extern const cfg_row aha_gguf_rows[];
extern const int aha_n_gguf_rows;

// The row of rows[0..n) named name for a model of type bit `type`
// ("x.*" rows match every name under x.), NULL when none.
const cfg_row *aha_cfg_row(const cfg_row *rows, int n, const char *name, unsigned type);
// Whether text (as JSON prints a value) is one of only's '|'-separated values.
int aha_cfg_only(const char *only, const char *text);

// The names of the kinds in mask, ", "-separated (model_type, or the GGUF
// name when gguf), into buf: the "supported" lists of messages and docs.
void aha_kind_names(unsigned mask, int gguf, char *buf, size_t n);
// The HF config classes' layer rule when no layer_types is given: Gemma-3
// makes every pattern-th layer global, Gemma-2 the odd ones.
int aha_gemma_layer_local(aha_arch a, int l, int pattern);
// What every Gemma-2/3 does, whatever the file says: GeGLU, (1 + w) norms,
// embeddings times sqrt(hidden).
void aha_config_gemma(aha_config *c);
