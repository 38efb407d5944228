// tokenizer_config.json beside tokenizer.json: what Hugging Face reads for
// the special tokens (a string, an AddedToken object {"content": ...}, or
// null). eos_token is the end of text. Encoding follows tokenizer.json's
// post-processor, as in HF's fast tokenizers: a template that adds a BOS
// keeps it, unless add_bos_token is given (HF then rebuilds the template
// from bos_token); without such a template, bos_token and add_bos_token
// (default false) decide.
#include <string.h>

#include "err.h"
#include "mapfile.h"
#include "tokenizer_impl.h"

#include <cjson/cJSON.h>

// One special token entry into *id: absent leaves it, null clears it.
static int special(const aha_tokenizer *t, const cJSON *root, const char *key, int32_t *id) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 0;
    if (cJSON_IsNull(v)) {
        *id = -1;
        return 0;
    }
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) {
        aha_err("%s is neither a string, an object with \"content\", nor null", key);
        return -1;
    }
    if ((*id = aha_tok_find(t, v->valuestring)) < 0) {
        aha_err("%s '%.*s' is not in the vocabulary", key, SHOWS(v->valuestring));
        return -1;
    }
    return 0;
}

int aha_tok_parse_config(aha_tokenizer *t, const char *name, const char *json, size_t len) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    int rc = -1;
    int32_t bos = t->bos, eos = t->eos;
    const cJSON *add = root ? cJSON_GetObjectItemCaseSensitive(root, "add_bos_token") : NULL;
    const int from_template = t->add_bos && !add;
    if (!cJSON_IsObject(root)) aha_err("not a JSON object");
    else if (special(t, root, "eos_token", &eos) == 0 &&
             (from_template || special(t, root, "bos_token", &bos) == 0)) {
        if (add && !cJSON_IsBool(add)) aha_err("add_bos_token is not true or false");
        else if (cJSON_IsTrue(add) && bos < 0) aha_err("add_bos_token is true but there is no bos_token");
        else rc = 0;
    }
    if (rc == 0) {
        t->bos = bos, t->eos = eos;
        if (!from_template) t->add_bos = cJSON_IsTrue(add);
    } else {
        aha_err_prefix(name);
    }
    cJSON_Delete(root);
    return rc;
}

int aha_tok_load_config(aha_tokenizer *t, const char *path) {
    aha_map m;
    if (aha_map_open(&m, path) != 0) return -1;
    int rc = aha_tok_parse_config(t, path, (const char *)m.data, m.size);
    aha_map_close(&m);
    return rc;
}
