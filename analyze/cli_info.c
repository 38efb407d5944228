// aha info TRACE (aha inspect): what a trace holds -- its settings,
// provenance, documents, runs, datasets and completeness -- as text or, with
// --json, one JSON object, both printed from what was read (trace_info) and
// the schema's tables (trace_schema.h): a row added there shows up in both
// unchanged.
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

// What a trace is, read once: the text and the JSON are both printed from
// it and the schema's rows (nothing of one is read back from the other).
typedef struct {
    const aha_tr *tr;
    aha_tr_attrs at;      // the root's and the provenance's attributes
    void *root[OBJ_COUNT], *prov[OBJ_COUNT];
    int parts, missing;   // part files of an unfinished trace, and how many are not there
    int n_shards;         // of the run (0: not a shard)
    unsigned char *have;  // [n_shards] this trace holds shard i
    char (*dname)[160];   // [n_dsets] each dataset's name in the file
    const char **key;     // [n_dsets] its schema row's key, or a coordinate's name
    aha_tr_dset *dset;    // [n_dsets] how the file stores it
    int n_dsets;
} trace_info;

static void info_free(trace_info *in) {
    aha_tr_attrs_free(&in->at);
    free(in->have);
    free(in->dname);
    free(in->key);
    free(in->dset);
}

// Every dataset the schema's rows name for this trace, as the file stores
// it, then the coordinates it has (traces before them have none).
static int info_datasets(trace_info *in) {
    const aha_tr *tr = in->tr;
    int n = TC_COUNT;
    for (int id = 0; id < TD_COUNT; id++)
        for (int i = 0; i < aha_tr_n_instances(tr, id); i++) n += aha_tr_has(tr, id, i);
    in->dname = aha_calloc((size_t)n, sizeof *in->dname, "datasets");
    in->key = aha_calloc((size_t)n, sizeof *in->key, "datasets");
    in->dset = aha_calloc((size_t)n, sizeof *in->dset, "datasets");
    if (!in->dname || !in->key || !in->dset) return -1;
    for (int id = 0; id < TD_COUNT; id++)
        for (int i = 0; i < aha_tr_n_instances(tr, id); i++) {
            if (!aha_tr_has(tr, id, i)) continue;
            const int k = in->n_dsets++;
            in->key[k] = trace_dsets[id].key;
            aha_tr_name(tr, id, i, in->dname[k], sizeof in->dname[k]);
            if (aha_tr_dset_info(tr, in->dname[k], &in->dset[k]) != 0) return -1;
        }
    for (int c = 0; c < TC_COUNT; c++) {
        const int k = in->n_dsets;
        in->key[k] = trace_coords[c].path;
        snprintf(in->dname[k], sizeof in->dname[k], "%s", trace_coords[c].path);
        if (aha_tr_dset_info(tr, in->dname[k], &in->dset[k]) != 0) return -1;
        in->n_dsets += in->dset[k].rank > 0; // absent: not listed
    }
    return 0;
}

static int info_read(trace_info *in, const aha_tr *tr) {
    memset(in, 0, sizeof *in);
    in->tr = tr;
    if (aha_tr_attrs_read(tr, &in->at) != 0) return -1;
    aha_tr_attrs_obj(&in->at, TG_ROOT, in->root);
    aha_tr_attrs_obj(&in->at, TG_PROVENANCE, in->prov);
    if (info_datasets(in) != 0 || aha_tr_parts(tr, &in->parts, &in->missing) != 0) return -1;
    if (aha_tr_shard_parse(tr->m.shard, &in->n_shards, &in->have) != 0) {
        aha_err("%s: shard attribute '%s' is not I/N", tr->path, tr->m.shard);
        return -1;
    }
    return 0;
}

// ---- JSON ----

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

static cJSON *datasets_json(const trace_info *in) {
    cJSON *all = cJSON_CreateObject();
    for (int k = 0; k < in->n_dsets; k++) {
        const aha_tr_dset *d = &in->dset[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "key", in->key[k]);
        if (d->rank == 0) {
            cJSON_AddStringToObject(o, "layout", "missing");
        } else {
            cJSON *shape = cJSON_AddArrayToObject(o, "shape");
            for (int j = 0; j < d->rank; j++) cJSON_AddItemToArray(shape, int_json(d->dims[j]));
            cJSON_AddStringToObject(o, "dtype", d->dtype);
            cJSON_AddStringToObject(o, "layout", d->layout);
            cJSON_AddItemToObject(o, "bytes", int_json(d->bytes));
        }
        cJSON_AddItemToObject(all, in->dname[k], o);
    }
    return all;
}

// Complete or not, what an unfinished one holds, and which shards of its run.
static cJSON *completeness_json(const trace_info *in) {
    const aha_tr *tr = in->tr;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "complete", tr->complete);
    cJSON_AddItemToObject(o, "documents_durable", int_json(tr->n_docs));
    cJSON_AddItemToObject(o, "tokens_durable", int_json(tr->n_tokens));
    cJSON_AddItemToObject(o, "parts", int_json(in->parts));
    cJSON_AddItemToObject(o, "parts_missing", int_json(in->missing));
    cJSON_AddStringToObject(o, "shard", tr->m.shard);
    cJSON_AddItemToObject(o, "shards_of", int_json(in->n_shards));
    cJSON *have = cJSON_AddArrayToObject(o, "shards_present"), *lack = cJSON_AddArrayToObject(o, "shards_missing");
    for (int i = 0; i < in->n_shards; i++) cJSON_AddItemToArray(in->have[i] ? have : lack, int_json(i));
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

static cJSON *trace_json(const trace_info *in) {
    const aha_tr *tr = in->tr;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", tr->path);
    cJSON_AddStringToObject(o, "kind", "trace");
    cJSON_AddItemToObject(o, "attributes", group_add(cJSON_CreateObject(), &trace_groups[TG_ROOT], in->root));
    cJSON_AddItemToObject(o, "provenance", group_add(cJSON_CreateObject(), &trace_groups[TG_PROVENANCE], in->prov));
    cJSON_AddItemToObject(o, "documents", int_json(tr->n_docs));
    cJSON_AddItemToObject(o, "tokens", int_json(tr->n_tokens));
    cJSON_AddItemToObject(o, "runs", runs_json(tr));
    cJSON_AddItemToObject(o, "layers", layers_json(&tr->m));
    cJSON_AddItemToObject(o, "datasets", datasets_json(in));
    cJSON_AddItemToObject(o, "completeness", completeness_json(in));
    aha_report_exact(o); // every number as the shortest text that reads back exactly
    return o;
}

// ---- text: the same, for people ----

// A value as text: strings and numbers as they are, lists comma-separated.
static void value_text(const cJSON *v, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    if (cJSON_IsArray(v)) {
        for (const cJSON *x = v->child; x && k + 1 < size; x = x->next) {
            if (x != v->child) {
                out[k++] = ',';
                out[k] = '\0';
            }
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

// Attribute row a's value in obj as text (as its JSON value reads).
static void attr_text(const trace_attr *a, const void *obj, char *out, size_t size) {
    cJSON *box = cJSON_CreateArray(); // aha_report_exact rewrites the numbers inside a container
    cJSON_AddItemToArray(box, attr_json(a, obj));
    aha_report_exact(box);
    value_text(box->child, out, size);
    cJSON_Delete(box);
}

// Every attribute row of group g, one per line under a title.
static void group_text(const char *title, const trace_group *g, void *const obj[OBJ_COUNT]) {
    printf("%s\n", title);
    for (int i = 0; i < g->n_attrs; i++) {
        char v[4096];
        attr_text(&g->attrs[i], obj[g->attrs[i].obj], v, sizeof v);
        size_t n = strlen(v);
        while (n && v[n - 1] == '\n') v[--n] = '\0';
        printf("  %-16s ", g->attrs[i].name);
        for (const char *p = v; *p; p++) // a value of several lines (model_sha256): each under the first
            if (*p == '\n') printf("\n%19s", "");
            else putchar(*p);
        printf("\n");
    }
}

// "i,j,k": the shards of the run this trace holds (have = 1) or lacks (0).
static void shards_text(const trace_info *in, int have, char *out, size_t size) {
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < in->n_shards && k + 1 < size; i++)
        if (in->have[i] == have) k += (size_t)snprintf(out + k, size - k, "%s%d", k ? "," : "", i);
}

static void status_text(const trace_info *in) {
    const aha_tr *tr = in->tr;
    const char *base = strrchr(tr->path, '/');
    char where[64] = ", no part files yet";
    if (in->parts) snprintf(where, sizeof where, ", in %d part file%s%s", in->parts, in->parts == 1 ? "" : "s",
                            in->missing ? "" : ", all present");
    if (tr->complete)
        printf("status         complete\n");
    else
        printf("status         unfinished (a killed, stopped or running record): %" PRId64 " documents durable%s; "
               "aha record --resume continues a stopped one\n", (int64_t)tr->n_docs, where);
    if (in->missing)
        printf("               %d of them missing (the index goes with %s.parts/): their data reads as "
               "fill values\n", in->missing, base ? base + 1 : tr->path);
    char have[2048], lack[2048];
    shards_text(in, 1, have, sizeof have);
    shards_text(in, 0, lack, sizeof lack);
    if (in->n_shards == 0) printf("shard          all documents (not a shard)\n");
    else printf("shard          %s: shards %s of %d%s%s\n", tr->m.shard, have, in->n_shards,
                lack[0] ? "; the run's others, in other traces: " : "", lack);
}

static void layers_text(const aha_trace_meta *m) {
    char loc[4096] = "", label[160];
    size_t k = 0;
    for (int l = 0; l < m->n_layers && k + 1 < sizeof loc; l++)
        if (aha_trace_layer_window(m, l)) k += (size_t)snprintf(loc + k, sizeof loc - k, "%s%d", k ? "," : "", l);
    aha_trace_layers_label(m, label, sizeof label);
    if (!loc[0]) printf("layers         %d, all global (full causal)\n", m->n_layers);
    else printf("layers         %d, %d global; natively local (layer_window): %s; the report counts %s\n", m->n_layers,
                aha_trace_n_global(m), loc, label);
}

static void runs_text(const aha_tr *tr) {
    printf("runs%s\n", tr->n_runs ? "" : "           none yet (declared with the first document)");
    const trace_group *g = &trace_groups[TG_RUN];
    for (int r = 0; r < tr->n_runs; r++) {
        void *obj[OBJ_COUNT] = {[OBJ_RUN] = (void *)&tr->runs[r]};
        printf("  %-16s", tr->runs[r].name);
        for (int i = 0; i < g->n_attrs; i++) {
            char v[256];
            attr_text(&g->attrs[i], obj[g->attrs[i].obj], v, sizeof v);
            printf(" %s %s,", g->attrs[i].name, v);
        }
        printf(" gate %s\n", tr->runs[r].has_gate ? "yes" : "no");
    }
}

static void datasets_text(const trace_info *in) {
    printf("datasets\n");
    for (int k = 0; k < in->n_dsets; k++) {
        const aha_tr_dset *d = &in->dset[k];
        char shape[128] = "";
        size_t u = 0;
        for (int j = 0; j < d->rank; j++)
            u += (size_t)snprintf(shape + u, sizeof shape - u, "%s%" PRId64, j ? "," : "", d->dims[j]);
        printf("  %-28s %-8s [%s] %s", in->dname[k], d->rank ? d->dtype : "-", shape, d->rank ? d->layout : "missing");
        if (d->rank && d->bytes) printf(", %" PRId64 " bytes", d->bytes);
        printf("\n");
    }
}

static void trace_text(const trace_info *in) {
    const aha_tr *tr = in->tr;
    printf("trace          %s\n", tr->path);
    status_text(in);
    printf("documents      %" PRId64 " (%" PRId64 " tokens)\n", (int64_t)tr->n_docs, (int64_t)tr->n_tokens);
    layers_text(&tr->m);
    group_text("settings", &trace_groups[TG_ROOT], in->root);
    group_text("provenance", &trace_groups[TG_PROVENANCE], in->prov);
    runs_text(tr);
    datasets_text(in);
}

int aha_cmd_info_trace(int argc, char **argv) {
    int json = 0;
    const aha_flag flags[] = {{"--json", FLAG_BOOL, &json, AHA_INFO_JSON, NULL},
                              {NULL, 0, NULL, NULL, NULL}};
    const char *pos[1];
    AHA_PARSE(AHA_INFO_USAGE, flags, pos, 1);
    aha_tr tr;
    trace_info in;
    if (aha_tr_open_empty(&tr, pos[0]) != 0) return aha_cli_fail();
    int rc = info_read(&in, &tr);
    if (rc == 0 && json) {
        cJSON *o = trace_json(&in);
        char *s = cJSON_PrintUnformatted(o);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(o);
    } else if (rc == 0) {
        trace_text(&in);
    }
    info_free(&in);
    aha_tr_close(&tr);
    return rc ? aha_cli_fail() : 0;
}
