// The string hash map under the tokenizer: insert, overwrite, growth, odd keys.
#include <stdint.h>

#include "check.h"
#include "err.h"
#include "strmap.h"

static void test_growth(void) {
    enum { N = 20000 };
    static char keys[N][12];
    aha_strmap m;
    CHECK(aha_strmap_init(&m, 4) == 0, "%s", aha_errmsg());
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        CHECK(aha_strmap_put(&m, keys[i], strlen(keys[i]), i) == 0, "%s", aha_errmsg());
    }
    CHECK(m.n == N && m.n <= m.cap / 4 * 3, "n %zu cap %zu", m.n, m.cap);
    int lost = 0;
    for (int i = 0; i < N; i++) lost += aha_strmap_get(&m, keys[i], strlen(keys[i])) != i;
    CHECK(lost == 0, "%d keys lost", lost);
    CHECK(aha_strmap_get(&m, "k", 1) == -1 && aha_strmap_get(&m, "k20000", 6) == -1, "phantom key");
    aha_strmap_free(&m);
}

static void test_bytes(void) {
    aha_strmap m;
    CHECK(aha_strmap_init(&m, 0) == 0, "%s", aha_errmsg());
    static const char a[] = "ab\0c", b[] = "ab\0d";
    CHECK(aha_strmap_put(&m, a, 4, 1) == 0 && aha_strmap_put(&m, b, 4, 2) == 0, "put");
    CHECK(aha_strmap_put(&m, "ab", 2, 3) == 0 && aha_strmap_put(&m, "", 0, 4) == 0, "put");
    CHECK(aha_strmap_put(&m, "ab\0c", 4, 5) == 0, "overwrite");
    CHECK(m.n == 4, "n = %zu, want 4", m.n);
    CHECK(aha_strmap_get(&m, a, 4) == 5 && aha_strmap_get(&m, b, 4) == 2, "keys with a NUL inside");
    CHECK(aha_strmap_get(&m, "ab", 2) == 3 && aha_strmap_get(&m, "", 0) == 4, "prefix / empty key");
    CHECK(aha_strmap_put(&m, "x", 1, -1) == -1, "a negative value was stored");
    aha_strmap_free(&m);
}

static void test_zeroed(void) {
    aha_strmap m = {0};
    static const int32_t pair[2] = {3, 4};
    int32_t probe[2] = {3, 4};
    CHECK(aha_strmap_get(&m, "x", 1) == -1, "get on an empty map");
    CHECK(aha_strmap_put(&m, "x", 1, 7) == 0 && aha_strmap_get(&m, "x", 1) == 7, "put on a zeroed map");
    CHECK(aha_strmap_put(&m, (const char *)pair, sizeof pair, 9) == 0, "binary key");
    CHECK(aha_strmap_get(&m, (const char *)probe, sizeof probe) == 9, "binary key lookup");
    aha_strmap_free(&m);
}

int main(void) {
    TEST("strmap: put/get, growing far past the size hint", test_growth());
    TEST("strmap: overwrite keeps one entry; keys compare as bytes", test_bytes());
    TEST("strmap: a zeroed map is empty and usable", test_zeroed());
    TEST_EXIT();
}
