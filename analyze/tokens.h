// Which tokens need global attention: the oracle's global rate (first eps)
// grouped by token id, by position in the context (log2 buckets) and by
// token class, per layer group (thirds of the layers) and over all layers.
// One streaming pass over tokens, position, token_text and the first eps's
// d_eps, a slab at a time, like stats.c; memory grows with the vocabulary
// (the largest token id) and log2 of the context, never with T.
//
// Counts are kept by window bucket, so every recorded window and both
// subsets derive exactly: a decision is global at w_i iff db > i (db =
// #{w : w < d_eps}); it counts in "t >= w_i" iff pb > i (pb = #{w : w <= t}).
#pragma once
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "trace_read.h"

#define AHA_TOK_GROUPS 3      // layer groups: thirds (fewer with fewer layers)

typedef enum {
    AHA_TC_WHITESPACE,        // only whitespace (space, tab, newline, CR)
    AHA_TC_PUNCT,             // optional leading whitespace, then only ASCII punctuation
    AHA_TC_DIGIT,             // optional leading whitespace, then only ASCII digits
    AHA_TC_WORD_START,        // leading whitespace (or a space marker), then a letter
    AHA_TC_WORD_CONT,         // anything else: a piece that continues a word
    AHA_TC_SPECIAL,           // <|...|> or <...> without whitespace inside, or an empty piece
    AHA_TC_COUNT
} aha_token_class;

// The class of a token piece (UTF-8, NUL-terminated). The one definition of
// the classes (docs/reports.md, "Which tokens need global attention").
aha_token_class aha_token_class_of(const char *piece);
const char *aha_token_class_name(aha_token_class c); // "whitespace", "punct", ...

typedef struct {              // counts keyed by one grouping of the tokens
    int64_t n;                // keys
    int64_t *occ;             // [n, nb] tokens by position bucket pb
    int64_t *dep;             // [n, G, nb] decisions by d_eps bucket db, per layer group
} aha_tok_keyed;

typedef struct {
    aha_tr meta;              // the first trace's attributes (windows, L, H, eps)
    int L, H, nw;
    int G, lo[AHA_TOK_GROUPS], hi[AHA_TOK_GROUPS]; // layer groups [lo, hi)
    int nb;                   // window buckets: nw + 1
    aha_tok_keyed id;         // by token id (0..max id)
    char **text;              // [id.n] each id's first piece (NULL: not seen)
    aha_tok_keyed pos;        // by log2 position bucket: 0 for t = 0, k for t in [2^(k-1), 2^k)
    aha_tok_keyed cls;        // by token class
} aha_tokens;

// The layer groups of a trace: thirds of its global layers (fewer with fewer),
// layers [lo[g], hi[g]) of which the natively local ones count in none;
// returns their count G. The token and mass analyses share them.
int aha_tok_groups(const aha_trace_meta *m, int *lo, int *hi);
// Global layers in [lo, hi): what a group's totals count.
int aha_tok_group_size(const aha_trace_meta *m, int lo, int hi);
// Their JSON: [{name, first_layer, last_layer, layers_counted}] per group,
// then "all layers" ("all global layers (3 of 18)" with natively local ones).
cJSON *aha_tok_groups_json(int G, const int *lo, const int *hi, const aha_trace_meta *m);

// Open paths[0..n) (*trs: calloc'd): 0, or -1 with a message and nothing
// left open. aha_tok_close closes and frees them.
int aha_tok_open(aha_tr **trs, const char *const *paths, int n);
void aha_tok_close(aha_tr *trs, int n);
// Tokens per slab: block, or (block <= 0) about 4M decisions in whole chunks.
int aha_tok_block(const aha_tr *meta, int block);

// Gather the traces paths[0..n) as shards of one run (aha_stats_gather has
// checked that they match). block: tokens per slab (0 = automatic). 0 or -1
// with a message; a trace without d_eps (no eps recorded) is an error.
int aha_tokens_gather(aha_tokens *k, const char *const *paths, int n, int block);
// The same for the open traces trs[0..n), which stay open.
int aha_tokens_gather_open(aha_tokens *k, const aha_tr *trs, int n, int block);
void aha_tokens_free(aha_tokens *k);

// The "tokens" member of one trace's JSON report: every window, the top
// `top` tokens by global rate with at least min_count occurrences (t >= w),
// and the rates by position bucket and by class (both subsets).
cJSON *aha_tokens_json(const aha_tokens *k, int min_count, int top);

// aha report / aha plot: add "tokens" to every trace of rep that has d_eps
// (paths as aha_report_load took them). 0 or -1 with a message.
int aha_tokens_report(cJSON *rep, const char *const *paths, int n, int compare, int block, int min_count, int top);

// The Markdown section of trace tr at window w (0: the middle recorded one).
void aha_tokens_md(FILE *f, const cJSON *tr, int w);
// tokens.csv: trace,table,eps,window,subset,group,layers,key,text,occurrences,global,total,fraction.
int aha_tokens_csv(FILE *f, const cJSON *rep); // 0, or -1 as aha_report_csv
