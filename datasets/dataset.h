// Datasets: turn files into documents for `aha record`. A dataset is a file or
// a folder; documents come out one at a time, so memory is bounded by the
// largest document, never by the dataset.
//
// Formats (AHA_DS_AUTO picks one per file, see below):
//   text       the whole file is one document (UTF-8; a file with a NUL byte
//              is binary and refused).
//   jsonl      one JSON object per line; the document is the string in
//              opts.text_field (default "text"). Blank lines are ignored.
//   gsm8k      {"question","answer"} ->
//                "Question: {question}\nAnswer: {answer}"
//   mbpp       {"text","code","test_list":[...]} ->
//                "You are an expert Python programmer, and here is your task:
//                 {text} Your code should pass these tests:\n\n{test_list[0]}\n
//                 ...{test_list[n-1]}\n[BEGIN]\n{code}\n[DONE]"
//   hellaswag  {"activity_label"?, "ctx_a","ctx_b" | "ctx", "endings":[...],
//              "label"} -> "{query} {ending}" with, as lm-eval-harness does,
//                ctx   = ctx_a + " " + capitalize(ctx_b)   (else "ctx")
//                query = preprocess(activity_label + ": " + ctx)
//                        (no "activity_label": preprocess(ctx))
//                ending = preprocess(endings[label])       (label: 0 or "0")
//              preprocess: strip; " [title]" -> ". "; drop "[...]" groups;
//              "  " -> " ". capitalize is ASCII-only.
//   mmlu       CSV without a header, 6 columns question,A,B,C,D,answer
//              (RFC 4180 quoting, fields may span lines) ->
//                "{question stripped}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}"
//   csqa       CommonsenseQA {"question":{"stem","choices":[{"label","text"}]},
//              "answerKey"} ->
//                "Question: {stem stripped}\n{label}. {text}\n...\nAnswer: {answerKey}"
//   multinews  {"document","summary"}, articles separated by "|||||" and
//              newlines possibly written "NEWLINE_CHAR" ->
//                "{article 1}\n\n{article 2}...\n\nSummary: {summary}"
//              (articles and summary stripped, empty articles dropped)
//   tokens     pre-tokenized documents, little-endian:
//                "AHATOK01" (8 bytes), u64 n_docs, then n_docs times
//                { u32 n, int32 ids[n] }; ids >= 0, nothing after the last.
//
// AUTO, per file: a file starting with "AHATOK01" or named *.tok -> tokens;
// *.jsonl / *.json -> JSON lines, the shape sniffed from the first record
// unless opts.text_field is set (test_list -> mbpp, endings -> hellaswag,
// answerKey -> csqa, document+summary -> multinews, question+answer -> gsm8k,
// else jsonl); *.csv -> mmlu; anything else -> text.
//
// A folder: every regular file below it, depth first, each folder's entries
// sorted by name (strcmp); names starting with '.' and symlinked folders are
// skipped. An explicit format applies to every file; AUTO decides per file. In
// a folder a binary text file is skipped with a note on stderr.
//
// Bad input (a line that is not JSON, a missing field or a field of the wrong
// type, invalid UTF-8, a \u0000 escape in a JSON string, a CSV record without 6 columns, an empty file or
// document, a truncated token file) is reported as "path:line: problem"
// ("path: document N: problem" in token files). With opts.skip_bad it goes
// to stderr as "aha: ... (skipped)" and reading goes on (after a truncated
// token file, with the next file); otherwise it is the error. Zero documents
// in all is always an error: "path: no documents".
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "ds_format.h"
#include "sha256.h"

typedef struct {
    aha_ds_format format;   // AHA_DS_AUTO: decided per file (see above)
    const char *text_field; // jsonl: the field holding the text; NULL = "text"
    int skip_bad;           // 1: report bad input on stderr and skip it; 0: fatal
    int64_t max_docs;       // stop after this many documents; 0 = all
    int quiet;              // skip_bad: skip without a line on stderr (another pass says it)
} aha_ds_opts;

// One document; its pointers stay valid until the next aha_ds_next or close.
typedef struct {
    const char *text;   // [len] UTF-8, NOT NUL-terminated; NULL for token files
    size_t len;
    const int32_t *ids; // [n_ids] token ids (token files), else NULL
    size_t n_ids;
    const char *name;   // where it came from: "path", "path:line", "path#doc"
    const char *source; // the same relative to the dataset's path (a folder's file: "sub/a.jsonl:3";
                        // a dataset that is one file: its name, "a.jsonl:3")
} aha_doc;

// The document's SHA-256 as the reader gives it: of its text's bytes, or of
// its token ids as little-endian int32. 0 or -1.
int aha_doc_sha256(const aha_doc *doc, char hex[AHA_SHA256_HEX]);
// The document's bytes copied into *keep (*cap bytes, grown as needed) and
// doc pointed at the copy: a file edited meanwhile (the reader maps it) then
// cannot change them between being hashed and being tokenized. 0 or -1.
int aha_doc_own(aha_doc *doc, void **keep, size_t *cap);

typedef struct {                 // a dataset's identity: aha_ds_fingerprint
    char sha256[AHA_SHA256_HEX]; // SHA-256 over its documents' digests (aha_doc_sha256, their 64 hex
                                 // characters each), in order
    int64_t n_docs;              // documents the reader gives
    int source_width;            // the longest doc->source, in bytes
    double bytes;                // their size: text bytes, 4 per token id (a progress bar's total)
    char *docs;                  // [n_docs * 64] each document's digest, its hex without a NUL, in
                                 // order (owned: aha_ds_print_free)
} aha_ds_print;

// Read the whole dataset at path with opts (bad input skipped silently under
// skip_bad) and fingerprint it. 0, or -1 with the reader's error.
int aha_ds_fingerprint(const char *path, const aha_ds_opts *opts, aha_ds_print *fp);
void aha_ds_print_free(aha_ds_print *fp);

typedef struct aha_dataset aha_dataset;

// Open a file or folder (opts may be NULL for the defaults). The first
// document is read here, so bad or empty input fails now, before any output
// exists. 0 or -1 with the error in aha_errmsg().
int aha_ds_open(aha_dataset **d, const char *path, const aha_ds_opts *opts);
// 1 with the next document in *doc, 0 at the end, -1 on an error.
int aha_ds_next(aha_dataset *d, aha_doc *doc);
void aha_ds_close(aha_dataset *d);
// What the documents read so far (the first is read by open) were read as,
// "+"-joined in the order of aha_ds_format: "gsm8k", "text+tokens"; with
// AHA_DS_AUTO, what was detected. Returns buf.
const char *aha_ds_read_as(const aha_dataset *d, char *buf, size_t size);
