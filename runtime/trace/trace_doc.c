// A document as the trace's store takes it (trace_doc.h): every column's
// values found where its row says a document holds them.
#include "trace_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "f16.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the float16 columns are converted in host order, which must be little-endian"
#endif

// The field of d that row id's column (instance idx) reads: in d, or in its
// run idx's results.
static const void *field(const trace_col *c, const aha_trace_doc *d) {
    const trace_dset *ds = &trace_dsets[c->id];
    const char *in = ds->from == FROM_RUN ? (const char *)&d->runs[c->idx] : (const char *)d;
    return in + ds->at;
}

// The array column c reads (FROM_DOC, FROM_RUN), at its instance: [n] or [L, n, H]
// values as a document gives them (float16: as floats; text: char *).
static const char *array_of(const trace_col *c, const aha_trace_meta *m, const aha_trace_doc *d) {
    const trace_dset *ds = &trace_dsets[c->id];
    const char *base = *(const char *const *)field(c, d);
    if (!base || ds->from == FROM_RUN) return base;
    const size_t es = ds->type == TY_F16 ? sizeof(float) : trace_types[ds->type].size;
    return base + (size_t)c->idx * (size_t)trace_row_elems(c->id, m, d->n) * es; // instance idx of several
}

// The name of the meta attribute that holds string row id's width ("text_width"), or NULL.
static const char *width_name(trace_dset_id id) {
    const trace_group *g = &trace_groups[TG_ROOT];
    for (int i = 0; i < g->n_attrs; i++)
        if (g->attrs[i].obj == OBJ_META && g->attrs[i].off == trace_str_width_off[id]) return g->attrs[i].name;
    return NULL;
}

int trace_doc_check(const trace_cols *cs, const aha_trace_meta *m, const aha_trace_run *runs, int n_runs,
                    const aha_trace_doc *d, char *what, size_t size) {
    what[0] = '\0';
    if (d->n < 1)
        snprintf(what, size, "n = %d (< 1)", d->n);
    else if (d->doc_index < -1)
        snprintf(what, size, "doc_index = %lld (< -1)", (long long)d->doc_index);
    else if (n_runs && !d->runs)
        snprintf(what, size, "no runs");
    for (int i = 0; !what[0] && i < cs->n; i++) {
        const trace_col *c = &cs->c[i];
        const trace_dset *ds = &trace_dsets[c->id];
        const int pointer = ds->shape != SH_DOC || ds->type == TY_STR; // a value per document: the text's
        if ((ds->from != FROM_DOC && ds->from != FROM_RUN) || !pointer || *(const void *const *)field(c, d))
            continue;
        if (ds->from == FROM_RUN) snprintf(what, size, "run '%s': no %s", runs[c->idx].name, ds->key);
        else snprintf(what, size, "no %s", ds->key);
    }
    for (int i = 0; !what[0] && i < cs->n; i++) { // text along the tokens: each piece there, and fits
        const trace_col *c = &cs->c[i];
        if (trace_dsets[c->id].type != TY_STR || !trace_col_along_t(c)) continue;
        const char *const *text = (const char *const *)array_of(c, m, d);
        const size_t width = (size_t)aha_trace_str_width(m, c->id);
        for (int t = 0; !what[0] && t < d->n; t++)
            if (!text[t])
                snprintf(what, size, "%s[%d] is NULL", c->path, t);
            else if (strnlen(text[t], width + 1) > width) // never cut: a width is a promise
                snprintf(what, size, "%s[%d] is %zu bytes, longer than %s %zu", c->path, t, strlen(text[t]),
                         width_name(c->id) ? width_name(c->id) : "its width", width);
    }
    return what[0] ? -1 : 0;
}

// Bytes column c needs converted for a document of n tokens: float16 from
// floats, text to its fixed width, positions made; 0 for one taken as given.
static size_t converted_bytes(const trace_col *c, const aha_trace_meta *m, int n) {
    const trace_dset *ds = &trace_dsets[c->id];
    const size_t k = (size_t)trace_row_elems(c->id, m, n);
    if (ds->from == FROM_POSITION) return k * sizeof(int32_t);
    if (ds->type == TY_F16) return k * sizeof(uint16_t);
    if (ds->type == TY_STR) return k * (size_t)aha_trace_str_width(m, c->id);
    return 0;
}

// Column c's values for document d, converted into out where they need it.
static const void *values_of(const trace_col *c, const aha_trace_meta *m, const aha_trace_doc *d, char *out) {
    const trace_dset *ds = &trace_dsets[c->id];
    const size_t k = (size_t)trace_row_elems(c->id, m, d->n);
    if (ds->from == FROM_POSITION) {
        for (size_t i = 0; i < k; i++) ((int32_t *)out)[i] = (int32_t)i;
        return out;
    }
    const char *src = array_of(c, m, d);
    if (ds->type == TY_F16) {
        for (size_t j = 0; j < k; j++) ((uint16_t *)out)[j] = aha_f32_to_f16(((const float *)src)[j]);
        return out;
    }
    if (ds->type == TY_STR) { // fixed-length, NUL-padded (trace_doc_check made sure each fits)
        const size_t w = (size_t)aha_trace_str_width(m, c->id);
        for (size_t i = 0; i < k; i++) strncpy(out + i * w, ((const char *const *)src)[i], w);
        return out;
    }
    return src;
}

int trace_doc_record(const trace_cols *cs, const aha_trace_meta *m, const aha_trace_doc *d, trace_doc_buf *b,
                     trace_store_rec *r, const char *who) {
    size_t bytes = 0;
    for (int i = 0; i < cs->n; i++) bytes += trace_col_along_t(&cs->c[i]) ? converted_bytes(&cs->c[i], m, d->n) : 0;
    if (aha_grow(&b->values, &b->cap_values, (size_t)cs->n, sizeof *b->values, who) != 0 ||
        aha_grow(&b->recs, &b->cap_recs, (size_t)cs->n, sizeof *b->recs, who) != 0 ||
        aha_grow(&b->buf, &b->size, bytes + 1, 1, who) != 0)
        return -1;
    int nv = 0;
    int nr = 0;
    char *out = b->buf;
    for (int i = 0; i < cs->n; i++) {
        const trace_col *c = &cs->c[i];
        if (trace_col_along_t(c)) {
            b->values[nv++] = values_of(c, m, d, out);
            out += converted_bytes(c, m, d->n);
        } else if (trace_dsets[c->id].type == TY_STR) {
            b->recs[nr++].s = *(const char *const *)field(c, d);
        } else {
            b->recs[nr++].i = *(const int64_t *)field(c, d);
        }
    }
    *r = (trace_store_rec){.n = d->n, .values = b->values, .recs = b->recs};
    return 0;
}

void trace_doc_buf_free(trace_doc_buf *b) {
    free(b->values);
    free(b->recs);
    free(b->buf);
    memset(b, 0, sizeof *b);
}
