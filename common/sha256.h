// SHA-256 fingerprints of the inputs that shape a trace's numbers (the model's
// files, each dataset document, the router file), through OpenSSL's libcrypto
// (EVP: SHA-NI where the CPU has it). Digests are 64 lowercase hex
// characters, as sha256sum prints them.
#pragma once
#include <stddef.h>

#define AHA_SHA256_HEX 65 // 64 hex characters and the NUL

typedef struct aha_sha256 aha_sha256; // a digest being computed

// A new digest; NULL with an error when libcrypto fails.
aha_sha256 *aha_sha256_new(void);
// Feed n bytes; 0, or -1 with an error.
int aha_sha256_add(aha_sha256 *s, const void *p, size_t n);
// The digest of everything fed, as hex into hex[AHA_SHA256_HEX]; frees s
// (NULL is fine: -1). 0, or -1 with an error.
int aha_sha256_end(aha_sha256 *s, char hex[AHA_SHA256_HEX]);
// The digest of p[0..n). 0 or -1.
int aha_sha256_bytes(const void *p, size_t n, char hex[AHA_SHA256_HEX]);
// The digest of a whole file, read through its mapping. 0, or -1 with an
// error naming the file.
int aha_sha256_file(const char *path, char hex[AHA_SHA256_HEX]);
