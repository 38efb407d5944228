#include "sha256.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "mapfile.h"

struct aha_sha256 {
    EVP_MD_CTX *ctx; // libcrypto's state
};

aha_sha256 *aha_sha256_new(void) {
    aha_sha256 *s = aha_calloc(1, sizeof *s, "sha256");
    if (s && (!(s->ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1)) {
        EVP_MD_CTX_free(s->ctx);
        free(s);
        aha_err("sha256: libcrypto cannot start a digest");
        return NULL;
    }
    return s;
}

int aha_sha256_add(aha_sha256 *s, const void *p, size_t n) {
    if (n && EVP_DigestUpdate(s->ctx, p, n) != 1) {
        aha_err("sha256: libcrypto failed");
        return -1;
    }
    return 0;
}

int aha_sha256_end(aha_sha256 *s, char hex[AHA_SHA256_HEX]) {
    unsigned char md[32];
    unsigned n = 0;
    int ok = s && EVP_DigestFinal_ex(s->ctx, md, &n) == 1 && n == sizeof md;
    for (unsigned i = 0; ok && i < n; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (s) EVP_MD_CTX_free(s->ctx);
    free(s);
    if (!ok) aha_err("sha256: libcrypto failed");
    return ok ? 0 : -1;
}

int aha_sha256_bytes(const void *p, size_t n, char hex[AHA_SHA256_HEX]) {
    aha_sha256 *s = aha_sha256_new();
    if (!s) return -1;
    if (aha_sha256_add(s, p, n) != 0) {
        aha_sha256_end(s, hex);
        return -1;
    }
    return aha_sha256_end(s, hex);
}

int aha_sha256_file(const char *path, char hex[AHA_SHA256_HEX]) {
    aha_map m;
    if (aha_map_open(&m, path) != 0) return -1;
    int rc = aha_sha256_bytes(m.data, m.size, hex);
    aha_map_close(&m);
    if (rc) aha_err_prefix(path);
    return rc;
}
