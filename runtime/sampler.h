// Next-token choice: greedy (temperature 0) or seeded temperature/top-p sampling.
#pragma once
#include <stdint.h>

typedef struct {
    float temperature; // 0 = greedy argmax
    float top_p;       // nucleus mass in (0, 1]; 1 = off
    uint64_t rng;      // xorshift64* state, never 0
    int *idx;          // [vocab] sort scratch
    float *prob;       // [vocab] probabilities scratch
    int vocab;
} aha_sampler;

int aha_sampler_init(aha_sampler *s, int vocab, float temperature, float top_p, uint64_t seed);
void aha_sampler_free(aha_sampler *s);
int32_t aha_sample(aha_sampler *s, const float *logits);
int32_t aha_argmax(const float *x, int n);
