// Inside datasets/: the benchmark records -> prompt text templates documented
// in dataset.h, and the growable string they are written into.
#pragma once
#include <cjson/cJSON.h>
#include <stddef.h>

#include "dataset.h"

typedef struct {
    char *p;    // [cap] bytes, p[len] == '\0' once anything was added
    size_t len; // bytes used, excluding the NUL
    size_t cap; // bytes allocated
    int failed; // an allocation failed; sticky until aha_text_clear
} aha_text;

void aha_text_add(aha_text *t, const char *s, size_t n);
// Append each NUL-terminated string up to the NULL that ends the list.
void aha_text_cat(aha_text *t, ...) __attribute__((sentinel));
void aha_text_clear(aha_text *t); // empty, keeps the allocation
void aha_text_free(aha_text *t);

// The format a JSON record looks like (see "AUTO" in dataset.h).
aha_ds_format aha_prompt_sniff(const cJSON *rec);
// Append the document text of one record of format f (a JSON format) to out.
// 0, or -1 with the problem (no location) in aha_errmsg().
int aha_prompt_json(aha_text *out, aha_ds_format f, const cJSON *rec, const char *text_field);
// The same for one MMLU CSV record: col = question, A, B, C, D, answer.
int aha_prompt_mmlu(aha_text *out, const char *const col[6]);
