// common/sha256: the fingerprints traces store (model files, documents,
// router files). Digests compared with Python's hashlib.sha256 (the
// expected values below are its hexdigest()s), whole and fed in pieces, and a
// file read through its mapping; a missing file is one error naming it.
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "sha256.h"

static void test_vectors(void) {
    static const struct {
        const char *s;
        const char *want; // hashlib.sha256(s).hexdigest()
    } v[] = {{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
             {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char hex[AHA_SHA256_HEX];
        CHECK(aha_sha256_bytes(v[i].s, strlen(v[i].s), hex) == 0 && !strcmp(hex, v[i].want), "'%s': %s", v[i].s, hex);
    }
    // a million 'a' fed in uneven pieces: hashlib.sha256(b'a' * 1000000)
    static char a[1000000];
    memset(a, 'a', sizeof a);
    aha_sha256 *s = aha_sha256_new();
    char hex[AHA_SHA256_HEX];
    CHECK(s, "%s", aha_errmsg());
    for (size_t off = 0, step = 1; s && off < sizeof a; off += step, step = step * 3 + 1)
        CHECK(aha_sha256_add(s, a + off, off + step < sizeof a ? step : sizeof a - off) == 0, "%s", aha_errmsg());
    CHECK(aha_sha256_end(s, hex) == 0 && !strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "a x 1e6: %s", hex);
}

static void test_file(void) {
    // bytes 0..255 repeated 300 times: hashlib.sha256(bytes(range(256)) * 300)
    char path[] = "/tmp/aha_sha256_XXXXXX", hex[AHA_SHA256_HEX];
    int fd = mkstemp(path);
    unsigned char buf[256];
    for (int i = 0; i < 256; i++) buf[i] = (unsigned char)i;
    for (int k = 0; fd >= 0 && k < 300; k++) CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write");
    if (fd >= 0) close(fd);
    CHECK(aha_sha256_file(path, hex) == 0 && !strcmp(hex, "f8b0585eb91f58c007a5634362c9f90d8543822c113f702523bc7b73408a9392"),
          "file: %s %s", hex, aha_errmsg());
    unlink(path);
    CHECK(aha_sha256_file(path, hex) == -1 && strstr(aha_errmsg(), path), "missing file: %s", aha_errmsg());
}

int main(void) {
    TEST("sha256 of bytes equals hashlib's, whole and in pieces", test_vectors());
    TEST("sha256 of a file through its mapping equals hashlib's; a missing file names it", test_file());
    TEST_EXIT();
}
