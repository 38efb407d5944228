// Pieces: the part file each append writes (store_piece.c).
#pragma once
#include "store_parts.h"

// Record r as a new piece at tmp: [a, T) read back from the last part (the
// unfinished chunk), then r; *n_back: the records it takes back from the
// last part (those that end past a).
int store_write_piece(trace_store *s, const trace_store_rec *r, int64_t a, const char *tmp, int64_t *n_back);
