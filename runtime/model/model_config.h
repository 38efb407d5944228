// Reading a model's configuration: HF config.json or GGUF metadata.
#pragma once
#include "gguf.h"
#include "model.h"

// Parse and validate config.json; 0 or -1 with "path: problem".
int aha_config_from_json(aha_config *c, const char *path);
// Parse and validate the GGUF's {arch}.* metadata.
int aha_config_from_gguf(aha_config *c, const aha_gguf *g);
// Sanity bounds shared by both paths (positive sizes, heads divide, limits).
int aha_config_check(const aha_config *c, const char *path);
// RoPE inverse frequencies [head_dim/2] for the config's base and scaling.
void aha_config_inv_freq(const aha_config *c, float *inv_freq);
// The same for the natively local layers' base (rope_local_theta), unscaled.
void aha_config_inv_freq_local(const aha_config *c, float *inv_freq);
// LongRoPE's long factors' frequencies (the short ones': aha_config_inv_freq).
void aha_config_inv_freq_long(const aha_config *c, float *inv_freq);
// YaRN's attention factor of a scaling factor (HF's get_mscale): 1 at factor
// <= 1, else 0.1 mscale ln(factor) + 1.
double aha_config_yarn_factor(double factor, double mscale);
