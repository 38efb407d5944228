#include "ds_format.h"

static const char *const format_names[AHA_DS_N_FORMATS] = {
    "auto", "text", "jsonl", "gsm8k", "mbpp", "hellaswag", "mmlu", "csqa", "multinews", "tokens"};
const aha_enum aha_ds_formats = AHA_ENUM(format_names);

const char *aha_ds_format_name(aha_ds_format f) { return aha_enum_name(&aha_ds_formats, (int)f); }
