// Inside datasets/: the benchmark records -> prompt text templates documented
// in dataset.h. They write into an aha_buf; the reader checks its `failed`.
#pragma once
#include <cjson/cJSON.h>

#include "buf.h"
#include "ds_format.h"

// The format a JSON record looks like (see "AUTO" in dataset.h).
aha_ds_format aha_prompt_sniff(const cJSON *rec);
// Append the document text of one record of format f (a JSON format) to out.
// 0, or -1 with the problem (no location) in aha_errmsg().
int aha_prompt_json(aha_buf *out, aha_ds_format f, const cJSON *rec, const char *text_field);
// The same for one MMLU CSV record: col = question, A, B, C, D, answer.
int aha_prompt_mmlu(aha_buf *out, const char *const col[6]);
