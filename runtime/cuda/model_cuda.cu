// A model's weights on the device (aha_gpu_model): projections and the LM
// head in f32, f16 or bf16; norms, biases and the embedding table in f32.
// Also the device queries the CLI and provenance use.
#include <stdio.h>
#include <string.h>

#include "gpu_impl.cuh"
extern "C" {
#include "weight.h"
}

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

// A host float32 tensor on the device as dtype (NULL stays NULL); 16-bit
// types go through the device staging buffer stage (64M floats) and convert.
static const void *upload(aha_gpu_model *w, const float *h, size_t n, aha_gpu_dtype dt, float *stage) {
    if (!h) return NULL;
    const size_t es = dt == AHA_GPU_F32 ? 4 : 2;
    void *d = dev_alloc(&w->mem, n * es);
    if (!d) return NULL;
    if (dt == AHA_GPU_F32) return cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice) == cudaSuccess ? d : NULL;
    const size_t slice = (size_t)1 << 26;
    for (size_t off = 0; off < n; off += slice) {
        size_t c = n - off < slice ? n - off : slice;
        if (cudaMemcpy(stage, h + off, c * 4, cudaMemcpyHostToDevice) != cudaSuccess) return NULL;
        int rc = aha_f32_to_half_cuda((char *)d + off * 2, (long)c, stage, (long)c, 1, (long)c,
                                      dt == AHA_GPU_BF16, w->st);
        if (rc != 0 || cudaStreamSynchronize(w->st) != cudaSuccess) return NULL;
    }
    return d;
}

// A weight matrix in its stored type: decoded to f32 on the host (f32 as it
// is), then uploaded as dtype.
static const void *upload_w(aha_gpu_model *w, const aha_weight *h, aha_gpu_dtype dt, float *stage) {
    const size_t n = (size_t)h->rows * h->cols;
    if (h->type == AHA_F32) return upload(w, (const float *)h->data, n, dt, stage);
    float *f = (float *)malloc(n * sizeof(float));
    if (!f) return NULL;
    aha_weight_rows(h, 0, h->rows, f);
    const void *d = upload(w, f, n, dt, stage);
    free(f);
    return d;
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

// What the CPU forward pass does that this one does not (gemma2/gemma3,
// native sliding windows): the model is refused, naming each, rather than run
// wrong. Empty when the CUDA path runs the model as the CPU does.
static void cuda_missing(const aha_model *m, char *buf, size_t len) {
    const aha_config *c = &m->cfg;
    int window = 0;
    for (int l = 0; l < c->n_layers; l++) window |= m->layers[l].window > 0;
    const struct { int lacks; const char *what; } f[] = {
        {window, "native sliding-window layers"},
        {m->inv_freq_local != NULL, "per-layer RoPE bases"},
        {c->norm_plus1, "gemma's pre- and post-norms"},
        {c->ffn_gelu, "GeGLU"},
        {c->embed_scale > 0, "scaled embeddings"},
        {c->attn_scale > 0, "query_pre_attn_scalar"},
        {c->attn_softcap > 0, "attention logit softcapping"},
        {c->final_softcap > 0, "final logit softcapping"},
    };
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].lacks) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", f[i].what);
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
    if (!aha_attention_cuda_supports(c->head_dim)) {
        aha_err("--device cuda: head_dim %d has no CUDA attention kernel (64, 96, 128)", c->head_dim);
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
    const size_t L = c->n_layers, H = c->n_heads, D = c->head_dim;
    const size_t hd = H * D, kvd = (size_t)c->n_kv_heads * D, dim = c->dim;
    dev_allocs stage_mem = {0};
    float *stage = dt == AHA_GPU_F32 ? NULL : (float *)dev_alloc(&stage_mem, sizeof(float) << 26);
    w->layers = (dev_layer *)calloc(L, sizeof(dev_layer));
    int ok = (stage || dt == AHA_GPU_F32) && w->layers;
    for (size_t l = 0; ok && l < L; l++) {
        const aha_layer *s = &m->layers[l];
        dev_layer *d = &w->layers[l];
        d->wq = upload_w(w, &s->wq, dt, stage);
        d->wk = upload_w(w, &s->wk, dt, stage);
        d->wv = upload_w(w, &s->wv, dt, stage);
        d->wo = upload_w(w, &s->wo, dt, stage);
        d->w_gate = upload_w(w, &s->w_gate, dt, stage);
        d->w_up = upload_w(w, &s->w_up, dt, stage);
        d->w_down = upload_w(w, &s->w_down, dt, stage);
        const size_t qn = c->arch == AHA_ARCH_OLMO2 ? hd : D, kn = c->arch == AHA_ARCH_OLMO2 ? kvd : D;
        d->attn_norm = (const float *)upload(w, s->attn_norm, dim, AHA_GPU_F32, NULL);
        d->bq = (const float *)upload(w, s->bq, hd, AHA_GPU_F32, NULL);
        d->br = (const float *)upload(w, s->br, c->n_heads, AHA_GPU_F32, NULL);
        d->bk = (const float *)upload(w, s->bk, kvd, AHA_GPU_F32, NULL);
        d->bv = (const float *)upload(w, s->bv, kvd, AHA_GPU_F32, NULL);
        d->q_norm = (const float *)upload(w, s->q_norm, qn, AHA_GPU_F32, NULL);
        d->k_norm = (const float *)upload(w, s->k_norm, kn, AHA_GPU_F32, NULL);
        d->post_attn_norm = (const float *)upload(w, s->post_attn_norm, dim, AHA_GPU_F32, NULL);
        d->ffn_norm = (const float *)upload(w, s->ffn_norm, dim, AHA_GPU_F32, NULL);
        d->post_ffn_norm = (const float *)upload(w, s->post_ffn_norm, dim, AHA_GPU_F32, NULL);
        ok = d->wq && d->wk && d->wv && d->wo && d->w_gate && d->w_up && d->w_down;
    }
    if (ok) {
        w->tok_emb = (const float *)upload_w(w, &m->tok_emb, AHA_GPU_F32, NULL);
        w->lm_head = upload_w(w, &m->lm_head, dt, stage);
        w->out_norm = (const float *)upload(w, m->out_norm, dim, AHA_GPU_F32, NULL);
        w->inv_freq = (const float *)upload(w, m->inv_freq, D / 2, AHA_GPU_F32, NULL);
        ok = w->tok_emb && w->lm_head && w->out_norm && w->inv_freq;
    }
    dev_free_all(&stage_mem);
    if (!ok) {
        aha_err("--device cuda: cannot upload the model (%s)", cudaGetErrorString(cudaGetLastError()));
        aha_gpu_model_free(w);
        return NULL;
    }
    return w;
}
