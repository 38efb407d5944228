#include "settings.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "run.h"

int aha_settings_resolve(const aha_run_settings *s, const aha_model *m, int *ctx) {
    *ctx = s->ctx;
    return aha_ctx_resolve(m, ctx, AHA_RUN_CTX) != 0 || aha_sinks_check(s->sinks, *ctx) != 0 ? -1 : 0;
}

void aha_settings_meta(const aha_run_settings *s, int ctx, aha_trace_meta *m) {
    m->model_path = s->model, m->dataset = s->data;
    m->format = aha_ds_format_name(s->format), m->text_field = s->text_field;
    m->max_docs = s->max_docs, m->max_tokens = s->max_tokens;
    m->ctx = ctx, m->batch = s->batch, m->sinks = s->sinks;
    m->seed = s->seed;
    m->weights = aha_weights_name(s->weights);
}

int aha_text_ids(const aha_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n) {
    int32_t *raw;
    size_t n_raw;
    if (aha_tok_encode(tok, text, len, &raw, &n_raw) != 0) return -1;
    int bos = aha_tok_add_bos(tok) && aha_tok_bos(tok) >= 0;
    *ids = aha_malloc(n_raw + 1, sizeof(int32_t), "token ids");
    if (!*ids) {
        free(raw);
        return -1;
    }
    if (bos) (*ids)[0] = aha_tok_bos(tok);
    memcpy(*ids + bos, raw, n_raw * sizeof(int32_t));
    *n = n_raw + (size_t)bos;
    free(raw);
    return 0;
}

int aha_doc_ids(const aha_model *m, const aha_doc *doc, int32_t **ids, size_t *n) {
    if (doc->ids) {
        *ids = aha_malloc(doc->n_ids ? doc->n_ids : 1, sizeof(int32_t), doc->name);
        if (!*ids) return -1;
        for (size_t i = 0; i < doc->n_ids; i++) {
            if (doc->ids[i] >= m->cfg.vocab) {
                aha_err("%s: token id %d out of range (vocab %d)", doc->name, doc->ids[i], m->cfg.vocab);
                free(*ids);
                return -1;
            }
            (*ids)[i] = doc->ids[i];
        }
        *n = doc->n_ids;
        return 0;
    }
    if (!m->tok) { // text needs a tokenizer; token files do not
        aha_err("%s", m->tok_error);
        return -1;
    }
    if (aha_text_ids(m->tok, doc->text, doc->len, ids, n) != 0) {
        aha_err_prefix(doc->name);
        return -1;
    }
    return 0;
}
