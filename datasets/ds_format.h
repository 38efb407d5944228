// Inside datasets/ and for its callers: the dataset formats (dataset.h says
// what each reads) and their names. Both the readers (dataset.c) and the
// prompt templates (prompt.c) use them, so they sit below both.
#pragma once

#include "flags.h"

typedef enum {
    AHA_DS_AUTO, AHA_DS_TEXT, AHA_DS_JSONL, AHA_DS_GSM8K, AHA_DS_MBPP, AHA_DS_HELLASWAG,
    AHA_DS_MMLU, AHA_DS_CSQA, AHA_DS_MULTINEWS, AHA_DS_TOKENS
} aha_ds_format;
#define AHA_DS_N_FORMATS (AHA_DS_TOKENS + 1) // how many formats there are

// The formats' names as the CLI spells them ("auto", "text", "jsonl", "gsm8k",
// "mbpp", "hellaswag", "mmlu", "csqa", "multinews", "tokens"), in the order
// of aha_ds_format: --data-format's values, the trace's dataset_format and
// dataset_read_as.
extern const aha_enum aha_ds_formats;
const char *aha_ds_format_name(aha_ds_format f);
