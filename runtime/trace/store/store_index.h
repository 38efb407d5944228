// The index, the final file and the commit (store_index.c).
#pragma once
#include "store_parts.h"

// A new index (final: the final file) at tmp: the caller's header, then the
// columns (virtual datasets over the parts; final: their data).
int store_write_index(trace_store *s, const char *tmp, int final);
// Publish a new index over the parts.
int store_commit(trace_store *s);
