// IEEE half and bfloat16 <-> float32, bit-exact: the model loaders, the trace
// (float16 datasets) and the analysis share one pair of conversions.
#pragma once
#include <stdint.h>

// To float32: exact (NaN keeps its payload).
float aha_f16_to_f32(uint16_t h);
float aha_bf16_to_f32(uint16_t h);
// To IEEE half, rounded to nearest even, as numpy's astype(float16).
uint16_t aha_f32_to_f16(float f);
