// A small open-addressing hash map from byte strings to non-negative int32
// values (vocabularies, BPE merge pairs). Keys are borrowed, not copied: they
// must stay put for the life of the map.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key; // borrowed
    uint32_t len;    // key length in bytes
    uint32_t hash;   // low bits of the key's hash, to skip most memcmp calls
    int32_t val;     // >= 0; -1 marks an empty slot
} aha_strmap_slot;

typedef struct {
    aha_strmap_slot *slots; // [cap], cap a power of two, at most 3/4 full
    size_t cap;
    size_t n;               // keys stored
} aha_strmap;

// An empty map sized for about n_hint keys (it grows past that; a zeroed
// map is a valid empty one too). 0 or -1.
int aha_strmap_init(aha_strmap *m, size_t n_hint);
void aha_strmap_free(aha_strmap *m);
// Map key to val (>= 0), replacing the value of an equal key. 0 or -1.
int aha_strmap_put(aha_strmap *m, const char *key, size_t len, int32_t val);
// The value of key, or -1 when absent.
int32_t aha_strmap_get(const aha_strmap *m, const char *key, size_t len);
