// Blocks, the final file's columns, and compaction (store_block.c).
#pragma once
#include "store_parts.h"

// Fill f (called fpath in messages) with [b0, b1) along T of every column and
// the per-record values of the records that end there, copied from the parts
// (final: the final file, its last chunks compressed, every column
// described); *taken (not NULL): values taken from a part that extends past
// b1 (that part keeps the rest).
int store_write_range(trace_store *s, hid_t f, const char *fpath, int64_t b0, int64_t b1, int final,
                      int64_t *taken);
// Merge full chunks and blocks into larger blocks.
int store_compact(trace_store *s);
