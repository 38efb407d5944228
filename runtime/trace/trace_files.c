// The trace reader's open files (trace_files.h).
#include "trace_files.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "err.h"
#include "trace_h5.h"

#define FILES_MAX 32 // open at once at most; fewer when the descriptor limit is low

typedef struct {
    uint64_t serial; // its trace's (0: a free slot)
    hid_t f;         // the open file
    uint64_t used;   // when it was last read (a counter)
} slot;

// Every command reads traces from one thread (HDF5 is not thread-safe here).
static slot pool[FILES_MAX];
static uint64_t serials, clock_now;

// How many files may be open at once: a quarter of the descriptor limit
// (a part file of an unfinished trace opens beside its index), at least 2.
static int pool_size(void) {
    struct rlimit r;
    rlim_t n = getrlimit(RLIMIT_NOFILE, &r) == 0 ? r.rlim_cur / 4 : FILES_MAX;
    return n < 2 ? 2 : n > FILES_MAX ? FILES_MAX : (int)n;
}

static slot *find(uint64_t serial) {
    for (int i = 0; serial && i < FILES_MAX; i++)
        if (pool[i].serial == serial) return &pool[i];
    return NULL;
}

// A slot for one more file: a free one, else the least recently read one,
// its file closed.
static slot *take_slot(void) {
    const int size = pool_size();
    slot *lru = NULL;
    for (int i = 0; i < size; i++) {
        if (!pool[i].serial) return &pool[i];
        if (!lru || pool[i].used < lru->used) lru = &pool[i];
    }
    trace_h5_drop(lru->f);
    lru->serial = 0;
    return lru;
}

void trace_files_add(aha_tr *tr, hid_t f) {
    slot *s = take_slot();
    tr->serial = ++serials;
    *s = (slot){tr->serial, f, ++clock_now};
}

hid_t trace_files_get(const aha_tr *tr) {
    if (tr->file >= 0) return (hid_t)tr->file; // an image in memory: open while tr is
    slot *s = find(tr->serial);
    if (s) {
        s->used = ++clock_now;
        return s->f;
    }
    if (!tr->serial) {
        aha_err("%s: a copy of the trace's attributes, without its file", tr->path);
        return -1;
    }
    struct stat st;
    if (stat(tr->path, &st) != 0) {
        aha_err("%s: cannot open it again (%s)", tr->path, strerror(errno));
        return -1;
    }
    if ((uint64_t)st.st_dev != tr->dev || (uint64_t)st.st_ino != tr->ino) {
        aha_err("%s: replaced by another file while it was read", tr->path);
        return -1;
    }
    hid_t f = trace_file_open(tr->path, 0);
    if (f < 0) {
        trace_h5_fail(tr->path, "opening it again");
        return -1;
    }
    s = take_slot();
    *s = (slot){tr->serial, f, ++clock_now};
    return f;
}

void trace_files_drop(const aha_tr *tr) {
    slot *s = find(tr->serial);
    if (!s) return;
    trace_h5_drop(s->f);
    s->serial = 0;
}
