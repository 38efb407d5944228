// Read-only memory map of a whole file (weights are never copied unless they
// must be converted).
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *data; // [size] mapped bytes; NULL when size == 0
    size_t size;         // file size in bytes
} aha_map;

// 0 on success; on failure -1 with "path: reason" in aha_errmsg().
int aha_map_open(aha_map *m, const char *path);
void aha_map_close(aha_map *m);
