#include "sampler.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"

int aha_sampler_init(aha_sampler *s, int vocab, float temperature, float top_p, uint64_t seed) {
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_p = top_p;
    s->rng = seed * 0x9E3779B97F4A7C15ull + 1; // never 0
    s->idx = aha_malloc((size_t)vocab, sizeof(int), "sampler");
    s->prob = aha_malloc((size_t)vocab, sizeof(float), "sampler");
    if (!s->idx || !s->prob) {
        aha_sampler_free(s);
        return -1;
    }
    return 0;
}

void aha_sampler_free(aha_sampler *s) {
    free(s->idx);
    free(s->prob);
    s->idx = NULL;
    s->prob = NULL;
}

int32_t aha_argmax(const float *x, int n) {
    int best = 0; // first index wins ties, as torch.argmax does
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static float rng_uniform(uint64_t *st) { // xorshift64*, 24 high bits -> [0, 1)
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return (float)((*st * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
}

static const float *cmp_prob;
static int by_prob_desc(const void *a, const void *b) {
    float pa = cmp_prob[*(const int *)a], pb = cmp_prob[*(const int *)b];
    return (pa < pb) - (pa > pb);
}

int32_t aha_sample(aha_sampler *s, const float *logits) {
    if (s->temperature <= 0) return aha_argmax(logits, s->vocab);
    float mx = logits[aha_argmax(logits, s->vocab)];
    double sum = 0;
    for (int i = 0; i < s->vocab; i++) sum += s->prob[i] = expf((logits[i] - mx) / s->temperature);
    int n = 0;
    // Nucleus: keep the most probable tokens up to top_p of the mass. Sorting
    // only candidates above a small cut keeps this cheap for big vocabularies.
    float cut = s->top_p < 1 ? (float)((1 - s->top_p) / (s->vocab - 1) * sum) : 0;
    for (int i = 0; i < s->vocab; i++)
        if (s->prob[i] >= cut) s->idx[n++] = i;
    cmp_prob = s->prob;
    qsort(s->idx, (size_t)n, sizeof(int), by_prob_desc);
    double kept = 0;
    int k = 0;
    while (k < n && (k == 0 || kept < s->top_p * sum)) kept += s->prob[s->idx[k++]];
    double r = rng_uniform(&s->rng) * kept, acc = 0;
    for (int i = 0; i < k; i++) {
        acc += s->prob[s->idx[i]];
        if (r < acc) return s->idx[i];
    }
    return s->idx[k - 1];
}
