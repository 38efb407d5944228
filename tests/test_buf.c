// The growing buffer and arrays of common/buf.h: text built piece by piece
// comes out whole, and a failed allocation (made to fail here by asking for
// more than the address space) is sticky and reported, never dropped text.
#include <stdint.h>

#include "buf.h"
#include "check.h"
#include "err.h"

// Under ASan a request this large aborts the process unless the allocator
// may return NULL, which is the failure these tests make.
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

// More bytes than a 64-bit address space (47 bits for user space) can map.
#define HUGE ((size_t)1 << 48)

static void test_build(void) {
    aha_buf b = {0};
    aha_buf_add(&b, "a\0b", 3); // bytes, a NUL inside
    aha_buf_cat(&b, "cd", "", "ef", NULL);
    aha_buf_printf(&b, "[%d %s]", 42, "x");
    CHECK(b.len == 13 && memcmp(b.p, "a\0bcdef[42 x]", 13) == 0 && b.p[b.len] == '\0', "'%s' (%zu bytes)", b.p + 3,
          b.len);
    size_t room = b.cap - b.len;
    aha_buf_printf(&b, "%0*d|", (int)room + 100, 7); // longer than the room left: formatted again, whole
    CHECK(b.len == 13 + room + 101 && b.p[13] == '0' && b.p[13 + room + 99] == '7' && b.p[b.len - 1] == '|' &&
              b.p[b.len] == '\0',
          "len %zu after a printf of %zu bytes", b.len, room + 101);
    aha_buf_cut(&b, 3);
    CHECK(b.len == 3 && b.p[3] == '\0' && !b.failed, "cut: len %zu", b.len);
    for (int i = 0; i < 10000; i++) aha_buf_printf(&b, "%d,", i % 10);
    CHECK(b.len == 3 + 20000 && !memcmp(b.p + b.len - 4, "8,9,", 4) && !b.failed, "len %zu", b.len);
    aha_buf_clear(&b);
    CHECK(b.len == 0 && b.p && b.p[0] == '\0' && b.cap > 20000, "clear: len %zu cap %zu", b.len, b.cap);
    aha_buf_free(&b);
    char *s = aha_buf_take(&b, "nothing");
    CHECK(s && s[0] == '\0' && !b.p, "an empty buffer taken: %s", s ? "not empty" : aha_errmsg());
    free(s);
}

static void test_failure(void) {
    aha_buf b = {0};
    aha_buf_cat(&b, "abc", NULL);
    aha_buf_add(&b, "x", HUGE);
    CHECK(b.failed && strstr(aha_errmsg(), "out of memory"), "a huge append: failed %d, '%s'", b.failed, aha_errmsg());
    CHECK(b.len == 3 && !strcmp(b.p, "abc"), "the text before the failure changed: '%s'", b.p);
    aha_buf_cat(&b, "def", NULL); // sticky: nothing after it lands, so nothing looks whole
    aha_buf_printf(&b, "%d", 1);
    aha_buf_add(&b, "g", 1);
    CHECK(b.failed && b.len == 3 && !strcmp(b.p, "abc"), "an append after the failure landed: '%s'", b.p);
    aha_err("unrelated");
    char *s = aha_buf_take(&b, "the test text");
    CHECK(!s && !strcmp(aha_errmsg(), "the test text: out of memory") && !b.p && !b.failed, "take: %s, '%s'",
          s ? s : "NULL", aha_errmsg());
    free(s);

    aha_buf_cat(&b, "abc", NULL);
    aha_buf_add(&b, "", SIZE_MAX - 1); // len + n + 1 would wrap
    CHECK(b.failed && strstr(aha_errmsg(), "size overflow") && b.len == 3, "an append past SIZE_MAX: '%s'",
          aha_errmsg());
    aha_buf_clear(&b);
    aha_buf_cat(&b, "ok", NULL);
    CHECK(!b.failed && !strcmp(b.p, "ok"), "clear did not reset the failure");
    aha_buf_free(&b);
}

static void test_grow(void) {
    int *a = NULL;
    size_t cap = 0;
    int ok = 1;
    for (int i = 0; ok && i < 1000; i++) {
        ok = aha_grow(&a, &cap, (size_t)i + 1, sizeof *a, "ints") == 0;
        if (ok) a[i] = i;
    }
    CHECK(ok && cap >= 1000 && cap < 2000, "cap %zu: %s", cap, aha_errmsg());
    size_t at = cap;
    CHECK(aha_grow(&a, &cap, 1, sizeof *a, "ints") == 0 && cap == at, "a smaller request moved cap to %zu", cap);
    CHECK(aha_grow(&a, &cap, HUGE, sizeof *a, "ints") == -1 && cap == at &&
              !strncmp(aha_errmsg(), "ints: out of memory", 19),
          "a huge array: cap %zu, '%s'", cap, aha_errmsg());
    CHECK(aha_grow(&a, &cap, SIZE_MAX / 2, sizeof *a, "ints") == -1 && cap == at &&
              !strncmp(aha_errmsg(), "ints: size overflow", 19),
          "an array past SIZE_MAX bytes: '%s'", aha_errmsg());
    int kept = 1;
    for (int i = 0; i < 1000; i++) kept &= a[i] == i;
    CHECK(kept, "a failed growth changed the array");
    free(a);
}

int main(void) {
    TEST("buf: bytes, strings and printf text come out whole, past any capacity", test_build());
    TEST("buf: a failed allocation is sticky, keeps the text before it and is reported by take", test_failure());
    TEST("grow: arrays grow by doubling; a failure reports, keeps the array", test_grow());
    TEST_EXIT();
}
