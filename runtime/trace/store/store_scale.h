// The final file's dimension scales (store_scale.c).
#pragma once
#include "store_parts.h"

// In final file f, whose columns are written: the axes' index datasets
// (s->axis), then every column's axes attached to the datasets its
// descriptor names (each made a dimension scale first if it is not one).
int store_scales(const trace_store *s, hid_t f);
