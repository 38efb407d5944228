// A context's results and their asynchronous trace write (record_ctx.h).
#include "record_ctx.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "utf8.h"

int record_ctx_init(record_ctx *c, int L, int H, int ctx, int n_eps, int n_werr, int n_mass, int n_runs, int aha) {
    memset(c, 0, sizeof *c);
    c->L = L, c->H = H, c->n_eps = n_eps, c->n_werr = n_werr, c->n_mass = n_mass, c->n_runs = n_runs, c->aha = aha;
    const size_t LTH = (size_t)L * ctx * H;
    c->ids = aha_calloc((size_t)ctx, sizeof(int32_t), "tokens");
    c->dep = aha_calloc((size_t)n_eps * LTH, sizeof(uint32_t), "distances");
    c->werr = aha_calloc((size_t)(n_werr ? n_werr : 1) * LTH, sizeof(float), "window errors");
    c->mass_far = aha_calloc((size_t)(n_mass ? n_mass : 1) * LTH, sizeof(float), "mass split");
    c->mass_sink = aha_calloc(n_mass ? LTH : 1, sizeof(float), "mass split");
    c->lgate = aha_calloc(LTH, 1, "gates");
    c->llogit = aha_calloc(LTH, sizeof(float), "router logits");
    c->texts = aha_calloc((size_t)ctx, sizeof *c->texts, "token texts");
    c->nll = aha_calloc((size_t)n_runs, sizeof *c->nll, "runs");
    c->kl = aha_calloc((size_t)n_runs, sizeof *c->kl, "runs");
    c->gate = aha_calloc((size_t)n_runs, sizeof *c->gate, "runs");
    c->flops = aha_calloc((size_t)n_runs, sizeof *c->flops, "runs");
    if (!c->ids || !c->dep || !c->werr || !c->mass_far || !c->mass_sink || !c->lgate || !c->llogit || !c->texts || !c->nll || !c->kl ||
        !c->gate || !c->flops)
        return -1;
    for (int k = 0; k < n_runs; k++) {
        c->nll[k] = aha_calloc((size_t)ctx, sizeof(float), "nll");
        c->kl[k] = aha_calloc((size_t)ctx, sizeof(float), "kl");
        c->gate[k] = aha_calloc(k ? LTH : 1, 1, "gates");
        if (!c->nll[k] || !c->kl[k] || !c->gate[k]) return -1;
    }
    return 0;
}

void record_ctx_free(record_ctx *c) {
    for (int k = 0; k < c->n_runs; k++) {
        if (c->nll) free(c->nll[k]);
        if (c->kl) free(c->kl[k]);
        if (c->gate) free(c->gate[k]);
    }
    free(c->nll), free(c->kl), free(c->gate), free(c->flops);
    free(c->ids), free(c->dep), free(c->werr), free(c->mass_far), free(c->mass_sink), free(c->lgate), free(c->llogit);
    free(c->texts), free(c->text_buf), free(c->source);
    memset(c, 0, sizeof *c);
}

int record_ctx_doc(record_ctx *c, int64_t doc_index, const char *source, const char *sha256) {
    size_t n = strlen(source) + 1;
    if (aha_grow(&c->source, &c->source_cap, n, 1, "a document's source") != 0) return -1;
    memcpy(c->source, source, n);
    c->doc_index = doc_index;
    snprintf(c->sha256, sizeof c->sha256, "%s", sha256);
    return 0;
}

// The text of token id as the trace stores it into out (room for 3 * the
// piece's length + 12 bytes): its piece as valid UTF-8 (byte-level pieces
// can split a character), or without a tokenizer the id in decimal. The
// bytes written + 1 (NUL-terminated).
static size_t piece_text(const aha_tokenizer *tok, int32_t id, char *out) {
    size_t len = 0;
    if (!tok) return (size_t)snprintf(out, 12, "%d", id) + 1;
    const char *p = aha_tok_piece(tok, id, &len);
    return aha_utf8_sanitize(p ? p : "", p ? len : 0, out);
}

// Room piece_text needs for id.
static size_t piece_room(const aha_tokenizer *tok, int32_t id) {
    size_t len = 0;
    if (tok) aha_tok_piece(tok, id, &len);
    return 3 * len + 12;
}

int record_text_width(const aha_tokenizer *tok, int vocab, int *width) {
    size_t most = 1, cap = 0;
    char *buf = NULL;
    for (int32_t id = 0; id < vocab; id++) {
        if (aha_grow(&buf, &cap, piece_room(tok, id), 1, "token texts") != 0) {
            free(buf);
            return -1;
        }
        size_t n = piece_text(tok, id, buf) - 1;
        if (n > most) most = n;
    }
    free(buf);
    *width = (int)most;
    return 0;
}

// The token pieces of the context as NUL-terminated UTF-8 (piece_text).
static int set_texts(record_ctx *c, const aha_tokenizer *tok) {
    size_t need = 0;
    for (int t = 0; t < c->T; t++) need += piece_room(tok, c->ids[t]);
    if (aha_grow(&c->text_buf, &c->text_cap, need, 1, "token texts") != 0) return -1;
    size_t off = 0;
    for (int t = 0; t < c->T; t++) {
        c->texts[t] = c->text_buf + off;
        off += piece_text(tok, c->ids[t], c->text_buf + off);
    }
    return 0;
}

static void *write_main(void *arg) {
    record_writer *w = arg;
    record_ctx *c = w->job;
    omp_set_num_threads(w->threads); // a new thread starts with OpenMP's default team, not --threads
    aha_trace_run_doc rd[1 + AHA_MAX_WINDOWS];
    for (int k = 0; k < c->n_runs; k++)
        rd[k] = (aha_trace_run_doc){c->nll[k], c->kl[k], k ? c->gate[k] : NULL, c->flops[k].executed,
                                    c->flops[k].full};
    aha_trace_doc d = {.n = c->T, .doc_index = c->doc_index, .source = c->source, .sha256 = c->sha256,
                       .tokens = c->ids, .token_text = c->texts, .gate = c->aha ? c->lgate : NULL,
                       .router_logit = c->aha ? c->llogit : NULL, .dep = c->dep, .werr = c->n_werr ? c->werr : NULL,
                       .runs = rd, .mass_far = c->n_mass ? c->mass_far : NULL,
                       .mass_sink = c->n_mass ? c->mass_sink : NULL};
    w->rc = set_texts(c, w->tok) == 0 && aha_trace_append(w->trace, &d) == 0 ? 0 : -1;
    if (w->rc) snprintf(w->err, sizeof w->err, "%s", aha_errmsg()); // errors are per thread
    return NULL;
}

int record_writer_wait(record_writer *w) {
    if (!w->busy) return 0;
    pthread_join(w->th, NULL);
    w->busy = 0;
    if (w->rc) aha_err("%s", w->err);
    return w->rc;
}

int record_writer_start(record_writer *w, record_ctx *c) {
    if (record_writer_wait(w) != 0) return -1;
    w->job = c;
    w->threads = omp_get_max_threads();
    if (pthread_create(&w->th, NULL, write_main, w) != 0) {
        aha_err("cannot start the trace writer thread");
        return -1;
    }
    w->busy = 1;
    return 0;
}
