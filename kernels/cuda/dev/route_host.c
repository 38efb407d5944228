// Host side of routed attention's bookkeeping: the index lists and FLOP
// counts the device computes, computed on the CPU (tests compare the two,
// and compare these with aha_attention_routed's own counts).
#include "aha_cuda_dev.h"

void aha_route_compact_host(const uint8_t *gate, int n, int H, int h, int *idx_g, int *ng,
                            int *idx_l, int *nl) {
    int g = 0, l = 0;
    for (int i = 0; i < n; i++) {
        if (gate[(long)i * H + h]) idx_g[g++] = i;
        else idx_l[l++] = i;
    }
    *ng = g;
    *nl = l;
}

void aha_route_flops_host(const uint8_t *gate, int n, int H, int D, int p0, int window,
                          int sinks, unsigned long long *executed, unsigned long long *full) {
    unsigned long long e = 0, f = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++) {
            e += (unsigned long long)aha_route_visible(p0 + i, gate[(long)i * H + h], window, sinks);
            f += (unsigned long long)(p0 + i + 1);
        }
    *executed += 4ull * D * e;
    *full += 4ull * D * f;
}
