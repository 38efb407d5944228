// Which tokens need global attention (tokens.h): the class rule, the
// streaming pass and the JSON.
#include "tokens.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "report_schema.h"
#include "stats.h"

#define SLAB_DECISIONS (4 << 20) // decisions per slab when the caller does not choose

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
// ASCII punctuation and symbols: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
static int is_punct(unsigned char c) { return c > ' ' && c < 0x7f && !is_digit(c) && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
// A letter: ASCII a-z, A-Z, or any non-ASCII byte (UTF-8 letters; non-ASCII
// punctuation such as curly quotes counts as a letter too: the rule is bytes).
static int is_letter(unsigned char c) { return c >= 0x80 || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

// Length of a space marker at p: a space-like byte, or the tokenizers'
// visible ones (U+0120 'Ġ' of byte-level BPE, U+2581 '▁' of SentencePiece).
static int space_len(const unsigned char *p) {
    if (is_space(p[0])) return 1;
    if (p[0] == 0xc4 && p[1] == 0xa0) return 2;
    if (p[0] == 0xe2 && p[1] == 0x96 && p[2] == 0x81) return 3;
    return 0;
}

static int all_of(const unsigned char *p, int (*pred)(unsigned char)) {
    for (; *p; p++)
        if (!pred(*p)) return 0;
    return 1;
}

aha_token_class aha_token_class_of(const char *piece) {
    const unsigned char *p = (const unsigned char *)(piece ? piece : "");
    size_t n = strlen((const char *)p);
    // special: <|...|> or <...>, no whitespace inside; the trace does not say which
    // tokens the tokenizer marks special, so the text decides. An empty piece too.
    if (n == 0) return AHA_TC_SPECIAL;
    if (n >= 3 && p[0] == '<' && p[n - 1] == '>') {
        int sp = 0;
        for (size_t i = 0; i < n; i++) sp |= is_space(p[i]);
        if (!sp) return AHA_TC_SPECIAL;
    }
    const unsigned char *r = p;
    int lead = 0;
    for (int k; (k = space_len(r)) > 0; r += k) lead = 1;
    if (!*r) return AHA_TC_WHITESPACE;
    if (all_of(r, is_digit)) return AHA_TC_DIGIT;
    if (all_of(r, is_punct)) return AHA_TC_PUNCT;
    if (lead && is_letter(*r)) return AHA_TC_WORD_START;
    return AHA_TC_WORD_CONT;
}

const char *aha_token_class_name(aha_token_class c) {
    static const char *names[AHA_TC_COUNT] = {"whitespace", "punct", "digit", "word_start", "word_cont", "special"};
    return c < AHA_TC_COUNT ? names[c] : "?";
}

// 0 for t = 0, k for t in [2^(k-1), 2^k).
static int log2_bucket(int64_t t) {
    int k = 0;
    while (t > 0) t >>= 1, k++;
    return k;
}

static int keyed_alloc(aha_tok_keyed *k, int64_t n, int G, int nb) {
    k->n = n;
    k->occ = aha_calloc((size_t)n * nb, sizeof *k->occ, "token counts");
    k->dep = aha_calloc((size_t)n * G * nb, sizeof *k->dep, "token counts");
    return k->occ && k->dep ? 0 : -1;
}

static void keyed_add(aha_tok_keyed *k, int64_t key, int G, int nb, int pb, const int32_t *db) {
    k->occ[key * nb + pb]++;
    int64_t *d = k->dep + key * G * nb;
    for (int j = 0; j < G * nb; j++) d[j] += db[j];
}

typedef struct {              // one slab's buffers
    int32_t *tok, *pos;       // [block]
    char **text;              // [block]
    uint32_t *dep;            // [L, block, H]
    int32_t *db;              // [block, G, nb] decisions per token, group and d bucket
} tok_buf;

static int bucket_of(const int *w, int nw, int64_t x, int strict) {
    int b = 0;
    while (b < nw && (strict ? w[b] < x : w[b] <= x)) b++;
    return b;
}

// One slab [t0, t0+m) of trace tr into k.
static int add_slab(aha_tokens *k, const aha_tr *tr, int64_t t0, int64_t m, tok_buf *b) {
    const int H = k->H, G = k->G, nb = k->nb, nw = k->nw;
    const int *win = k->meta.m.windows;
    if (aha_tr_read(tr, TD_TOKENS, 0, t0, m, b->tok) || aha_tr_read(tr, TD_POSITION, 0, t0, m, b->pos) ||
        aha_tr_read(tr, TD_DEP, 0, t0, m, b->dep))
        return -1;
    memset(b->db, 0, (size_t)m * G * nb * sizeof *b->db);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++) { // a token per iteration: each owns its row of db
        for (int g = 0; g < G; g++) {
            int32_t *row = b->db + ((size_t)i * G + g) * nb;
            for (int l = k->lo[g]; l < k->hi[g]; l++) {
                if (aha_trace_layer_window(&k->meta.m, l)) continue; // natively local: not counted
                const uint32_t *d = b->dep + ((size_t)l * m + i) * H;
                for (int h = 0; h < H; h++) row[bucket_of(win, nw, d[h], 1)]++;
            }
        }
    }
    if (aha_tr_read(tr, TD_TOKEN_TEXT, 0, t0, m, b->text) != 0) return -1;
    int rc = 0;
    for (int64_t i = 0; i < m; i++) {
        int pb = bucket_of(win, nw, b->pos[i], 0);
        const int32_t *db = b->db + (size_t)i * G * nb;
        const char *piece = b->text[i] ? b->text[i] : "";
        keyed_add(&k->id, b->tok[i], G, nb, pb, db);
        keyed_add(&k->pos, log2_bucket(b->pos[i]), G, nb, pb, db);
        keyed_add(&k->cls, aha_token_class_of(piece), G, nb, pb, db);
        if (!k->text[b->tok[i]] && !(k->text[b->tok[i]] = strdup(piece))) rc = -1;
    }
    aha_tr_free_text(m, b->text);
    if (rc) aha_err("out of memory for token texts");
    return rc;
}

int aha_tok_groups(const aha_trace_meta *m, int *lo, int *hi) {
    int L = m->n_layers, n = aha_trace_n_global(m), gl[AHA_TRACE_MAX_LAYERS], k = 0;
    for (int l = 0; l < L; l++)
        if (!aha_trace_layer_window(m, l)) gl[k++] = l; // natively local layers are in no group
    int G = n >= AHA_TOK_GROUPS ? AHA_TOK_GROUPS : n; // thirds of the global layers, as the ccdf figure groups them
    for (int g = 0; g < G; g++) lo[g] = gl[g * n / G], hi[g] = gl[(g + 1) * n / G - 1] + 1;
    return G;
}

int aha_tok_group_size(const aha_trace_meta *m, int lo, int hi) {
    int n = 0;
    for (int l = lo; l < hi; l++) n += !aha_trace_layer_window(m, l);
    return n;
}

cJSON *aha_tok_groups_json(int G, const int *lo, const int *hi, const aha_trace_meta *m) {
    cJSON *gs = cJSON_CreateArray();
    int L = m->n_layers, n = aha_trace_n_global(m);
    for (int g = 0; g <= G; g++) { // the last: all (global) layers
        cJSON *x = cJSON_CreateObject();
        char name[64];
        int a = g < G ? lo[g] : 0, b = g < G ? hi[g] : L, k = aha_tok_group_size(m, a, b);
        if (g < G && n == L) snprintf(name, sizeof name, "layers %d-%d", a, b - 1);
        else if (g < G) snprintf(name, sizeof name, "layers %d-%d (%d global)", a, b - 1, k);
        else if (n == L) snprintf(name, sizeof name, "all layers");
        else snprintf(name, sizeof name, "all global layers (%d of %d)", n, L);
        rep_add_str(x, RF_GROUP_NAME, name);
        rep_add_num(x, RF_GROUP_FIRST_LAYER, a);
        rep_add_num(x, RF_GROUP_LAST_LAYER, b - 1);
        rep_add_num(x, RF_GROUP_LAYERS_COUNTED, k);
        cJSON_AddItemToArray(gs, x);
    }
    return gs;
}

int aha_tok_open(aha_tr **trs, const char *const *paths, int n) {
    int opened = 0, ok = 1;
    if (!(*trs = aha_calloc((size_t)n, sizeof **trs, "traces"))) return -1;
    while (ok && opened < n) ok = aha_tr_open(&(*trs)[opened], paths[opened]) == 0, opened++; // closing a failed open is safe
    if (ok) return 0;
    aha_tok_close(*trs, opened);
    *trs = NULL;
    return -1;
}

void aha_tok_close(aha_tr *trs, int n) {
    for (int t = 0; trs && t < n; t++) aha_tr_close(&trs[t]);
    free(trs);
}

int aha_tok_block(const aha_tr *meta, int block) {
    if (block > 0) return block;
    int c = meta->chunk_tokens > 0 ? meta->chunk_tokens : 1;
    int64_t per = (int64_t)meta->m.n_layers * meta->m.n_heads;
    return (int)((SLAB_DECISIONS / per + c - 1) / c * c);
}

int aha_tokens_gather(aha_tokens *k, const char *const *paths, int n, int block) {
    aha_tr *trs;
    memset(k, 0, sizeof *k);
    if (aha_tok_open(&trs, paths, n) != 0) return -1;
    int rc = aha_tokens_gather_open(k, trs, n, block);
    aha_tok_close(trs, n);
    return rc;
}

int aha_tokens_gather_open(aha_tokens *k, const aha_tr *trs, int n, int block) {
    memset(k, 0, sizeof *k);
    tok_buf b = {0};
    int rc = -1;
    if (aha_tr_dup(&k->meta, &trs[0]) != 0) return -1;
    k->L = k->meta.m.n_layers, k->H = k->meta.m.n_heads, k->nw = k->meta.m.n_windows, k->nb = k->nw + 1;
    if (k->meta.m.n_eps < 1) {
        aha_err("%s: no dependency/eps_* datasets: the token analysis needs d_eps", trs[0].path);
        goto done;
    }
    k->G = aha_tok_groups(&k->meta.m, k->lo, k->hi);
    block = aha_tok_block(&k->meta, block);
    int32_t max_id, max_pos; // they size the tables
    if (!(b.tok = aha_malloc((size_t)block, sizeof *b.tok, "slab")) ||
        aha_stats_scan_max(trs, n, TD_POSITION, block, b.tok, &max_pos) != 0 ||
        aha_stats_scan_max(trs, n, TD_TOKENS, block, b.tok, &max_id) != 0)
        goto done;
    if (keyed_alloc(&k->id, (int64_t)max_id + 1, k->G, k->nb) || keyed_alloc(&k->pos, log2_bucket(max_pos) + 1, k->G, k->nb) ||
        keyed_alloc(&k->cls, AHA_TC_COUNT, k->G, k->nb) ||
        !(k->text = aha_calloc((size_t)max_id + 1, sizeof *k->text, "token texts")) ||
        !(b.pos = aha_malloc((size_t)block, sizeof *b.pos, "slab")) ||
        !(b.text = aha_calloc((size_t)block, sizeof *b.text, "slab")) ||
        !(b.dep = aha_malloc((size_t)k->L * block * k->H, sizeof *b.dep, "slab")) ||
        !(b.db = aha_malloc((size_t)block * k->G * k->nb, sizeof *b.db, "slab")))
        goto done;
    for (int t = 0; t < n; t++)
        for (int64_t t0 = 0; t0 < trs[t].n_tokens; t0 += block)
            if (add_slab(k, &trs[t], t0, trs[t].n_tokens - t0 < block ? trs[t].n_tokens - t0 : block, &b) != 0) goto done;
    rc = 0;
done:
    free(b.tok), free(b.pos), free(b.text), free(b.dep), free(b.db);
    if (rc) aha_tokens_free(k);
    return rc;
}

void aha_tokens_free(aha_tokens *k) {
    aha_tok_keyed *all[3] = {&k->id, &k->pos, &k->cls};
    for (int j = 0; j < 3; j++) free(all[j]->occ), free(all[j]->dep);
    for (int64_t i = 0; k->text && i < k->id.n; i++) free(k->text[i]);
    free(k->text);
    aha_tr_close(&k->meta);
    memset(k, 0, sizeof *k);
}

// ---- JSON ----

// Key `key` at window index i over layer group g (G: all layers); tw: only
// tokens at t >= w_i. occ: the tokens counted.
static aha_frac keyed_frac(const aha_tokens *k, const aha_tok_keyed *x, int64_t key, int g, int i, int tw, int64_t *occ) {
    const int nb = k->nb, G = k->G;
    aha_frac f = {0, 0};
    int64_t n = 0;
    for (int pb = tw ? i + 1 : 0; pb < nb; pb++) n += x->occ[key * nb + pb];
    for (int gi = g < G ? g : 0; gi < (g < G ? g + 1 : G); gi++) {
        const int64_t *d = x->dep + (key * G + gi) * nb;
        for (int db = i + 1; db < nb; db++) f.global += d[db]; // d > w_i implies t >= w_i: both subsets
        f.total += n * aha_tok_group_size(&k->meta.m, k->lo[gi], k->hi[gi]) * k->H;
    }
    if (occ) *occ = n;
    return f;
}

typedef struct {
    int64_t id, occ;
    aha_frac f;
} tok_rank;

static int rank_cmp(const void *a, const void *b) { // rate descending, then more decisions, then id
    const tok_rank *x = a, *y = b;
    __int128 lhs = (__int128)x->f.global * y->f.total, rhs = (__int128)y->f.global * x->f.total; // exact
    if (lhs != rhs) return lhs < rhs ? 1 : -1;
    if (x->f.total != y->f.total) return x->f.total < y->f.total ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static cJSON *top_json(const aha_tokens *k, int g, int i, int min_count, int top, tok_rank *r) {
    int64_t n = 0;
    for (int64_t id = 0; id < k->id.n; id++) {
        int64_t occ;
        aha_frac f = keyed_frac(k, &k->id, id, g, i, 1, &occ);
        if (occ >= min_count && occ > 0) r[n++] = (tok_rank){id, occ, f};
    }
    qsort(r, (size_t)n, sizeof *r, rank_cmp);
    cJSON *a = cJSON_CreateArray();
    for (int64_t j = 0; j < n && j < top; j++) {
        cJSON *o = rep_frac(r[j].f.global, r[j].f.total);
        rep_add_num(o, RF_TOP_ID, (double)r[j].id);
        rep_add_str(o, RF_TOP_TEXT, k->text[r[j].id] ? k->text[r[j].id] : "");
        rep_add_num(o, RF_TOP_OCCURRENCES, (double)r[j].occ);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

// {all: [fraction per key], t_ge_w: [...]} over layer group g.
static cJSON *keyed_json(const aha_tokens *k, const aha_tok_keyed *x, int g, int i) {
    cJSON *o = cJSON_CreateObject();
    for (int tw = 0; tw < 2; tw++) {
        cJSON *a = rep_add_array(o, tw ? RF_KEYED_T_GE_W : RF_KEYED_ALL);
        for (int64_t key = 0; key < x->n; key++) {
            int64_t occ;
            aha_frac fr = keyed_frac(k, x, key, g, i, tw, &occ);
            cJSON *f = rep_frac(fr.global, fr.total);
            rep_add_num(f, RF_KF_OCCURRENCES, (double)occ);
            cJSON_AddItemToArray(a, f);
        }
    }
    return o;
}

cJSON *aha_tokens_json(const aha_tokens *k, int min_count, int top) {
    cJSON *o = cJSON_CreateObject();
    tok_rank *r = aha_malloc((size_t)k->id.n, sizeof *r, "token ranks");
    if (!r) return NULL;
    rep_add_num(o, RF_TOK_EPS, k->meta.m.eps[0]);
    rep_add_num(o, RF_TOK_MIN_COUNT, min_count);
    rep_add_num(o, RF_TOK_TOP, top);
    rep_add_str(o, RF_TOK_TOP_SUBSET, "t_ge_w");
    rep_add(o, RF_TOK_GROUPS, aha_tok_groups_json(k->G, k->lo, k->hi, &k->meta.m));
    cJSON *pb = rep_add_array(o, RF_TOK_POSITION_BUCKETS); // [lo, hi) in the context
    for (int64_t b = 0; b < k->pos.n; b++) {
        cJSON *x = cJSON_CreateArray();
        cJSON_AddItemToArray(x, cJSON_CreateNumber(b ? (double)(1LL << (b - 1)) : 0));
        cJSON_AddItemToArray(x, cJSON_CreateNumber((double)(1LL << b)));
        cJSON_AddItemToArray(pb, x);
    }
    cJSON *cl = rep_add_array(o, RF_TOK_CLASSES);
    for (int c = 0; c < AHA_TC_COUNT; c++) cJSON_AddItemToArray(cl, cJSON_CreateString(aha_token_class_name(c)));
    cJSON *ws = rep_add_array(o, RF_TOK_WINDOWS);
    for (int i = 0; i < k->nw; i++) {
        cJSON *w = cJSON_CreateObject();
        cJSON_AddItemToArray(ws, w);
        rep_add_num(w, RF_TW_WINDOW, k->meta.m.windows[i]);
        cJSON *t = rep_add_array(w, RF_TW_TOP), *p = rep_add_array(w, RF_TW_POSITION), *c = rep_add_array(w, RF_TW_CLASS);
        for (int g = 0; g <= k->G; g++) {
            cJSON_AddItemToArray(t, top_json(k, g, i, min_count, top, r));
            cJSON_AddItemToArray(p, keyed_json(k, &k->pos, g, i));
            cJSON_AddItemToArray(c, keyed_json(k, &k->cls, g, i));
        }
    }
    free(r);
    return o;
}

int aha_tokens_report(cJSON *rep, const char *const *paths, int n, int compare, int block, int min_count, int top) {
    cJSON *tr;
    int t = 0;
    cJSON_ArrayForEach(tr, rep_get_mut(rep, RF_REPORT_TRACES)) {
        const char *const *p = compare ? paths + t : paths;
        int np = compare ? 1 : n;
        t++;
        if (rep_len(tr, RF_TRACE_EPS) < 1) continue; // no d_eps: nothing to say
        aha_tokens k;
        if (aha_tokens_gather(&k, p, np, block) != 0) return -1;
        cJSON *o = aha_tokens_json(&k, min_count, top);
        aha_tokens_free(&k);
        if (!o) return -1;
        rep_add(tr, RF_TRACE_TOKENS, o);
    }
    return 0;
}
