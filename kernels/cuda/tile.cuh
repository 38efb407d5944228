// The tile set-up the flash-attention variants share (attention_routed.cu v1,
// dev/attention_tc.cu v2, attention_mma.cu v3): which queries a block owns, their
// rows in shared memory, the key ranges the tile must visit, and (with the
// dependency pass) how a score is made from a dot product.
#pragma once

// The queries of block blockIdx.x of head h in list `kind` (0: global list or
// full attention, 1: local list): the latest slices of the causal list come
// first (they are the heaviest). Fills qidx[QB] (-1 past the end) and returns
// how many there are; 0 when this block has none. All threads must call it.
template <int QB, bool ROUTED>
__device__ __forceinline__ int tile_queries(int *qidx, int h, int kind, int H, int n,
                                            const int *idx, const int *count) {
    const int cnt = ROUTED ? count[h * 2 + kind] : n;
    const int nslices = (cnt + QB - 1) / QB;
    if ((int)blockIdx.x >= nslices) return 0;
    const int slice = kind == 0 ? nslices - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int q0 = slice * QB, nq = min(QB, cnt - q0);
    const int *list = ROUTED ? idx + ((long)kind * H + h) * n + q0 : nullptr;
    if ((int)threadIdx.x < QB) {
        const int t = threadIdx.x;
        qidx[t] = t < nq ? (ROUTED ? list[t] : q0 + t) : -1;
    }
    __syncthreads();
    return nq;
}

// The tile's query rows into Qs[QB][ld] (zeros past the end).
template <int D, int QB>
__device__ __forceinline__ void tile_load_q(float *Qs, int ld, const int *qidx, const float *qh,
                                            int q_stride) {
    for (int e = threadIdx.x; e < QB * D; e += blockDim.x) {
        const int r = e / D, d = e % D;
        Qs[r * ld + d] = qidx[r] >= 0 ? qh[(long)qidx[r] * q_stride + d] : 0.0f;
    }
}

// The mask of every variant: key is visible to the query at position pos
// (< 0: an empty slot) of list kind if causal and, for the local list, in
// the window (key > pos - window) or a sink (key < sinks).
__device__ __forceinline__ bool tile_visible(int key, int pos, int kind, int window, int sinks) {
    return pos >= 0 && key <= pos && (kind == 0 || key > pos - window || key < sinks);
}

// Key ranges of a tile whose queries sit at positions p_first..p_last:
// r[0..1) the sinks before the band, then r[2..3) the band (all keys 0..p_last
// for the global list).
__device__ __forceinline__ void tile_key_ranges(int kind, int p_first, int p_last, int window,
                                                int sinks, int r[4]) {
    r[0] = 0, r[1] = 0, r[2] = 0, r[3] = p_last + 1;
    if (kind == 1) {
        const int band_lo = max(0, p_first - window + 1);
        r[1] = min(sinks, band_lo);
        r[2] = band_lo;
    }
}

// A key's score from its dot product with the query, as aha_attention makes
// it: scaled (aha_attn_scale), then, with a softcap (gemma2), cap * tanh(s /
// cap). Every kernel and the dependency pass score alike, so the row
// statistics of one pass fit the probabilities another recomputes.
__device__ __forceinline__ float tile_score(float dot, float scale, float softcap) {
    const float s = dot * scale;
    return softcap > 0.0f ? softcap * tanhf(s / softcap) : s;
}

// The list a block of a plain (unrouted) call walks: the global one, or,
// on a natively local layer (window > 0, no sinks), the local one.
__device__ __forceinline__ int tile_kind(bool routed, int window) {
    return routed ? (int)blockIdx.z : window > 0;
}

// 0 with one aha_err line when a kernel cannot run shape s: a KV cache laid
// out by head (kv_head_stride; the CPU's layout), a native window on a routed
// call (forward.c runs a natively local layer unrouted), or, for a kernel
// without them (gemma = 0: variant 2), a score scale, softcap or window.
static inline int tile_shape_ok(const aha_attn_shape *s, int routed, int gemma, const char *who) {
    const char *why = s->kv_head_stride && s->kv_head_stride != s->head_dim ? "a KV cache laid out by head"
                      : routed && s->window ? "a natively local layer (window) on a routed call"
                      : !gemma && (s->scale > 0 || s->softcap > 0 || s->window)
                          ? "a score scale, softcap or native window"
                          : NULL;
    if (why) aha_err("%s: %s is not supported", who, why);
    return !why;
}
