#include "ds_format.h"

#include <string.h>

#include "err.h"

static const char *const format_names[AHA_DS_N_FORMATS] = {
    "auto", "text", "jsonl", "gsm8k", "mbpp", "hellaswag", "mmlu", "csqa", "multinews", "tokens"};

const char *aha_ds_format_name(aha_ds_format f) {
    return (unsigned)f < AHA_DS_N_FORMATS ? format_names[f] : "?";
}

int aha_ds_format_parse(const char *name, aha_ds_format *f) {
    for (int i = 0; i < AHA_DS_N_FORMATS; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            *f = (aha_ds_format)i;
            return 0;
        }
    }
    aha_err("unknown dataset format '%s' (auto, text, jsonl, gsm8k, mbpp, hellaswag, mmlu,"
            " csqa, multinews, tokens)", name);
    return -1;
}
