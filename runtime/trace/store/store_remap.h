// Resume: the part list read back from an index (store_remap.c).
#pragma once
#include "store_parts.h"

// The part list of the index at s->path, from the mappings of its first
// column and the ends.
int store_remap(trace_store *s);
