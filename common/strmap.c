#include "strmap.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

// FNV-1a, 64-bit: short keys (tokens are a few bytes), no alignment needs.
static uint64_t strmap_hash(const char *key, size_t len) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)key[i]) * 0x100000001b3u;
    return h;
}

static aha_strmap_slot *strmap_alloc(size_t cap) {
    aha_strmap_slot *s = aha_malloc(cap, sizeof *s, "hash map");
    if (s)
        for (size_t i = 0; i < cap; i++) s[i].val = -1;
    return s;
}

int aha_strmap_init(aha_strmap *m, size_t n_hint) {
    size_t cap = 16;
    while (cap / 4 * 3 < n_hint) cap *= 2;
    m->slots = strmap_alloc(cap);
    m->cap = m->slots ? cap : 0;
    m->n = 0;
    return m->slots ? 0 : -1;
}

void aha_strmap_free(aha_strmap *m) {
    free(m->slots);
    *m = (aha_strmap){0};
}

// The slot holding key, or the empty slot where it belongs (linear probing).
static aha_strmap_slot *strmap_find(const aha_strmap *m, const char *key, size_t len, uint64_t h) {
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        aha_strmap_slot *s = &m->slots[i];
        if (s->val < 0 || (s->hash == (uint32_t)h && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

static int strmap_grow(aha_strmap *m) {
    aha_strmap old = *m;
    size_t cap = old.cap ? old.cap * 2 : 16;
    m->slots = strmap_alloc(cap);
    if (!m->slots) {
        *m = old;
        return -1;
    }
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++) {
        const aha_strmap_slot *s = &old.slots[i];
        if (s->val >= 0) *strmap_find(m, s->key, s->len, strmap_hash(s->key, s->len)) = *s;
    }
    free(old.slots);
    return 0;
}

int aha_strmap_put(aha_strmap *m, const char *key, size_t len, int32_t val) {
    if (val < 0 || len > UINT32_MAX) {
        aha_err("hash map: bad key length %zu or value %d", len, (int)val);
        return -1;
    }
    if (m->n + 1 > m->cap / 4 * 3 && strmap_grow(m) != 0) return -1;
    uint64_t h = strmap_hash(key, len);
    aha_strmap_slot *s = strmap_find(m, key, len, h);
    if (s->val < 0) m->n++;
    *s = (aha_strmap_slot){key, (uint32_t)len, (uint32_t)h, val};
    return 0;
}

int32_t aha_strmap_get(const aha_strmap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    return strmap_find(m, key, len, strmap_hash(key, len))->val;
}
