// Dataset readers: the path becomes a list of files (one, or a folder's); each
// file is mapped and read record by record, so only one file is open and only
// one document is built at a time.
#include "dataset.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "buf.h"
#include "err.h"
#include "utf8.h"
#include "mapfile.h"
#include "prompt.h"

#define TOK_MAGIC "AHATOK01"
#define TOK_HEADER 16 // magic + u64 n_docs; keeps every id 4-byte aligned

struct aha_dataset {
    char *root;             // the path opened, without trailing '/'
    aha_ds_opts opts;       // as given; text_field never NULL
    int auto_shape;         // AUTO without text_field: sniff each JSON file's shape
    int in_folder;          // root is a folder: binary files are noted and skipped
    char **files;           // [n_files] owned paths in reading order
    size_t n_files, cap_files;
    size_t next_file;       // index of the next file to open
    // the file being read
    int open;               // a file is open (map, fmt, pos... are its)
    const char *path;       // files[next_file - 1]
    aha_map map;            // its bytes
    aha_ds_format fmt;      // its format, never AUTO
    int sniff;              // its JSON shape is still to be decided
    size_t pos;             // byte offset of the next record
    int64_t line;           // 1-based line at pos (text formats)
    uint64_t docs_left;     // token files: documents the header still promises
    uint64_t doc_no;        // token files: 1-based number of the last document
    // the document handed out
    aha_buf text;           // built text (JSON and CSV formats)
    aha_buf fields;         // CSV: the record's unquoted fields, NUL-separated
    char name[PATH_MAX + 32]; // "path", "path:line" or "path#doc"
    size_t source_at;       // where a name's part relative to root starts (aha_doc.source)
    int64_t n_docs;         // documents read so far, `first` included
    unsigned read_as;       // bit f: a document was read as format f
    aha_doc first;          // read by open, handed out by the first next
    int first_pending;      // first not handed out yet
};

// ---- bad input ----

// Bad input at `where`, the problem in aha_errmsg(): with skip_bad, 0 after
// reporting it on stderr; else -1 with "where: problem" as the error.
static int bad(const aha_dataset *d, const char *where) {
    aha_err_prefix(where);
    if (!d->opts.skip_bad) return -1;
    if (!d->opts.quiet) fprintf(stderr, "aha: %s (skipped)\n", aha_errmsg());
    return 0;
}

static int bad_line(aha_dataset *d, int64_t line) {
    char where[sizeof d->name];
    snprintf(where, sizeof where, "%s:%" PRId64, d->path, line);
    return bad(d, where);
}

// 0 when s[0..n) is valid UTF-8 without NUL; else -1 with the problem set and
// *line (the line s starts on) moved to the line of the bad byte.
static int check_utf8(const char *s, size_t n, int64_t *line) {
    size_t bad_at = aha_utf8_valid_prefix(s, n, 0), col = bad_at + 1;
    if (bad_at == n) return 0;
    for (size_t i = 0; i < bad_at; i++) {
        if (s[i] == '\n') ++*line, col = bad_at - i;
    }
    if (s[bad_at]) aha_err("invalid UTF-8 (byte 0x%02x at column %zu)", (uint8_t)s[bad_at], col);
    else aha_err("NUL byte at column %zu", col);
    return -1;
}

static int is_blank(const char *s, size_t n) {
    while (n && (*s == ' ' || (*s >= '\t' && *s <= '\r'))) s++, n--;
    return n == 0;
}

// ---- text: the whole file ----

static int read_text(aha_dataset *d, aha_doc *doc) {
    const char *s = (const char *)d->map.data;
    size_t n = d->map.size;
    if (d->pos == n) return 0;
    d->pos = n;
    const char *nul = memchr(s, 0, n);
    if (nul && d->in_folder) {
        if (!d->opts.quiet) fprintf(stderr, "aha: note: %s: binary file, skipped\n", d->path);
        return 0;
    }
    if (nul) {
        aha_err("binary file (NUL byte at offset %zu)", (size_t)(nul - s));
        return bad(d, d->path);
    }
    int64_t line = 1;
    if (check_utf8(s, n, &line)) return bad_line(d, line);
    snprintf(d->name, sizeof d->name, "%s", d->path);
    doc->text = s;
    doc->len = n;
    return 1;
}

// ---- JSON lines: jsonl and the JSON benchmark shapes ----

// cJSON ends its strings at a NUL, so a "\u0000" escape would cut a text
// (or a key) there without a word: 0, or -1 with the column of the first.
static int check_json_nul(const char *s, size_t n) {
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') in_str = !in_str;
        if (!in_str || s[i] != '\\' || ++i == n) continue; // s[i]: what the backslash escapes
        if (s[i] == 'u' && n - i > 4 && !memcmp(s + i + 1, "0000", 4)) {
            aha_err("\\u0000 (a NUL character) in a JSON string at column %zu: a document cannot hold it", i);
            return -1;
        }
    }
    return 0;
}

// One non-blank line into d->text: 1, 0 (bad and skipped) or -1.
static int json_record(aha_dataset *d, const char *s, size_t n, int64_t line) {
    int64_t at = line;
    if (check_utf8(s, n, &at) || check_json_nul(s, n)) return bad_line(d, line);
    const char *end = s;
    cJSON *rec = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    int rc = -1;
    if (!rec) {
        aha_err("invalid JSON at column %zu", (size_t)(end - s) + 1);
    } else if (!is_blank(end, n - (size_t)(end - s))) {
        aha_err("text after the JSON value at column %zu", (size_t)(end - s) + 1);
    } else if (!cJSON_IsObject(rec)) {
        aha_err("not a JSON object");
    } else {
        if (d->sniff) d->fmt = aha_prompt_sniff(rec);
        d->sniff = 0;
        aha_buf_clear(&d->text);
        rc = aha_prompt_json(&d->text, d->fmt, rec, d->opts.text_field);
        if (rc == 0 && d->text.len == 0 && !d->text.failed) {
            aha_err("empty document");
            rc = -1;
        }
    }
    cJSON_Delete(rec);
    if (d->text.failed) {
        aha_err("%s:%" PRId64 ": out of memory", d->path, line);
        return -1;
    }
    if (rc < 0) return bad_line(d, line);
    snprintf(d->name, sizeof d->name, "%s:%" PRId64, d->path, line);
    return 1;
}

static int read_json(aha_dataset *d, aha_doc *doc) {
    const char *data = (const char *)d->map.data;
    while (d->pos < d->map.size) {
        const char *s = data + d->pos, *nl = memchr(s, '\n', d->map.size - d->pos);
        size_t n = nl ? (size_t)(nl - s) : d->map.size - d->pos;
        int64_t line = d->line++;
        d->pos += n + (nl != NULL);
        if (is_blank(s, n)) continue;
        int rc = json_record(d, s, n, line);
        if (rc == 1) {
            doc->text = d->text.p;
            doc->len = d->text.len;
        }
        if (rc) return rc;
    }
    return 0;
}

// ---- CSV (MMLU) ----

// Parse the RFC 4180 record at d->pos into d->fields (NUL-separated) and move
// pos and line past it. The column count, or -1 for an unterminated quote.
static int csv_record(aha_dataset *d) {
    const char *s = (const char *)d->map.data;
    size_t i = d->pos, n = d->map.size;
    int cols = 1, quoted = 0, field_start = 1; // field_start: a quote here opens quoting
    aha_buf_clear(&d->fields);
    for (; i < n; i++) {
        char c = s[i];
        if (quoted) {
            if (c == '"' && i + 1 < n && s[i + 1] == '"') i++; // "" is a quote
            else if (c == '"') quoted = 0, c = 0;
            d->line += c == '\n';
        } else if (c == '"' && field_start) {
            quoted = 1, c = 0;
        } else if (c == ',') {
            cols++, c = 0, aha_buf_add(&d->fields, "", 1);
        } else if (c == '\n') {
            d->line++, i++;
            break;
        } else if (c == '\r' && i + 1 < n && s[i + 1] == '\n') {
            c = 0;
        }
        field_start = !quoted && s[i] == ',';
        if (c) aha_buf_add(&d->fields, &c, 1);
    }
    d->pos = i;
    if (!quoted) return cols;
    aha_err("unterminated quoted field");
    return -1;
}

static int read_csv(aha_dataset *d, aha_doc *doc) {
    const char *data = (const char *)d->map.data;
    while (d->pos < d->map.size) {
        size_t start = d->pos;
        int64_t line = d->line, at = line;
        int cols = csv_record(d);
        if (d->fields.failed) {
            aha_err("%s:%" PRId64 ": out of memory", d->path, line);
            return -1;
        }
        if (cols == 1 && d->fields.len == 0) continue; // a blank line
        const char *col[6];
        int rc = cols < 0 ? -1 : check_utf8(data + start, d->pos - start, &at);
        if (rc == 0 && cols != 6) {
            aha_err("%d columns, want 6 (question,A,B,C,D,answer)", cols);
            rc = -1;
        }
        for (int k = 0; rc == 0 && k < 6; k++)
            col[k] = k ? col[k - 1] + strlen(col[k - 1]) + 1 : d->fields.p;
        aha_buf_clear(&d->text);
        if (rc == 0) rc = aha_prompt_mmlu(&d->text, col);
        if (d->text.failed) {
            aha_err("%s:%" PRId64 ": out of memory", d->path, line);
            return -1;
        }
        if (rc < 0) {
            if (bad_line(d, at)) return -1;
            continue;
        }
        snprintf(d->name, sizeof d->name, "%s:%" PRId64, d->path, line);
        doc->text = d->text.p;
        doc->len = d->text.len;
        return 1;
    }
    return 0;
}

// ---- token files ----

static int read_tokens(aha_dataset *d, aha_doc *doc) {
    const uint8_t *p = d->map.data;
    size_t size = d->map.size;
    if (d->pos == 0) { // the header
        if (size < TOK_HEADER || memcmp(p, TOK_MAGIC, 8) != 0) {
            aha_err("not a token file (no %s header)", TOK_MAGIC);
            d->pos = size;
            return bad(d, d->path);
        }
        memcpy(&d->docs_left, p + 8, 8);
        d->pos = TOK_HEADER;
    }
    while (d->docs_left) {
        d->docs_left--;
        d->doc_no++;
        uint32_t n = 0;
        if (size - d->pos >= 4) memcpy(&n, p + d->pos, 4);
        if (size - d->pos < 4 || (size - d->pos - 4) / 4 < n) {
            aha_err("document %" PRIu64 ": truncated (%zu bytes left at offset %zu)", d->doc_no,
                    size - d->pos, d->pos);
            d->docs_left = 0;
            d->pos = size;
            return bad(d, d->path);
        }
        const int32_t *ids = (const int32_t *)(p + d->pos + 4); // mapping + 4k: aligned
        d->pos += 4 + 4 * (size_t)n;
        size_t i = 0;
        while (i < n && ids[i] >= 0) i++;
        if (n == 0) aha_err("document %" PRIu64 ": no tokens", d->doc_no);
        else if (i < n) aha_err("document %" PRIu64 ": negative token id %" PRId32 " at index %zu",
                                d->doc_no, ids[i], i);
        if (n == 0 || i < n) {
            if (bad(d, d->path)) return -1;
            continue;
        }
        snprintf(d->name, sizeof d->name, "%s#%" PRIu64, d->path, d->doc_no);
        doc->ids = ids;
        doc->n_ids = n;
        return 1;
    }
    if (d->pos == size) return 0;
    aha_err("%zu bytes after the last of %" PRIu64 " documents", size - d->pos, d->doc_no);
    d->pos = size;
    return bad(d, d->path);
}

// ---- files and folders ----

static int add_file(aha_dataset *d, char *path) {
    if (!path) {
        aha_err("out of memory");
        return -1;
    }
    if (aha_grow(&d->files, &d->cap_files, d->n_files + 1, sizeof *d->files, "file list") != 0) {
        free(path);
        return -1;
    }
    d->files[d->n_files++] = path;
    return 0;
}

static int not_hidden(const struct dirent *e) { return e->d_name[0] != '.'; }
static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

// Every regular file below dir, depth first in name order (see dataset.h).
static int list_folder(aha_dataset *d, const char *dir) {
    struct dirent **ents;
    int n = scandir(dir, &ents, not_hidden, by_name), rc = 0;
    if (n < 0) {
        aha_err("%s: cannot read folder (%s)", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char *path = NULL;
        struct stat st;
        if (rc == 0 && asprintf(&path, "%s/%s", dir, ents[i]->d_name) < 0) {
            aha_err("out of memory");
            rc = -1, path = NULL;
        }
        if (rc == 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = list_folder(d, path);
        } else if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            rc = add_file(d, path);
            path = NULL;
        }
        free(path);
        free(ents[i]);
    }
    free(ents);
    return rc;
}

// The format of the file just mapped (see "AUTO" in dataset.h).
static aha_ds_format file_format(const aha_dataset *d) {
    if (d->opts.format != AHA_DS_AUTO) return d->opts.format;
    const char *base = strrchr(d->path, '/'), *ext = strrchr(base ? base : d->path, '.');
    ext = ext ? ext : "";
    if ((d->map.size >= 8 && memcmp(d->map.data, TOK_MAGIC, 8) == 0) || !strcasecmp(ext, ".tok"))
        return AHA_DS_TOKENS;
    if (!strcasecmp(ext, ".jsonl") || !strcasecmp(ext, ".json")) return AHA_DS_JSONL;
    if (!strcasecmp(ext, ".csv")) return AHA_DS_MMLU;
    return AHA_DS_TEXT;
}

// Map the next file: 0 (opened, or skipped as empty) or -1.
static int file_open(aha_dataset *d) {
    d->path = d->files[d->next_file++];
    if (aha_map_open(&d->map, d->path) != 0) return -1;
    if (d->map.size == 0) {
        aha_err("empty file");
        return bad(d, d->path);
    }
    d->open = 1;
    d->fmt = file_format(d);
    d->sniff = d->auto_shape && d->fmt == AHA_DS_JSONL;
    d->pos = 0;
    d->line = 1;
    d->docs_left = d->doc_no = 0;
    return 0;
}

static void file_close(aha_dataset *d) {
    aha_map_close(&d->map);
    d->open = 0;
}

// The next document of the dataset: 1, 0 at the end, -1 on an error.
static int fetch(aha_dataset *d, aha_doc *doc) {
    if (d->opts.max_docs && d->n_docs >= d->opts.max_docs) return 0;
    for (;;) {
        if (!d->open) {
            if (d->next_file == d->n_files) return 0;
            if (file_open(d) < 0) return -1;
            continue;
        }
        *doc = (aha_doc){0};
        int rc = d->fmt == AHA_DS_TEXT   ? read_text(d, doc)
               : d->fmt == AHA_DS_TOKENS ? read_tokens(d, doc)
               : d->fmt == AHA_DS_MMLU   ? read_csv(d, doc)
                                         : read_json(d, doc);
        if (rc == 1) {
            doc->name = d->name;
            doc->source = d->name + d->source_at;
            d->n_docs++;
            d->read_as |= 1u << d->fmt;
        }
        if (rc) return rc;
        file_close(d);
    }
}

int aha_ds_open(aha_dataset **out, const char *path, const aha_ds_opts *opts) {
    *out = NULL;
    aha_dataset *d = aha_calloc(1, sizeof *d, "dataset");
    if (!d) return -1;
    if (opts) d->opts = *opts;
    d->auto_shape = d->opts.format == AHA_DS_AUTO && !d->opts.text_field;
    if (!d->opts.text_field) d->opts.text_field = "text";
    d->root = strdup(path);
    size_t n = d->root ? strlen(d->root) : 0;
    while (n > 1 && d->root[n - 1] == '/') d->root[--n] = '\0';
    struct stat st;
    int rc = -1;
    if (!d->root) aha_err("out of memory");
    else if ((unsigned)d->opts.format >= (unsigned)aha_ds_formats.n)
        aha_err("%s: unknown dataset format %d", path, (int)d->opts.format);
    else if (d->opts.max_docs < 0) aha_err("%s: max_docs must be >= 0", path);
    else if (stat(d->root, &st) != 0) aha_err("%s: cannot open (%s)", path, strerror(errno));
    else if ((d->in_folder = S_ISDIR(st.st_mode))) rc = list_folder(d, d->root);
    else rc = add_file(d, strdup(d->root));
    // a folder's files are root/...; a single file is named by its base name
    const char *base = d->root ? strrchr(d->root, '/') : NULL;
    d->source_at = d->in_folder ? n + 1 : base ? (size_t)(base - d->root) + 1 : 0;
    if (rc == 0) rc = fetch(d, &d->first);
    if (rc == 0) aha_err("%s: no documents", path), rc = -1;
    if (rc < 0) {
        aha_ds_close(d);
        return -1;
    }
    d->first_pending = 1;
    *out = d;
    return 0;
}

const char *aha_ds_read_as(const aha_dataset *d, char *buf, size_t size) {
    size_t k = 0;
    buf[0] = '\0';
    for (int f = 0; f < aha_ds_formats.n; f++)
        if (d->read_as >> f & 1 && k < size)
            k += (size_t)snprintf(buf + k, size - k, "%s%s", k ? "+" : "", aha_ds_format_name((aha_ds_format)f));
    return buf;
}

int aha_ds_next(aha_dataset *d, aha_doc *doc) {
    if (!d->first_pending) return fetch(d, doc);
    d->first_pending = 0;
    *doc = d->first;
    return 1;
}

void aha_ds_close(aha_dataset *d) {
    if (!d) return;
    aha_map_close(&d->map);
    for (size_t i = 0; i < d->n_files; i++) free(d->files[i]);
    free(d->files);
    free(d->root);
    aha_buf_free(&d->text);
    aha_buf_free(&d->fields);
    free(d);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "documents' token ids are hashed as stored in memory, which must be little-endian"
#endif

int aha_doc_sha256(const aha_doc *doc, char hex[AHA_SHA256_HEX]) {
    return doc->text ? aha_sha256_bytes(doc->text, doc->len, hex)
                     : aha_sha256_bytes(doc->ids, doc->n_ids * sizeof *doc->ids, hex);
}

int aha_doc_own(aha_doc *doc, void **keep, size_t *cap) {
    const void *from = doc->text ? (const void *)doc->text : (const void *)doc->ids;
    size_t bytes = doc->text ? doc->len : doc->n_ids * sizeof *doc->ids;
    if (aha_grow(keep, cap, bytes + 1, 1, doc->name) != 0) return -1;
    if (bytes) memcpy(*keep, from, bytes);
    if (doc->text) doc->text = *keep;
    else doc->ids = *keep;
    return 0;
}

void aha_ds_print_free(aha_ds_print *fp) {
    free(fp->docs);
    fp->docs = NULL;
}

int aha_ds_fingerprint(const char *path, const aha_ds_opts *opts, aha_ds_print *fp) {
    aha_ds_opts o = opts ? *opts : (aha_ds_opts){0};
    aha_dataset *d;
    aha_doc doc;
    char hex[AHA_SHA256_HEX];
    size_t cap = 0;
    memset(fp, 0, sizeof *fp);
    o.quiet = 1;
    if (aha_ds_open(&d, path, &o) != 0) return -1;
    aha_sha256 *all = aha_sha256_new();
    int rc = all ? 0 : -1, more = 0;
    while (rc == 0 && (more = aha_ds_next(d, &doc)) == 1) {
        rc = aha_doc_sha256(&doc, hex) || aha_sha256_add(all, hex, 64) ||
             aha_grow(&fp->docs, &cap, (size_t)(fp->n_docs + 1) * 64, 1, path);
        if (rc == 0) memcpy(fp->docs + fp->n_docs * 64, hex, 64);
        fp->n_docs++;
        fp->bytes += doc.text ? (double)doc.len : 4.0 * (double)doc.n_ids;
        if ((int)strlen(doc.source) > fp->source_width) fp->source_width = (int)strlen(doc.source);
    }
    if (rc == 0 && more < 0) rc = -1;
    if (all && aha_sha256_end(all, fp->sha256) != 0) rc = -1;
    aha_ds_close(d);
    return rc ? -1 : 0;
}
