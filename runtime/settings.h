// A run of a model over a dataset (aha record, aha sweep, aha fit): the
// settings that decide its numbers, held in one struct and parsed once from
// one flag table per group; what a trace records of them; how the dataset's
// documents become token ids.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "flags.h"
#include "model.h"
#include "trace_schema.h"

#define AHA_RUN_CTX 2048 // the default context: the model's, at most this

typedef struct {
    const char *model, *data; // MODEL and DATA, as given
    aha_ds_format format;     // --data-format: how DATA is read
    const char *text_field;   // --text-field: JSONL's field with the text (NULL: "text")
    int max_docs;             // documents of DATA read; 0: all
    int max_tokens;           // tokens used, over every shard (fit: training and held out); 0: all
    int ctx;                  // tokens per context (longer documents are split); 0: the model's
                              // trained context, at most AHA_RUN_CTX (aha_settings_resolve)
    int batch;                // tokens per forward call
    int sinks;                // always-visible first tokens
    int seed;                 // record: random:P routing; fit: the document split
    aha_weights weights;      // --weights: how the model holds its matrices
} aha_run_settings;

// The defaults, as the usage text shows them.
#define AHA_RUN_SETTINGS_DEFAULT ((aha_run_settings){.format = AHA_DS_AUTO, .batch = 256, .weights = AHA_WEIGHTS_STORED})

// The flags of the settings s, one table per group, composed by each command
// into its own (flags.h; --seed's meaning is each command's own row).
// The dataset: how it is read and how much of it.
#define AHA_DATA_FLAGS(s)                                                                                       \
    AHA_FLAG_ENUM("--data-format", (s).format, aha_ds_formats,                                                  \
                  "how DATA is read (docs/datasets.md); auto: by each file's name and first record"),          \
    AHA_FLAG_ALIAS("--format", "--data-format"),                                                                \
    {"--text-field", FLAG_STR, &(s).text_field,                                                                \
     "JSONL field with the text; unset: \"text\", and --data-format auto reads the record's shape", NULL},     \
    {"--max-docs", FLAG_INT, &(s).max_docs, "documents to read; 0 = all", ">= 0"},                               \
    {"--max-tokens", FLAG_INT, &(s).max_tokens, "tokens to read from DATA, every shard's and (fit) both splits' together; " \
                                                "0 = all", ">= 0"}
// The contexts: how documents are cut and run, and the sinks every one keeps.
#define AHA_CONTEXT_FLAGS(s)                                                                                    \
    {"--ctx", FLAG_INT, &(s).ctx, "tokens per context, longer documents are split; 0 = the model's trained "     \
                                  "context, at most " TRACE_STR(AHA_RUN_CTX), ">= 0"},                          \
    {"--batch", FLAG_INT, &(s).batch, "tokens per forward call", ">= 1"},                                        \
    {"--sinks", FLAG_INT, &(s).sinks, "always-visible first tokens (never out of the window)", ">= 0"}

// The settings against the loaded model: *ctx the context they run (--ctx,
// or the model's, at most AHA_RUN_CTX), --sinks checked against it. 0 or -1.
int aha_settings_resolve(const aha_run_settings *s, const aha_model *m, int *ctx);
// What a trace records of s, run at context ctx, into m: model_path,
// dataset, dataset_format, text_field, max_docs, max_tokens, ctx, batch,
// sinks, seed, weights.
void aha_settings_meta(const aha_run_settings *s, int ctx, aha_trace_meta *m);

// Text as the model reads it: its ids, with BOS first when the tokenizer
// asks for one. *ids [*n] owned by the caller. 0 or -1.
int aha_text_ids(const aha_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n);
// One document's ids: a token file's (each checked against the vocabulary),
// or its text's (aha_text_ids). *ids [*n] owned by the caller. 0 or -1 with
// an error naming the document.
int aha_doc_ids(const aha_model *m, const aha_doc *doc, int32_t **ids, size_t *n);
