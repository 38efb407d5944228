// Hugging Face tokenizer.json: a BPE model over GPT-2's byte alphabet, with
// the normalizers, pre-tokenizers and post-processors byte-level models use;
// or (no ByteLevel pre-tokenizer) a SentencePiece-style BPE over UTF-8 chars
// with byte fallback and the normalizers, Metaspace pre-tokenizer and
// decoders Llama-2 and Gemma use.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "err.h"
#include "mapfile.h"
#include "tokenizer_impl.h"

#define MAX_DEPTH 4 // nested Sequence normalizers / pre-tokenizers / processors
#define METASPACE "\xe2\x96\x81" // U+2581

static const char *json_str(const cJSON *o, const char *key) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

// A boolean field; def when absent or null.
static int json_flag(const cJSON *o, const char *key, int def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

// A token id: an integer 0..INT32_MAX. -1 otherwise.
static int64_t json_id(const cJSON *v) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= INT32_MAX) ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    return (int64_t)v->valuedouble;
}

// A {"String": s} pattern is s; NULL for a regex or anything else.
static const char *json_pattern(const cJSON *o) {
    return json_str(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String");
}

static int json_normalizer(aha_tokenizer *t, const cJSON *n, int depth) {
    if (!n || cJSON_IsNull(n)) return 0;
    const char *type = json_str(n, "type");
    if (type && strcmp(type, "NFC") == 0) {
        t->nfc = 1;
        return 0;
    }
    if (type && strcmp(type, "Replace") == 0) {
        const char *from = json_pattern(n), *to = json_str(n, "content");
        if (!from || !to || strcmp(from, " ") != 0 || strcmp(to, METASPACE) != 0) {
            aha_err("normalizer Replace '%.*s' -> '%.*s' unsupported (only ' ' -> U+2581)", SHOWS(from), SHOWS(to));
            return -1;
        }
        t->replace_space = 1;
        return 0;
    }
    if (type && strcmp(type, "Prepend") == 0) {
        const char *with = json_str(n, "prepend");
        if (!with || strcmp(with, METASPACE) != 0) {
            aha_err("normalizer Prepend '%.*s' unsupported (only U+2581)", SHOWS(with));
            return -1;
        }
        t->prepend = 1;
        return 0;
    }
    if (type && strcmp(type, "Sequence") == 0 && depth < MAX_DEPTH) {
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(n, "normalizers"))
            if (json_normalizer(t, item, depth + 1) != 0) return -1;
        return 0;
    }
    aha_err("normalizer '%.*s' unsupported (only NFC, Replace, Prepend, or a Sequence of them)", SHOWS(type));
    return -1;
}

// Metaspace (pre-tokenizer or decoder): replacement U+2581 and its prepend
// scheme (older files: add_prefix_space, true meaning always).
static int json_metaspace(const cJSON *p, aha_prepend *how) {
    const char *rep = json_str(p, "replacement"), *scheme = json_str(p, "prepend_scheme");
    if (!rep || strcmp(rep, METASPACE) != 0) {
        aha_err("Metaspace replacement '%.*s' unsupported (only U+2581)", SHOWS(rep));
        return -1;
    }
    if (!scheme) *how = json_flag(p, "add_prefix_space", 1) ? AHA_PREPEND_ALWAYS : AHA_PREPEND_NEVER;
    else if (strcmp(scheme, "always") == 0) *how = AHA_PREPEND_ALWAYS;
    else if (strcmp(scheme, "first") == 0) *how = AHA_PREPEND_FIRST;
    else if (strcmp(scheme, "never") == 0) *how = AHA_PREPEND_NEVER;
    else {
        aha_err("Metaspace prepend_scheme '%.*s' unknown", SHOWS(scheme));
        return -1;
    }
    return 0;
}

static int json_split(aha_tokenizer *t, const cJSON *p) {
    static const char *const behaviors[] = {
        [AHA_SPLIT_REMOVED] = "Removed",
        [AHA_SPLIT_ISOLATED] = "Isolated",
        [AHA_SPLIT_MERGED_PREV] = "MergedWithPrevious",
        [AHA_SPLIT_MERGED_NEXT] = "MergedWithNext",
        [AHA_SPLIT_CONTIGUOUS] = "Contiguous",
    };
    const char *how = json_str(p, "behavior");
    int b = 0;
    while (b < 5 && !(how && strcmp(how, behaviors[b]) == 0)) b++;
    if (b == 5) {
        aha_err("pre_tokenizer Split: behavior '%.*s' unknown", SHOWS(how));
        return -1;
    }
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const char *re = json_str(pat, "Regex"), *lit = json_str(pat, "String");
    if (!re && !lit) {
        aha_err("pre_tokenizer Split: pattern is neither {\"Regex\": ...} nor {\"String\": ...}");
        return -1;
    }
    const char *s = re ? re : lit;
    return aha_pretok_add_split(&t->pre, s, strlen(s), !re, (aha_split_behavior)b,
                                json_flag(p, "invert", 0));
}

// Steps in order; ByteLevel must come last (its char mapping would change
// what later steps see) and must be there (the vocab is byte-level).
static int json_pretok(aha_tokenizer *t, const cJSON *p, int depth, int *byte_level) {
    const char *type = json_str(p, "type");
    if (!type) {
        aha_err("pre_tokenizer without a type");
        return -1;
    }
    if (*byte_level) {
        aha_err("pre_tokenizer '%.*s' after ByteLevel unsupported", SHOWS(type));
        return -1;
    }
    if (strcmp(type, "Sequence") == 0 && depth < MAX_DEPTH) {
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"))
            if (json_pretok(t, item, depth + 1, byte_level) != 0) return -1;
        return 0;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        *byte_level = 1;
        return aha_pretok_add_byte_level(&t->pre, json_flag(p, "add_prefix_space", 1),
                                         json_flag(p, "use_regex", 1));
    }
    if (strcmp(type, "Split") == 0) return json_split(t, p);
    if (strcmp(type, "Digits") == 0)
        return aha_pretok_add_digits(&t->pre, json_flag(p, "individual_digits", 0));
    if (strcmp(type, "Metaspace") == 0 && t->spm) {
        aha_prepend how;
        if (json_metaspace(p, &how) != 0) return -1;
        return aha_pretok_add_metaspace(&t->pre, how, json_flag(p, "split", 1));
    }
    aha_err("pre_tokenizer '%.*s' unsupported (only ByteLevel, Split, Digits, Sequence; Metaspace without "
            "ByteLevel)", SHOWS(type));
    return -1;
}

// Whether node (a pre-tokenizer or decoder, or a Sequence of them) has a step of this type.
static int json_has(const cJSON *node, const char *list, const char *type, int depth) {
    const char *t = json_str(node, "type");
    if (t && strcmp(t, type) == 0) return 1;
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(node, list))
        if (depth < MAX_DEPTH && json_has(item, list, type, depth + 1)) return 1;
    return 0;
}

// spm decoders: Replace(U+2581 -> ' '), ByteFallback, Fuse, Strip(' ', n, 0)
// after Fuse, Metaspace, or a Sequence of them.
static int json_decoder(aha_tokenizer *t, const cJSON *d, int depth, int *fused) {
    if (!d || cJSON_IsNull(d)) return 0;
    const char *type = json_str(d, "type");
    const cJSON *item;
    if (type && strcmp(type, "Sequence") == 0 && depth < MAX_DEPTH) {
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(d, "decoders"))
            if (json_decoder(t, item, depth + 1, fused) != 0) return -1;
        return 0;
    }
    if (type && strcmp(type, "Replace") == 0) {
        const char *from = json_pattern(d), *to = json_str(d, "content");
        if (!from || !to || strcmp(from, METASPACE) != 0 || strcmp(to, " ") != 0) {
            aha_err("decoder Replace '%.*s' -> '%.*s' unsupported (only U+2581 -> ' ')", SHOWS(from), SHOWS(to));
            return -1;
        }
        t->decoder.replace = 1;
        return 0;
    }
    if (type && strcmp(type, "ByteFallback") == 0) {
        t->decoder.byte_fallback = 1;
        return 0;
    }
    if (type && strcmp(type, "Fuse") == 0) {
        *fused = 1;
        return 0;
    }
    if (type && strcmp(type, "Strip") == 0) {
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(d, "start");
        const cJSON *stop = cJSON_GetObjectItemCaseSensitive(d, "stop");
        const char *content = json_str(d, "content");
        if (!*fused || !content || strcmp(content, " ") != 0 || json_id(start) < 0 || json_id(stop) != 0) {
            aha_err("decoder Strip unsupported but as Strip(' ', start, 0) after Fuse");
            return -1;
        }
        t->decoder.strip = (int)json_id(start);
        return 0;
    }
    if (type && strcmp(type, "Metaspace") == 0) {
        aha_prepend how;
        if (json_metaspace(d, &how) != 0) return -1;
        t->decoder.replace = 1;
        t->decoder.strip = how != AHA_PREPEND_NEVER; // the first token's leading space
        return 0;
    }
    aha_err("decoder '%.*s' unsupported (only Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)",
            SHOWS(type));
    return -1;
}

// A TemplateProcessing's specials before $A are the BOS a prompt gets; one
// after it names the EOS.
static int json_post(aha_tokenizer *t, const cJSON *p, int depth) {
    const char *type = json_str(p, "type");
    const cJSON *item;
    if (type && strcmp(type, "Sequence") == 0 && depth < MAX_DEPTH) {
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "processors"))
            if (json_post(t, item, depth + 1) != 0) return -1;
        return 0;
    }
    if (!type || strcmp(type, "TemplateProcessing") != 0) return 0;
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    int seen_a = 0;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "single")) {
        if (cJSON_GetObjectItemCaseSensitive(item, "Sequence")) {
            seen_a = 1;
            continue;
        }
        const char *name = json_str(cJSON_GetObjectItemCaseSensitive(item, "SpecialToken"), "id");
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(specials, name ? name : ""), "ids");
        int64_t id = json_id(cJSON_GetArrayItem(ids, 0));
        if (id < 0 || id >= t->n_vocab) {
            aha_err("post_processor: special token '%.*s' has no valid id", SHOWS(name));
            return -1;
        }
        if (seen_a) {
            t->eos = (int32_t)id;
        } else {
            t->bos = (int32_t)id;
            t->add_bos = 1;
        }
    }
    return 0;
}

static int32_t find_first(const aha_tokenizer *t, const char *const *names) {
    int32_t id = -1;
    for (; *names && id < 0; names++) id = aha_tok_find(t, *names);
    return id;
}

static int json_model_options(aha_tokenizer *t, const cJSON *model) {
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    const char *prefix = json_str(model, "continuing_subword_prefix");
    const char *suffix = json_str(model, "end_of_word_suffix");
    if ((cJSON_IsNumber(dropout) && dropout->valuedouble > 0) || (prefix && *prefix) || (suffix && *suffix)) {
        aha_err("BPE dropout and subword prefix/suffix unsupported");
        return -1;
    }
    t->byte_fallback = json_flag(model, "byte_fallback", 0);
    if (t->byte_fallback && !t->spm) {
        aha_err("byte_fallback with a ByteLevel pre_tokenizer unsupported");
        return -1;
    }
    t->ignore_merges = json_flag(model, "ignore_merges", 0);
    t->fuse_unk = json_flag(model, "fuse_unk", 0);
    const char *unk = json_str(model, "unk_token");
    if (unk && (t->unk = aha_tok_find(t, unk)) < 0) {
        aha_err("unk_token '%.*s' not in the vocab", SHOWS(unk));
        return -1;
    }
    return 0;
}

// A merge is "a b" or ["a", "b"].
static int json_merge(aha_tokenizer *t, const cJSON *m) {
    const char *s = cJSON_GetStringValue(m);
    if (s) {
        const char *sp = strchr(s, ' ');
        if (sp && !strchr(sp + 1, ' '))
            return aha_tok_add_merge(t, s, (size_t)(sp - s), sp + 1, strlen(sp + 1));
    } else if (cJSON_GetArraySize(m) == 2) {
        const char *a = cJSON_GetStringValue(cJSON_GetArrayItem(m, 0));
        const char *b = cJSON_GetStringValue(cJSON_GetArrayItem(m, 1));
        if (a && b) return aha_tok_add_merge(t, a, strlen(a), b, strlen(b));
    }
    aha_err("merge %d is neither \"a b\" nor [\"a\", \"b\"]", t->n_merges + 1);
    return -1;
}

static int json_added(aha_tokenizer *t, const cJSON *a) {
    const char *content = json_str(a, "content");
    int64_t id = json_id(cJSON_GetObjectItemCaseSensitive(a, "id"));
    if (!content || id < 0) {
        aha_err("added token without a content string and an id");
        return -1;
    }
    if (json_flag(a, "single_word", 0)) {
        aha_err("added token '%.*s': single_word unsupported", SHOWS(content));
        return -1;
    }
    // A normalized token is matched in normalized text, and tokenizers keeps
    // (and decodes to) its normalized content.
    int normalized = json_flag(a, "normalized", !json_flag(a, "special", 0));
    char *nfc = normalized && t->nfc ? (char *)utf8proc_NFC((const utf8proc_uint8_t *)content) : NULL;
    if (nfc) content = nfc;
    size_t len = strlen(content);
    int rc = aha_tok_set(t, id, content, len, 0) != 0 ||
             aha_tok_add_added(t, (int32_t)id, content, len, normalized, json_flag(a, "lstrip", 0),
                               json_flag(a, "rstrip", 0)) != 0;
    free(nfc);
    return rc ? -1 : 0;
}

static int json_build(aha_tokenizer **out, const cJSON *root) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) {
        aha_err("no \"model\" object");
        return -1;
    }
    const char *type = json_str(model, "type");
    if (!type || strcmp(type, "BPE") != 0) {
        aha_err("model type '%.*s' unsupported (only BPE)", SHOWS(type ? type : "(none)"));
        return -1;
    }
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab)) {
        aha_err("model.vocab is not an object");
        return -1;
    }
    if (!cJSON_IsArray(merges)) {
        aha_err("model.merges is not an array");
        return -1;
    }
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) {
        aha_err("added_tokens is not an array");
        return -1;
    }

    // Every id, added tokens included, must fall in 0 .. (number of tokens - 1).
    size_t n_slots = 0, bytes = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, vocab) {
        n_slots++;
        bytes += strlen(item->string);
    }
    cJSON_ArrayForEach(item, added) {
        n_slots++;
        const char *content = json_str(item, "content");
        bytes += content ? 3 * strlen(content) : 0; // NFC can triple a text
    }
    if (n_slots > INT32_MAX) {
        aha_err("too many tokens");
        return -1;
    }
    aha_tokenizer *t = *out = aha_tok_new((int)n_slots, bytes);
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *decoder = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (!t) return -1;
    // Byte-level needs the ByteLevel pre-tokenizer; anything else is read as spm.
    t->spm = !json_has(pre, "pretokenizers", "ByteLevel", 0) && !json_has(decoder, "decoders", "ByteLevel", 0);
    if (json_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), 0) != 0) return -1;
    cJSON_ArrayForEach(item, vocab) {
        int64_t id = json_id(item);
        if (id < 0) {
            aha_err("token '%.*s': id is not an integer 0..%d", SHOWS(item->string), t->n_slots - 1);
            return -1;
        }
        if (aha_tok_set(t, id, item->string, strlen(item->string), 1) != 0) return -1;
    }
    cJSON_ArrayForEach(item, added)
        if (json_added(t, item) != 0) return -1;
    if (aha_tok_index(t, (size_t)cJSON_GetArraySize(merges)) != 0) return -1;
    cJSON_ArrayForEach(item, merges)
        if (json_merge(t, item) != 0) return -1;
    if (json_model_options(t, model) != 0) return -1;

    int byte_level = 0, fused = 0;
    if (pre && !cJSON_IsNull(pre) && json_pretok(t, pre, 0, &byte_level) != 0) return -1;
    const char *dec_type = json_str(decoder, "type");
    if (t->spm) {
        if (json_decoder(t, decoder, 0, &fused) != 0) return -1;
    } else if (!byte_level || !dec_type || strcmp(dec_type, "ByteLevel") != 0) {
        aha_err("not a byte-level tokenizer: needs a ByteLevel pre_tokenizer and decoder");
        return -1;
    }

    if (json_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), 0) != 0) return -1;
    // tokenizer.json names no BOS/EOS outside the template: take the usual names.
    static const char *const bos_names[] = {"<|begin_of_text|>", "<s>", "<|startoftext|>", "<bos>", NULL};
    static const char *const eos_names[] = {"<|end_of_text|>", "<|endoftext|>", "</s>",
                                            "<|im_end|>", "<|eot_id|>", "<eos>", NULL};
    if (t->bos < 0) t->bos = find_first(t, bos_names);
    if (t->eos < 0) t->eos = find_first(t, eos_names);
    snprintf(t->kind, sizeof t->kind, "%s/tokenizer.json (%d tokens)", t->spm ? "spm" : "bpe", t->n_vocab);
    return t->spm ? aha_tok_decoder(t) : 0;
}

int aha_tok_parse_json(aha_tokenizer **out, const char *name, const char *json, size_t len) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        aha_err("%s: not valid JSON", name);
        return -1;
    }
    aha_tokenizer *t = NULL;
    int rc = json_build(&t, root);
    cJSON_Delete(root);
    if (rc != 0) {
        aha_err_prefix(name);
        aha_tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int aha_tok_load_json(aha_tokenizer **out, const char *path) {
    aha_map m;
    *out = NULL;
    if (aha_map_open(&m, path) != 0) return -1;
    int rc = aha_tok_parse_json(out, path, (const char *)m.data, m.size);
    aha_map_close(&m);
    return rc;
}
