// bf16 x bf16 -> f32 products (matmul_bf16.h): oneDNN where the CPU has bf16
// dot products, bf16-rounded tiles through sgemm where it has not.
#include "matmul_bf16.h"

#include <cblas.h>
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "weight.h"

#define TILE_FLOATS (1 << 22) // weight rows widened per sgemm (16 MiB): few sgemm calls, amortised over n
#define CACHE_N 32          // primitives kept (shapes of one run: ~8 products x a few chunk lengths)
// Conversions run on one thread below this many elements: they cost ~1 ms per
// million, and an OpenMP barrier between two sgemm calls costs more than that
// when other processes share the cores.
#define PARALLEL_MIN (1 << 22)

typedef struct {
    int n, in, out;             // the shape; n = 0: free entry
    long used;                  // last call that used it (least recently used goes first)
    dnnl_primitive_t prim;      // matmul src[n, in] bf16 x wei[in, out] bf16 ("ba": w[out, in]) -> dst f32
    dnnl_memory_t src, wei, dst; // bound to the caller's buffers at each call
} cache_entry;

struct aha_mm_bf16 {
    aha_bf16_impl impl;         // ONEDNN or SGEMM (never AUTO once made)
    dnnl_engine_t eng;          // ONEDNN: the CPU engine and its stream
    dnnl_stream_t stream;
    cache_entry cache[CACHE_N];
    long calls;                 // calls so far (cache ages)
    int created;                // primitives created, all time
    aha_bf16 *xb;               // ONEDNN prefill: activations in bf16 [xb_cap]
    float *xr, *wt;             // SGEMM and decode: activations rounded to bf16 [xr_cap], widened
                                // weight tile [TILE_FLOATS]
    size_t xb_cap, xr_cap;      // elements xb / xr hold
    char desc[160];             // aha_mm_bf16_describe
};

void aha_bf16_from_f32_n(aha_bf16 *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = aha_bf16_from_f32(src[i]);
}

static cache_entry *primitive_for(aha_mm_bf16 *k, int n, int in, int out);

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

aha_mm_bf16 *aha_mm_bf16_init(aha_bf16_impl impl) {
    aha_mm_bf16 *k = aha_calloc(1, sizeof *k, "bf16 matmul");
    if (!k) return NULL;
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    // oneDNN 2.6's bf16 matmul runs native bf16 dot products from AVX512-BF16
    // on; avx512_core only emulates them, and below AVX512 (this AVX2 machine)
    // it has no bf16 matmul at all (primitive creation: unimplemented). The
    // ISA values nest: each holds the bits of those below it.
    const int native = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
    k->impl = impl != AHA_BF16_AUTO ? impl : native ? AHA_BF16_ONEDNN : AHA_BF16_SGEMM;
    if (k->impl == AHA_BF16_ONEDNN) {
        if (dnnl_engine_create(&k->eng, dnnl_cpu, 0) != dnnl_success ||
            dnnl_stream_create(&k->stream, k->eng, dnnl_stream_default_flags) != dnnl_success) {
            aha_err("oneDNN: cannot create a CPU engine for the bf16 products");
            aha_mm_bf16_free(k);
            return NULL;
        }
        // oneDNN 2.6 refuses bf16 matmul outright (unimplemented, not even its
        // reference kernel) on a CPU without AVX512: ask once, say so.
        if (!primitive_for(k, 1, 1, 1)) {
            aha_err("oneDNN %d.%d.%d has no bf16 matmul on this CPU (ISA %s)", dnnl_version()->major,
                    dnnl_version()->minor, dnnl_version()->patch, isa_name(isa));
            aha_mm_bf16_free(k);
            return impl == AHA_BF16_AUTO ? aha_mm_bf16_init(AHA_BF16_SGEMM) : NULL; // auto: the same numbers
        }
        k->created = 0;
        snprintf(k->desc, sizeof k->desc, "oneDNN bf16 matmul (ISA %s)", isa_name(isa));
    } else {
        snprintf(k->desc, sizeof k->desc, "sgemm on bf16-rounded tiles (oneDNN ISA %s%s)",
                 isa_name(isa), native ? "" : ": no bf16 kernels");
    }
    return k;
}

static void entry_free(cache_entry *e) {
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->src) dnnl_memory_destroy(e->src);
    if (e->wei) dnnl_memory_destroy(e->wei);
    if (e->dst) dnnl_memory_destroy(e->dst);
    memset(e, 0, sizeof *e);
}

void aha_mm_bf16_free(aha_mm_bf16 *k) {
    if (!k) return;
    for (int i = 0; i < CACHE_N; i++) entry_free(&k->cache[i]);
    if (k->stream) dnnl_stream_destroy(k->stream);
    if (k->eng) dnnl_engine_destroy(k->eng);
    free(k->xb), free(k->xr), free(k->wt);
    free(k);
}

const char *aha_mm_bf16_describe(const aha_mm_bf16 *k) { return k->desc; }
aha_bf16_impl aha_mm_bf16_impl_of(const aha_mm_bf16 *k) { return k->impl; }
int aha_mm_bf16_primitives(const aha_mm_bf16 *k) { return k->created; }

// The cached primitive of shape (n, in, out), created on first use; the least
// recently used entry makes room.
static cache_entry *primitive_for(aha_mm_bf16 *k, int n, int in, int out) {
    cache_entry *e = NULL, *lru = &k->cache[0];
    for (int i = 0; i < CACHE_N && !e; i++) {
        cache_entry *c = &k->cache[i];
        if (c->n == n && c->in == in && c->out == out) e = c;
        else if (c->used < lru->used) lru = c;
    }
    if (e) return e;
    entry_free(e = lru);
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&src_md, 2, (dnnl_dims_t){n, in}, dnnl_bf16, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wei_md, 2, (dnnl_dims_t){in, out}, dnnl_bf16, dnnl_ba);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&dst_md, 2, (dnnl_dims_t){n, out}, dnnl_f32, dnnl_ab);
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&md, &src_md, &wei_md, NULL, &dst_md);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &md, NULL, k->eng, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&e->prim, pd);
    if (st == dnnl_success) st = dnnl_memory_create(&e->src, &src_md, k->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->wei, &wei_md, k->eng, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = dnnl_memory_create(&e->dst, &dst_md, k->eng, DNNL_MEMORY_NONE);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) {
        aha_err("oneDNN: no bf16 matmul for [%d x %d] x [%d x %d] (status %d)", n, in, in, out, (int)st);
        entry_free(e);
        return NULL;
    }
    e->n = n, e->in = in, e->out = out;
    k->created++;
    return e;
}

static int run_onednn(aha_mm_bf16 *k, float *y, const float *x, const aha_bf16 *w, int n, int in, int out) {
    aha_bf16_from_f32_n(k->xb, x, (size_t)n * in);
    cache_entry *e = primitive_for(k, n, in, out);
    if (!e) return -1;
    e->used = k->calls;
    dnnl_memory_set_data_handle(e->src, k->xb);
    dnnl_memory_set_data_handle(e->wei, (void *)w);
    dnnl_memory_set_data_handle(e->dst, y);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst}};
    if (dnnl_primitive_execute(e->prim, k->stream, 3, args) != dnnl_success ||
        dnnl_stream_wait(k->stream) != dnnl_success) {
        aha_err("oneDNN: bf16 matmul [%d x %d] x [%d x %d] failed", n, in, in, out);
        return -1;
    }
    return 0;
}

// The same numbers through sgemm: x rounded to bf16 (kept in f32) and the
// weight widened to f32 (exactly) a tile of rows at a time, so every product
// is a bf16 x bf16 product, exact in f32, summed in f32 like oneDNN's.
// Prefill: big tiles, each one threaded sgemm (weight.h's 64-row tiles with a
// sgemm per thread measured 1.3-1.5x slower on these shapes); decode (either
// impl): weight.h's dots over the bf16 rows in place, where oneDNN's matmul of
// one row ran 2.5x slower.
static int run_sgemm(aha_mm_bf16 *k, float *y, const float *x, const aha_weight *w, int n) {
    const int in = w->cols, out = w->rows;
    const size_t nx = (size_t)n * in;
#pragma omp parallel for schedule(static) if (nx > PARALLEL_MIN)
    for (size_t i = 0; i < nx; i++) k->xr[i] = aha_bf16_to_f32(aha_bf16_from_f32(x[i]));
    if (n <= AHA_WEIGHT_FUSED_MAX) {
        aha_matmul_w(y, k->xr, w, NULL, n);
        return 0;
    }
    if (!k->wt && !(k->wt = aha_malloc(TILE_FLOATS > in ? TILE_FLOATS : in, sizeof *k->wt, "bf16 weight tile")))
        return -1;
    const int rows = TILE_FLOATS / in > 0 ? TILE_FLOATS / in : 1;
    for (int o0 = 0; o0 < out; o0 += rows) {
        const int r = out - o0 < rows ? out - o0 : rows;
        const size_t nw = (size_t)r * in;
        const aha_bf16 *src = (const aha_bf16 *)w->data + (size_t)o0 * in;
#pragma omp parallel for schedule(static) if (nw > PARALLEL_MIN)
        for (size_t i = 0; i < nw; i++) k->wt[i] = aha_bf16_to_f32(src[i]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, r, in, 1.0f, k->xr, in, k->wt, in,
                    0.0f, y + o0, out);
    }
    return 0;
}

static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return 0;
    free(*p);
    *cap = 0;
    if (!(*p = aha_malloc(n, size, "bf16 activations"))) return -1;
    *cap = n;
    return 0;
}

int aha_mm_bf16_run(aha_mm_bf16 *k, float *y, const float *x, const aha_weight *w, const float *bias,
                    int n) {
    const int in = w->cols, out = w->rows;
    if (n < 1 || in < 1 || out < 1) {
        aha_err("bf16 matmul: empty shape [%d x %d] x [%d x %d]", n, in, in, out);
        return -1;
    }
    if (w->type != AHA_BF16) {
        aha_err("bf16 matmul: the weight [%d x %d] is %s, not bf16", out, in, aha_dtype_name(w->type));
        return -1;
    }
    const size_t nx = (size_t)n * in;
    const int sg = k->impl == AHA_BF16_SGEMM || n <= AHA_WEIGHT_FUSED_MAX;
    // activations grow to the largest chunk seen, then stay
    if (sg ? grow((void **)&k->xr, &k->xr_cap, nx, sizeof *k->xr)
           : grow((void **)&k->xb, &k->xb_cap, nx, sizeof *k->xb))
        return -1;
    k->calls++;
    if (sg ? run_sgemm(k, y, x, w, n) != 0 : run_onednn(k, y, x, w->data, n, in, out) != 0) return -1;
    for (int t = 0; bias && t < n; t++) // bias in f32 after the product, either impl
        for (int i = 0; i < out; i++) y[(size_t)t * out + i] += bias[i];
    return 0;
}
