// A model's weights on the device (aha_gpu_model): every matrix and the
// embedding table as the file stores them (their bytes copied as they are;
// products decode them a tile at a time, kernels/cuda/weight.cu), norms,
// biases and RoPE tables in f32. Also the device queries the CLI and
// provenance use.
#include <stdio.h>
#include <string.h>

#include "gpu_impl.cuh"

// Values of the decode tile at most (32 MiB in f32): each product decodes
// its matrix in tiles of whole rows this size, or one row where a row is longer.
#define AHA_GPU_TILE (1L << 23)

extern "C" int aha_gpu_available(char *why, size_t why_len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (count == 0) {
        snprintf(why, why_len, "cudaGetDeviceCount returned 0");
        return 0;
    }
    snprintf(why, why_len, "%d device(s)", count);
    return 1;
}

extern "C" int aha_gpu_describe(char *buf, size_t len) {
    cudaDeviceProp p;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        snprintf(buf, len, "unknown CUDA device");
        return -1;
    }
    snprintf(buf, len, "%s (sm_%d%d, %d SMs, %.0f GiB)", p.name, p.major, p.minor,
             p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
    return 0;
}

// bytes of host memory into a new device allocation of w; NULL with one line.
static void *copy_up(aha_gpu_model *w, const void *h, size_t bytes) {
    void *d = dev_alloc(&w->mem, bytes);
    if (!d) return NULL;
    cudaError_t e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        aha_err("cannot copy %zu bytes to the device (%s)", bytes, cudaGetErrorString(e));
        return NULL;
    }
    w->resident += bytes;
    return d;
}

// n host floats on the device (NULL stays NULL).
static const float *upload(aha_gpu_model *w, const float *h, size_t n) {
    return h ? (const float *)copy_up(w, h, n * sizeof(float)) : NULL;
}

// A matrix's stored bytes on the device, as they are (d: the same handle,
// device data); its type joins w->types, and the tile grows to what its
// products need. 0, or -1 when an allocation or copy failed.
static int upload_w(aha_gpu_model *w, const aha_weight *h, aha_weight *d) {
    void *p = copy_up(w, h->data, aha_weight_bytes(h));
    if (!p) return -1;
    *d = *h;
    d->data = p;
    w->types |= 1u << h->type;
    const long cap = AHA_GPU_TILE > h->cols ? AHA_GPU_TILE : h->cols, need = aha_mm_tile_elems(h, gpu_op(w->dt), cap);
    w->tile_elems = need > w->tile_elems ? need : w->tile_elems;
    return 0;
}

extern "C" void aha_gpu_model_free(aha_gpu_model *w) {
    if (!w) return;
    if (w->st) cudaStreamSynchronize(w->st);
    dev_free_all(&w->mem);
    if (w->blas) cublasDestroy(w->blas);
    if (w->st) cudaStreamDestroy(w->st);
    free(w->layers);
    free(w);
}

extern "C" size_t aha_gpu_model_resident(const aha_gpu_model *w, size_t *tile, char *types, size_t len) {
    *tile = (size_t)w->tile_elems * (w->dt == AHA_GPU_F32 ? 4 : 2);
    types[0] = '\0';
    for (int t = 0; t < AHA_DTYPE_COUNT; t++) // in the table's order, as the model's own summary
        if (w->types >> t & 1)
            snprintf(types + strlen(types), len - strlen(types), "%s%s", types[0] ? "+" : "", aha_dtype_name((aha_dtype)t));
    return w->resident;
}

// What the CPU forward pass runs that this one does not: the model is
// refused, naming each, before any device is looked for, rather than run
// wrong. Empty when the CUDA path runs the model as the CPU does (every
// architecture the CPU loads, at the head dims the attention kernels are
// built for); a feature a future architecture adds goes here first.
static void cuda_missing(const aha_model *m, char *buf, size_t len) {
    const aha_config *c = &m->cfg;
    char dims[96];
    snprintf(dims, sizeof dims, "attention kernels for head_dim %d (64, 96, 128, 256)", c->head_dim);
    const struct { int lacks; const char *what; } f[] = {
        {!aha_attention_cuda_supports(c->head_dim), dims},
        {c->n_experts > 0, "mixture-of-experts MLP blocks"},
    };
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].lacks) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", f[i].what);
}

// The layer's weights; its RoPE table is the model's global or local one
// (none on a NoPE layer; the long one beside it with longrope).
static int upload_layer(aha_gpu_model *w, int l) {
    const aha_model *m = w->m;
    const aha_config *c = &m->cfg;
    const aha_layer *s = &m->layers[l];
    dev_layer *d = &w->layers[l];
    const size_t H = c->n_heads, D = c->head_dim, hd = H * D, kvd = (size_t)c->n_kv_heads * D, dim = c->dim;
    if (upload_w(w, &s->wq, &d->wq) || upload_w(w, &s->wk, &d->wk) || upload_w(w, &s->wv, &d->wv) ||
        upload_w(w, &s->wo, &d->wo) || upload_w(w, &s->w_gate, &d->w_gate) || upload_w(w, &s->w_up, &d->w_up) ||
        upload_w(w, &s->w_down, &d->w_down))
        return -1;
    const int full = c->qk_norm == AHA_QK_NORM_FULL;
    const size_t qn = full ? hd : D, kn = full ? kvd : D;
    d->attn_norm = upload(w, s->attn_norm, dim);
    d->bq = upload(w, s->bq, hd);
    d->br = upload(w, s->br, H);
    d->bk = upload(w, s->bk, kvd);
    d->bv = upload(w, s->bv, kvd);
    d->q_norm = upload(w, s->q_norm, qn);
    d->k_norm = upload(w, s->k_norm, kn);
    d->post_attn_norm = upload(w, s->post_attn_norm, dim);
    d->ffn_norm = upload(w, s->ffn_norm, dim);
    d->post_ffn_norm = upload(w, s->post_ffn_norm, dim);
    d->inv_freq = !s->inv_freq ? NULL : s->inv_freq == m->inv_freq_local ? w->inv_freq_local : w->inv_freq;
    d->inv_freq_long = s->inv_freq_long ? w->inv_freq_long : NULL;
    const float *h[] = {s->attn_norm, s->bq, s->br, s->bk, s->bv, s->q_norm, s->k_norm, s->post_attn_norm,
                        s->ffn_norm, s->post_ffn_norm},
                *dv[] = {d->attn_norm, d->bq, d->br, d->bk, d->bv, d->q_norm, d->k_norm, d->post_attn_norm,
                         d->ffn_norm, d->post_ffn_norm};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        if (h[i] && !dv[i]) return -1;
    return 0;
}

extern "C" aha_gpu_model *aha_gpu_model_init(const aha_model *m, aha_gpu_dtype dt) {
    const aha_config *c = &m->cfg;
    char why[160], missing[256];
    cuda_missing(m, missing, sizeof missing);
    if (missing[0]) {
        aha_err("--device cuda: the CUDA backend lacks %s, which this model needs; use --device cpu", missing);
        return NULL;
    }
    if (!aha_gpu_available(why, sizeof why)) {
        aha_err("--device cuda: no CUDA device (%s)", why);
        return NULL;
    }
    aha_gpu_model *w = (aha_gpu_model *)calloc(1, sizeof *w);
    if (!w) return NULL;
    w->m = m;
    w->dt = dt;
    if (cudaStreamCreate(&w->st) != cudaSuccess || cublasCreate(&w->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(w->blas, w->st) != CUBLAS_STATUS_SUCCESS) {
        aha_err("--device cuda: cannot create a stream / cuBLAS handle");
        aha_gpu_model_free(w);
        return NULL;
    }
    w->mem.st = w->st; // dev_alloc's zero fill on the model's stream
    const size_t D = c->head_dim;
    w->inv_freq = upload(w, m->inv_freq, D / 2);
    w->inv_freq_local = upload(w, m->inv_freq_local, D / 2);
    w->inv_freq_long = upload(w, m->inv_freq_long, D / 2);
    w->out_norm = upload(w, m->out_norm, c->dim);
    w->layers = (dev_layer *)aha_calloc(c->n_layers, sizeof(dev_layer), "device layers");
    int ok = w->inv_freq && (w->inv_freq_local || !m->inv_freq_local) && (w->inv_freq_long || !m->inv_freq_long) &&
             w->out_norm && w->layers && upload_w(w, &m->tok_emb, &w->tok_emb) == 0;
    if (ok && m->lm_head.data == m->tok_emb.data) { // tied: the same bytes
        w->lm_head = w->tok_emb;
    } else {
        ok = ok && upload_w(w, &m->lm_head, &w->lm_head) == 0;
    }
    for (int l = 0; ok && l < c->n_layers; l++) ok = upload_layer(w, l) == 0;
    if (ok && w->tile_elems) ok = (w->tile = dev_alloc(&w->mem, (size_t)w->tile_elems * (dt == AHA_GPU_F32 ? 4 : 2))) != NULL;
    if (!ok) {
        char lower[512]; // the lower layer's message (aha_err must not read its own buffer)
        snprintf(lower, sizeof lower, "%s", aha_errmsg());
        (void)cudaGetLastError(); // the runtime recorded the failed allocation: not the next launch check's error
        aha_err("--device cuda: cannot upload the model (%s)", lower);
        aha_gpu_model_free(w);
        return NULL;
    }
    return w;
}
