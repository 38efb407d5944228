// Benchmark records -> the text a model sees: the lm-eval-harness prompt with
// the correct answer appended, so the whole solved example is one document.
#include "prompt.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Python's str.strip() (ASCII whitespace) on t->p[from..len), in place.
static void strip_from(aha_buf *t, size_t from) {
    if (t->failed) return;
    size_t a = from, b = t->len;
    while (a < b && is_space(t->p[a])) a++;
    while (b > a && is_space(t->p[b - 1])) b--;
    memmove(t->p + from, t->p + a, b - a);
    aha_buf_cut(t, from + (b - a));
}

static void add_stripped(aha_buf *t, const char *s) {
    size_t from = t->len;
    aha_buf_cat(t, s, NULL);
    strip_from(t, from);
}

// ---- field access: each failure sets the problem (the caller adds where) ----

static const char *json_kind(const cJSON *j) {
    return cJSON_IsString(j) ? "a string" : cJSON_IsNumber(j) ? "a number"
         : cJSON_IsArray(j)  ? "an array" : cJSON_IsObject(j) ? "an object"
         : cJSON_IsBool(j)   ? "a boolean" : "null";
}

static const cJSON *field(const cJSON *o, const char *key, int want(const cJSON *), const char *what) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (j && want(j)) return j;
    if (!j) aha_err("no \"%s\" field", key);
    else aha_err("\"%s\" is %s, not %s", key, json_kind(j), what);
    return NULL;
}

static const char *field_str(const cJSON *o, const char *key) {
    const cJSON *j = field(o, key, cJSON_IsString, "a string");
    return j ? j->valuestring : NULL;
}

// A non-empty array of strings.
static const cJSON *field_strings(const cJSON *o, const char *key) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    int i = 0;
    for (const cJSON *e = cJSON_IsArray(j) ? j->child : NULL; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) {
            aha_err("\"%s\"[%d] is %s, not a string", key, i, json_kind(e));
            return NULL;
        }
    }
    if (i > 0) return j;
    if (!j) aha_err("no \"%s\" field", key);
    else aha_err("\"%s\" is %s, not a non-empty array of strings", key, json_kind(j));
    return NULL;
}

// ---- templates (documented in dataset.h) ----

static int gsm8k(aha_buf *t, const cJSON *r) {
    const char *q = field_str(r, "question"), *a = q ? field_str(r, "answer") : NULL;
    if (!a) return -1;
    aha_buf_cat(t, "Question: ", q, "\nAnswer: ", a, NULL);
    return 0;
}

static int mbpp(aha_buf *t, const cJSON *r) {
    const char *task = field_str(r, "text"), *code = task ? field_str(r, "code") : NULL;
    const cJSON *tests = code ? field_strings(r, "test_list") : NULL;
    if (!tests) return -1;
    aha_buf_cat(t, "You are an expert Python programmer, and here is your task: ", task,
                 " Your code should pass these tests:\n\n", NULL);
    for (const cJSON *e = tests->child; e; e = e->next) aha_buf_cat(t, e->valuestring, "\n", NULL);
    aha_buf_cat(t, "[BEGIN]\n", code, "\n[DONE]", NULL);
    return 0;
}

// lm-eval-harness's hellaswag preprocess() on t->p[from..len), in place (every
// step only shrinks the text): strip; " [title]" -> ". "; drop "[...]"
// (shortest, not across a newline, as the regex "\[.*?\]"); "  " -> " ".
static void hs_preprocess(aha_buf *t, size_t from) {
    strip_from(t, from);
    if (t->failed) return;
    char *s = t->p + from;
    size_t n = t->len - from, i, w;
    for (i = w = 0; i < n;) {
        if (n - i >= 8 && memcmp(s + i, " [title]", 8) == 0) {
            s[w++] = '.', s[w++] = ' ', i += 8;
        } else {
            s[w++] = s[i++];
        }
    }
    for (n = w, i = w = 0; i < n;) {
        size_t j = i + 1;
        while (s[i] == '[' && j < n && s[j] != ']' && s[j] != '\n') j++;
        if (s[i] == '[' && j < n && s[j] == ']') i = j + 1;
        else s[w++] = s[i++];
    }
    for (n = w, i = w = 0; i < n;) {
        s[w++] = s[i];
        i += i + 1 < n && s[i] == ' ' && s[i + 1] == ' ' ? 2 : 1;
    }
    aha_buf_cut(t, from + w);
}

// "label" as in the HF (string "2") and original (number 2) files: an index
// into n endings, or -1.
static int hs_label(const cJSON *r, int n) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r, "label");
    double v = -1;
    if (cJSON_IsNumber(j)) v = j->valuedouble;
    else if (cJSON_IsString(j) && j->valuestring[0] && !j->valuestring[strspn(j->valuestring, "0123456789")])
        v = atof(j->valuestring);
    if (v >= 0 && v < n && v == (int)v) return (int)v;
    if (!j) aha_err("no \"label\" field");
    else aha_err("\"label\" is not an ending index 0..%d", n - 1);
    return -1;
}

static int hellaswag(aha_buf *t, const cJSON *r) {
    const cJSON *endings = field_strings(r, "endings");
    int label = endings ? hs_label(r, cJSON_GetArraySize(endings)) : -1;
    if (label < 0) return -1;
    const char *act = NULL, *ctx_a = NULL, *ctx_b = NULL, *ctx = NULL;
    if (cJSON_GetObjectItemCaseSensitive(r, "activity_label") && !(act = field_str(r, "activity_label")))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(r, "ctx_a")) {
        if (!(ctx_a = field_str(r, "ctx_a")) || !(ctx_b = field_str(r, "ctx_b"))) return -1;
    } else if (!(ctx = field_str(r, "ctx"))) {
        return -1;
    }
    size_t from = t->len;
    if (act) aha_buf_cat(t, act, ": ", NULL);
    if (ctx) {
        aha_buf_cat(t, ctx, NULL);
    } else {
        aha_buf_cat(t, ctx_a, " ", NULL);
        size_t b = t->len;
        aha_buf_cat(t, ctx_b, NULL);
        for (size_t i = b; !t->failed && i < t->len; i++) // str.capitalize()
            t->p[i] = (char)(i == b ? toupper((unsigned char)t->p[i]) : tolower((unsigned char)t->p[i]));
    }
    hs_preprocess(t, from);
    aha_buf_cat(t, " ", NULL);
    from = t->len;
    aha_buf_cat(t, cJSON_GetArrayItem(endings, label)->valuestring, NULL);
    hs_preprocess(t, from);
    return 0;
}

static int csqa(aha_buf *t, const cJSON *r) {
    const cJSON *q = field(r, "question", cJSON_IsObject, "an object");
    const char *stem = q ? field_str(q, "stem") : NULL;
    const cJSON *choices = stem ? field(q, "choices", cJSON_IsArray, "an array") : NULL;
    const char *key = choices ? field_str(r, "answerKey") : NULL;
    if (!key) return -1;
    aha_buf_cat(t, "Question: ", NULL);
    add_stripped(t, stem);
    aha_buf_cat(t, "\n", NULL);
    int i = 0, found = 0;
    for (const cJSON *c = choices->child; c; c = c->next, i++) {
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(c, "label");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");
        if (!cJSON_IsString(label) || !cJSON_IsString(text)) {
            aha_err("\"choices\"[%d] is not {\"label\": string, \"text\": string}", i);
            return -1;
        }
        aha_buf_cat(t, label->valuestring, ". ", text->valuestring, "\n", NULL);
        found |= strcmp(label->valuestring, key) == 0;
    }
    if (!found) {
        aha_err("\"answerKey\" is not one of the %d choice labels", i);
        return -1;
    }
    aha_buf_cat(t, "Answer: ", key, NULL);
    return 0;
}

// Append s[0..n) stripped, with the raw Multi-News newline marker undone.
static void mn_add(aha_buf *t, const char *s, size_t n) {
    static const char mark[] = "NEWLINE_CHAR";
    size_t from = t->len;
    for (const char *m; (m = memmem(s, n, mark, sizeof mark - 1));) {
        aha_buf_add(t, s, (size_t)(m - s));
        aha_buf_add(t, "\n", 1);
        n -= (size_t)(m - s) + sizeof mark - 1;
        s = m + sizeof mark - 1;
    }
    aha_buf_add(t, s, n);
    strip_from(t, from);
}

static int multinews(aha_buf *t, const cJSON *r) {
    const char *doc = field_str(r, "document"), *sum = doc ? field_str(r, "summary") : NULL;
    if (!sum) return -1;
    size_t start = t->len;
    for (const char *a = doc, *end;; a = end + 5) {
        end = strstr(a, "|||||");
        size_t mark = t->len;
        if (mark > start) aha_buf_add(t, "\n\n", 2);
        size_t from = t->len;
        mn_add(t, a, end ? (size_t)(end - a) : strlen(a));
        if (t->len == from) aha_buf_cut(t, mark); // an empty article
        if (!end) break;
    }
    if (t->len == start) {
        aha_err("\"document\" holds no article");
        return -1;
    }
    aha_buf_add(t, "\n\nSummary: ", 11);
    mn_add(t, sum, strlen(sum));
    return 0;
}

aha_ds_format aha_prompt_sniff(const cJSON *r) {
#define HAS(key) cJSON_GetObjectItemCaseSensitive(r, key)
    return HAS("test_list")                  ? AHA_DS_MBPP
         : HAS("endings")                    ? AHA_DS_HELLASWAG
         : HAS("answerKey")                  ? AHA_DS_CSQA
         : HAS("document") && HAS("summary") ? AHA_DS_MULTINEWS
         : HAS("question") && HAS("answer")  ? AHA_DS_GSM8K
                                             : AHA_DS_JSONL;
#undef HAS
}

int aha_prompt_json(aha_buf *out, aha_ds_format f, const cJSON *rec, const char *text_field) {
    const char *s;
    switch (f) {
    case AHA_DS_JSONL:
        if (!(s = field_str(rec, text_field))) return -1;
        aha_buf_cat(out, s, NULL);
        return 0;
    case AHA_DS_GSM8K: return gsm8k(out, rec);
    case AHA_DS_MBPP: return mbpp(out, rec);
    case AHA_DS_HELLASWAG: return hellaswag(out, rec);
    case AHA_DS_CSQA: return csqa(out, rec);
    case AHA_DS_MULTINEWS: return multinews(out, rec);
    default:
        aha_err("%s is not a JSON format", aha_ds_format_name(f));
        return -1;
    }
}

int aha_prompt_mmlu(aha_buf *out, const char *const col[6]) {
    size_t n = strlen(col[5]), a = strspn(col[5], " \t");
    if (n - a < 1 || !strchr("ABCD", col[5][a]) || strspn(col[5] + a + 1, " \t") != n - a - 1) {
        aha_err("answer column is not A, B, C or D");
        return -1;
    }
    add_stripped(out, col[0]);
    aha_buf_cat(out, "\nA. ", col[1], "\nB. ", col[2], "\nC. ", col[3], "\nD. ", col[4],
                 "\nAnswer: ", NULL);
    aha_buf_add(out, col[5] + a, 1);
    return 0;
}
