// aha info TRACE (aha inspect): what a trace holds -- its settings,
// provenance, documents, runs, datasets and completeness -- as text or, with
// --json, one JSON object. Everything comes from the schema's tables
// (trace_schema.h): a row added there shows up here unchanged.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "err.h"
#include "flags.h"
#include "report.h"
#include "trace_read.h"

// An exact integer (cJSON's numbers are doubles: a trace_id needs all 64 bits).
static cJSON *int_json(int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static cJSON *num_json(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

// Row a's value in obj (the struct of a->obj), typed as the row says.
static cJSON *attr_json(const trace_attr *a, const void *obj) {
    if (a->obj == OBJ_CONST) return cJSON_CreateString(a->value);
    const char *p = (const char *)obj + a->off;
    int n = a->n_off ? *(const int *)((const char *)obj + a->n_off) : 0;
    cJSON *list = a->n_off ? cJSON_CreateArray() : NULL;
    switch (a->kind) {
    case AK_STR: {
        const char *s = *(const char *const *)p;
        return cJSON_CreateString(s ? s : a->value ? a->value : "");
    }
    case AK_INT: return int_json(*(const int *)p);
    case AK_I64: return int_json(*(const int64_t *)p);
    case AK_F64: return num_json(*(const double *)p);
    case AK_F64S:
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(list, num_json((*(const double *const *)p)[i]));
        return list;
    case AK_INTS:
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(list, int_json((*(const int *const *)p)[i]));
        return list;
    }
    return cJSON_CreateNull();
}

// Every attribute row of group g into object o, keyed by its name; o.
static cJSON *group_add(cJSON *o, const trace_group *g, void *const obj[OBJ_COUNT]) {
    for (int i = 0; i < g->n_attrs; i++)
        cJSON_AddItemToObject(o, g->attrs[i].name, attr_json(&g->attrs[i], obj[g->attrs[i].obj]));
    return o;
}

static cJSON *runs_json(const aha_tr *tr) {
    cJSON *runs = cJSON_CreateArray();
    for (int r = 0; r < tr->n_runs; r++) {
        void *obj[OBJ_COUNT] = {[OBJ_RUN] = (void *)&tr->runs[r]};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", tr->runs[r].name);
        group_add(o, &trace_groups[TG_RUN], obj);
        cJSON_AddBoolToObject(o, "gate", tr->runs[r].has_gate);
        cJSON_AddItemToArray(runs, o);
    }
    return runs;
}

// Every dataset the schema's rows name for this trace, as the file stores it.
static cJSON *datasets_json(const aha_tr *tr) {
    cJSON *all = cJSON_CreateObject();
    for (int id = 0; id < TD_COUNT; id++)
        for (int i = 0; i < aha_tr_n_instances(tr, id); i++) {
            if (!aha_tr_has(tr, id, i)) continue;
            char name[160];
            aha_tr_dset d;
            if (aha_tr_dset_info(tr, aha_tr_name(tr, id, i, name, sizeof name), &d) != 0) {
                cJSON_Delete(all);
                return NULL;
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "key", trace_dsets[id].key);
            if (d.rank == 0) {
                cJSON_AddStringToObject(o, "layout", "missing");
            } else {
                cJSON *shape = cJSON_AddArrayToObject(o, "shape");
                for (int k = 0; k < d.rank; k++) cJSON_AddItemToArray(shape, int_json(d.dims[k]));
                cJSON_AddStringToObject(o, "dtype", d.dtype);
                cJSON_AddStringToObject(o, "layout", d.layout);
                cJSON_AddItemToObject(o, "bytes", int_json(d.bytes));
            }
            cJSON_AddItemToObject(all, name, o);
        }
    return all;
}

// Complete or not, what an unfinished one holds, and which shards of its run.
static cJSON *completeness_json(const aha_tr *tr) {
    int parts, missing, n_shards;
    unsigned char *have;
    if (aha_tr_parts(tr, &parts, &missing) != 0) return NULL;
    if (aha_tr_shard_parse(tr->m.shard, &n_shards, &have) != 0) {
        aha_err("%s: shard attribute '%s' is not I/N", tr->path, tr->m.shard);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "complete", tr->complete);
    cJSON_AddItemToObject(o, "documents_durable", int_json(tr->n_docs));
    cJSON_AddItemToObject(o, "tokens_durable", int_json(tr->n_tokens));
    cJSON_AddItemToObject(o, "parts", int_json(parts));
    cJSON_AddItemToObject(o, "parts_missing", int_json(missing));
    cJSON_AddStringToObject(o, "shard", tr->m.shard);
    cJSON_AddItemToObject(o, "shards_of", int_json(n_shards));
    cJSON *in = cJSON_AddArrayToObject(o, "shards_present"), *out = cJSON_AddArrayToObject(o, "shards_missing");
    for (int i = 0; i < n_shards; i++) cJSON_AddItemToArray(have[i] ? in : out, int_json(i));
    free(have);
    return o;
}

// Global and natively local layers (layer_window): what the report counts.
static cJSON *layers_json(const aha_trace_meta *m) {
    cJSON *o = cJSON_CreateObject(), *loc = cJSON_CreateArray();
    char label[160];
    aha_trace_layers_label(m, label, sizeof label);
    for (int l = 0; l < m->n_layers; l++)
        if (aha_trace_layer_window(m, l)) cJSON_AddItemToArray(loc, int_json(l));
    cJSON_AddItemToObject(o, "n_layers", int_json(m->n_layers));
    cJSON_AddItemToObject(o, "n_global", int_json(aha_trace_n_global(m)));
    cJSON_AddItemToObject(o, "local", loc);
    cJSON_AddStringToObject(o, "counted", label);
    return o;
}

static cJSON *trace_json(const aha_tr *tr) {
    aha_tr_attrs at;
    if (aha_tr_attrs_read(tr, &at) != 0) return NULL;
    void *root[OBJ_COUNT], *prov[OBJ_COUNT];
    aha_tr_attrs_obj(&at, TG_ROOT, root);
    aha_tr_attrs_obj(&at, TG_PROVENANCE, prov);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", tr->path);
    cJSON_AddStringToObject(o, "kind", "trace");
    cJSON_AddItemToObject(o, "attributes", group_add(cJSON_CreateObject(), &trace_groups[TG_ROOT], root));
    cJSON_AddItemToObject(o, "provenance", group_add(cJSON_CreateObject(), &trace_groups[TG_PROVENANCE], prov));
    cJSON_AddItemToObject(o, "documents", int_json(tr->n_docs));
    cJSON_AddItemToObject(o, "tokens", int_json(tr->n_tokens));
    cJSON_AddItemToObject(o, "runs", runs_json(tr));
    cJSON_AddItemToObject(o, "layers", layers_json(&tr->m));
    aha_tr_attrs_free(&at);
    cJSON *ds = datasets_json(tr), *c = ds ? completeness_json(tr) : NULL;
    if (!c) {
        cJSON_Delete(ds);
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(o, "datasets", ds);
    cJSON_AddItemToObject(o, "completeness", c);
    return o;
}

// ---- text: the same object, for people ----

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

// A value as text: strings and numbers as they are, lists comma-separated.
static void value_text(const cJSON *v, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    if (cJSON_IsArray(v)) {
        for (const cJSON *x = v->child; x && k + 1 < size; x = x->next) {
            if (x != v->child) out[k++] = ',', out[k] = '\0';
            value_text(x, out + k, size - k);
            k += strlen(out + k);
        }
    } else if (cJSON_IsString(v) && !v->valuestring[0]) {
        snprintf(out, size, "\"\""); // an empty string, seen as one
    } else if (cJSON_IsString(v) || cJSON_IsRaw(v)) {
        snprintf(out, size, "%s", v->valuestring);
    } else if (cJSON_IsBool(v)) {
        snprintf(out, size, "%s", cJSON_IsTrue(v) ? "yes" : "no");
    } else {
        snprintf(out, size, "null");
    }
}

static int64_t int_of(const cJSON *v) { return v ? strtoll(v->valuestring, NULL, 10) : 0; }

static void section_text(const char *title, const cJSON *o) {
    printf("%s\n", title);
    for (const cJSON *x = o->child; x; x = x->next) {
        char v[4096];
        value_text(x, v, sizeof v);
        size_t n = strlen(v);
        while (n && v[n - 1] == '\n') v[--n] = '\0';
        printf("  %-16s ", x->string);
        for (const char *p = v; *p; p++) // a value of several lines (model_sha256): each under the first
            if (*p == '\n') printf("\n%19s", "");
            else putchar(*p);
        printf("\n");
    }
}

static void status_text(const char *path, const cJSON *c) {
    int64_t parts = int_of(get(c, "parts")), missing = int_of(get(c, "parts_missing"));
    const char *base = strrchr(path, '/');
    char where[64] = ", no part files yet";
    if (parts) snprintf(where, sizeof where, ", in %" PRId64 " part file%s%s", parts, parts == 1 ? "" : "s",
                        missing ? "" : ", all present");
    if (cJSON_IsTrue(get(c, "complete")))
        printf("status         complete\n");
    else
        printf("status         unfinished (a killed, stopped or running record): %" PRId64 " documents durable%s; "
               "aha record --resume continues a stopped one\n", int_of(get(c, "documents_durable")), where);
    if (missing)
        printf("               %" PRId64 " of them missing (the index goes with %s.parts/): their data reads as "
               "fill values\n", missing, base ? base + 1 : path);
    char in[2048], out[2048];
    value_text(get(c, "shards_present"), in, sizeof in);
    value_text(get(c, "shards_missing"), out, sizeof out);
    int64_t n = int_of(get(c, "shards_of"));
    if (n == 0) printf("shard          all documents (not a shard)\n");
    else printf("shard          %s: shards %s of %" PRId64 "%s%s\n", get(c, "shard")->valuestring, in, n,
                out[0] ? "; the run's others, in other traces: " : "", out);
}

static void trace_text(const cJSON *o) {
    const cJSON *runs = get(o, "runs"), *ds = get(o, "datasets");
    printf("trace          %s\n", get(o, "path")->valuestring);
    status_text(get(o, "path")->valuestring, get(o, "completeness"));
    printf("documents      %s (%s tokens)\n", get(o, "documents")->valuestring, get(o, "tokens")->valuestring);
    const cJSON *ly = get(o, "layers");
    char loc[4096];
    value_text(get(ly, "local"), loc, sizeof loc);
    if (!get(ly, "local")->child)
        printf("layers         %s, all global (full causal)\n", get(ly, "n_layers")->valuestring);
    else
        printf("layers         %s, %s global; natively local (layer_window): %s; the report counts %s\n",
               get(ly, "n_layers")->valuestring, get(ly, "n_global")->valuestring, loc, get(ly, "counted")->valuestring);
    section_text("settings", get(o, "attributes"));
    section_text("provenance", get(o, "provenance"));
    printf("runs%s\n", runs->child ? "" : "           none yet (declared with the first document)");
    for (const cJSON *r = runs->child; r; r = r->next) {
        printf("  %-16s", get(r, "name")->valuestring);
        for (const cJSON *x = r->child->next; x; x = x->next) {
            char v[256];
            value_text(x, v, sizeof v);
            printf(" %s %s%s", x->string, v, x->next ? "," : "\n");
        }
    }
    printf("datasets\n");
    for (const cJSON *d = ds->child; d; d = d->next) {
        char shape[128];
        const cJSON *dt = get(d, "dtype");
        value_text(get(d, "shape"), shape, sizeof shape);
        printf("  %-28s %-8s [%s] %s", d->string, dt ? dt->valuestring : "-", shape, get(d, "layout")->valuestring);
        if (get(d, "bytes") && int_of(get(d, "bytes"))) printf(", %s bytes", get(d, "bytes")->valuestring);
        printf("\n");
    }
}

int aha_cmd_info_trace(int argc, char **argv) {
    int json = 0;
    const aha_flag flags[] = {{"--json", FLAG_BOOL, &json, AHA_INFO_JSON, NULL},
                              {NULL, 0, NULL, NULL, NULL}};
    const char *pos[1];
    AHA_PARSE(AHA_INFO_USAGE, flags, pos, 1);
    aha_tr tr;
    if (aha_tr_open_empty(&tr, pos[0]) != 0) return aha_cli_fail();
    cJSON *o = trace_json(&tr);
    aha_tr_close(&tr);
    if (!o) return aha_cli_fail();
    aha_report_exact(o); // every number as the shortest text that reads back exactly
    if (json) {
        char *s = cJSON_PrintUnformatted(o);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        trace_text(o);
    }
    cJSON_Delete(o);
    return 0;
}
