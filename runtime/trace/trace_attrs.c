// The schema's HDF5 side (trace_attrs.h): its element types as HDF5 types,
// and attributes written and read by its tables.
#include "trace_attrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "trace_h5.h"

hid_t trace_ty_file(trace_type ty, hid_t f16) {
    switch (ty) {
    case TY_I32: return H5T_STD_I32LE;
    case TY_I64: return H5T_STD_I64LE;
    case TY_U8: return H5T_STD_U8LE;
    case TY_U32: return H5T_STD_U32LE;
    case TY_F16: return f16;
    case TY_F32: return H5T_IEEE_F32LE;
    case TY_F64: return H5T_IEEE_F64LE;
    default: return -1; // a string: its width's type (trace_h5_str)
    }
}

hid_t trace_ty_mem(trace_type ty, hid_t f16) {
    switch (ty) {
    case TY_I32: return H5T_NATIVE_INT32;
    case TY_I64: return H5T_NATIVE_INT64;
    case TY_U8: return H5T_NATIVE_UINT8;
    case TY_U32: return H5T_NATIVE_UINT32;
    case TY_F32: return H5T_NATIVE_FLOAT;
    case TY_F64: return H5T_NATIVE_DOUBLE;
    default: return trace_ty_file(ty, f16); // float16 bits: as in the file
    }
}

// ---- attributes: written ----

static int attr_write(hid_t loc, const trace_attr *a, const void *obj) {
    if (a->obj == OBJ_CONST) return trace_attr_str(loc, a->name, a->value);
    const char *p = (const char *)obj + a->off;
    int n = a->n_off ? *(const int *)((const char *)obj + a->n_off) : 0;
    switch (a->kind) {
    case AK_STR: return trace_attr_str(loc, a->name, *(const char *const *)p);
    case AK_INT: {
        int64_t v = *(const int *)p;
        return trace_attr_put(loc, a->name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v);
    }
    case AK_I64: return trace_attr_put(loc, a->name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, p);
    case AK_F64: return trace_attr_f64(loc, a->name, *(const double *)p);
    case AK_F64S: return trace_attr_put(loc, a->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, *(const double *const *)p);
    case AK_INTS: {
        int64_t *v = malloc((size_t)n * sizeof *v + 1);
        for (int i = 0; v && i < n; i++) v[i] = (*(const int *const *)p)[i];
        int rc = v ? trace_attr_put(loc, a->name, H5T_STD_I64LE, H5T_NATIVE_INT64, n, v) : -1;
        free(v);
        return rc;
    }
    }
    return -1;
}

int trace_attrs_write(hid_t loc, const trace_group *g, const trace_vars *v, const void *const obj[OBJ_COUNT]) {
    char desc[1024];
    int rc = trace_fill(desc, sizeof desc, g->desc, v) < 0 ? -1 : trace_attr_describe(loc, desc);
    for (int i = 0; i < g->n_attrs && rc == 0; i++) rc = attr_write(loc, &g->attrs[i], obj[g->attrs[i].obj]);
    return rc;
}

// ---- attributes: read ----

// A string attribute (variable or fixed length, one value) as a malloc'd
// copy, or NULL: not a string, not one value, or a fixed-length one whose
// padding is not all NULs (each is a damaged or foreign file, and reading
// more values than the buffer holds would overrun it).
static char *attr_read_str(hid_t a) {
    hid_t ty = H5Aget_type(a), sp = H5Aget_space(a);
    char *out = NULL;
    if (ty < 0 || sp < 0) trace_h5_keep();
    int one = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1;
    if (one && ty >= 0 && H5Tget_class(ty) == H5T_STRING) {
        if (H5Tis_variable_str(ty) > 0) {
            char *s = NULL;
            hid_t mt = H5Tcopy(H5T_C_S1);
            if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Tset_cset(mt, H5Tget_cset(ty)) >= 0 &&
                H5Aread(a, mt, &s) >= 0 && s)
                out = strdup(s);
            else if (!s) trace_h5_keep();
            if (s) H5free_memory(s);
            trace_h5_drop(mt);
        } else {
            size_t n = H5Tget_size(ty);
            char *s = n <= AHA_TRACE_MAX_STR ? calloc(n + 1, 1) : NULL;
            if (s && H5Aread(a, ty, s) >= 0 && trace_str_padded(s, n)) out = s;
            else {
                free(s);
                trace_h5_keep();
            }
        }
    }
    trace_h5_drop(sp);
    trace_h5_drop(ty);
    return out;
}

// A numeric attribute's *n values as mtype in a malloc'd array; NULL when
// it is not numeric, holds more than max (*n says how many) or fails to read.
static void *attr_read_num(hid_t a, hid_t mtype, size_t size, int max, int *n) {
    hid_t ty = H5Aget_type(a), sp = H5Aget_space(a);
    if (ty < 0 || sp < 0) trace_h5_keep();
    H5T_class_t c = ty < 0 ? H5T_NO_CLASS : H5Tget_class(ty);
    hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    void *v = (c == H5T_INTEGER || c == H5T_FLOAT) && np >= 0 && np <= max ? malloc((size_t)np * size + 1) : NULL;
    if (v && H5Aread(a, mtype, v) < 0) {
        free(v);
        v = NULL;
        trace_h5_keep();
    }
    trace_h5_drop(sp);
    trace_h5_drop(ty);
    *n = np > INT32_MAX ? INT32_MAX : (int)np;
    return v;
}

// Attribute a of loc into obj: 0; 1 when absent; -1 when unreadable (what
// set); 2 when a list holds more than a->cap values (*n of them).
static int attr_read(hid_t loc, const trace_attr *a, void *obj, const char **what, int *n) {
    htri_t e = H5Aexists(loc, a->name);
    if (e < 0) { // damaged: never taken for absent
        *what = "readable";
        trace_h5_keep();
    }
    if (e <= 0) return e < 0 ? -1 : 1;
    hid_t at = H5Aopen(loc, a->name, H5P_DEFAULT);
    if (at < 0) trace_h5_keep();
    if (a->obj == OBJ_CONST) { // a string that must have its value
        char *s = at < 0 ? NULL : attr_read_str(at);
        int same = s && strcmp(s, a->value) == 0;
        free(s);
        trace_h5_drop(at);
        return same ? 0 : -1;
    }
    char *p = (char *)obj + a->off;
    int *count = a->n_off ? (int *)((char *)obj + a->n_off) : NULL, max = count ? a->cap : 1;
    void *v = NULL;
    int rc = -1;
    if (a->kind == AK_STR) {
        char *s = at < 0 ? NULL : attr_read_str(at);
        *what = "a string";
        if (s) {
            free(*(char **)p);
            *(char **)p = s;
            rc = 0;
        }
    } else if (a->kind == AK_F64 || a->kind == AK_F64S) {
        *what = a->kind == AK_F64 ? "a number" : "a list of numbers";
        v = at < 0 ? NULL : attr_read_num(at, H5T_NATIVE_DOUBLE, sizeof(double), max, n);
    } else {
        *what = a->kind == AK_INTS ? "a list of integers" : "an integer";
        v = at < 0 ? NULL : attr_read_num(at, H5T_NATIVE_INT64, sizeof(int64_t), max, n);
    }
    trace_h5_drop(at);
    if (a->kind == AK_STR) return rc;
    if (!v) return count && *n > max ? 2 : -1;
    if (!count && *n != 1) {
        free(v);
        return -1;
    }
    switch (a->kind) {
    case AK_INT: *(int *)p = (int)*(int64_t *)v; break;
    case AK_I64: *(int64_t *)p = *(int64_t *)v; break;
    case AK_F64: *(double *)p = *(double *)v; break;
    case AK_F64S:
        free(*(double **)p);
        *(double **)p = v;
        v = NULL;
        break;
    default: { // AK_INTS
        int *w = malloc((size_t)*n * sizeof *w + 1);
        for (int i = 0; w && i < *n; i++) w[i] = (int)((int64_t *)v)[i];
        if (!w) {
            free(v);
            return -1;
        }
        free(*(int **)p);
        *(int **)p = w;
    }
    }
    if (count) *count = *n;
    free(v);
    return 0;
}

// Attribute a's default into obj (a string or list: an empty malloc'd one).
static int attr_default(const trace_attr *a, void *obj) {
    if (a->obj == OBJ_CONST) return 0; // never absent: a file without it is refused
    char *p = (char *)obj + a->off;
    if (a->kind == AK_STR) {
        free(*(char **)p);
        return (*(char **)p = strdup(a->value ? a->value : "")) ? 0 : -1;
    }
    if (a->kind == AK_F64S || a->kind == AK_INTS) {
        free(*(void **)p);
        *(int *)((char *)obj + a->n_off) = 0;
        return (*(void **)p = calloc(1, 8)) ? 0 : -1;
    }
    if (a->kind == AK_INT) *(int *)p = a->value ? atoi(a->value) : 0;
    if (a->kind == AK_I64) *(int64_t *)p = a->value ? strtoll(a->value, NULL, 10) : 0;
    if (a->kind == AK_F64) *(double *)p = a->value ? strtod(a->value, NULL) : 0;
    return 0;
}

// A per-layer list (A_PER_LAYER) read as n_layers values: absent (a trace
// from before it) is every layer 0; another length or a negative value is refused.
static int per_layer_fill(const char *path, const char *where, const trace_group *g, void *const obj[OBJ_COUNT]) {
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *a = &g->attrs[i];
        if (!(a->flags & A_PER_LAYER)) continue;
        const aha_trace_meta *m = obj[OBJ_META];
        int *count = (int *)((char *)obj[a->obj] + a->n_off), **v = (int **)((char *)obj[a->obj] + a->off);
        int L = m->n_layers > 0 ? m->n_layers : 0;
        if (*count == 0) {
            free(*v);
            if (!(*v = calloc((size_t)L + 1, sizeof **v))) {
                aha_err("%s: out of memory", path);
                return -1;
            }
            *count = L;
        }
        if (*count != L) {
            aha_err("%s: %s attribute %s holds %d values; n_layers is %d", path, where, a->name, *count, L);
            return -1;
        }
        for (int l = 0; l < L; l++)
            if ((*v)[l] < 0) {
                aha_err("%s: %s attribute %s[%d] is %d; a window is >= 0", path, where, a->name, l, (*v)[l]);
                return -1;
            }
    }
    return 0;
}

int trace_attrs_read(hid_t loc, const char *path, const char *where, const trace_group *g,
                     void *const obj[OBJ_COUNT], int strict) {
    for (int i = 0; i < g->n_attrs; i++) {
        const trace_attr *a = &g->attrs[i];
        const char *what = NULL;
        char attr[160];
        trace_h5_forget();
        int n = 0, rc = attr_read(loc, a, obj[a->obj], &what, &n);
        int need = (a->flags & A_REQUIRED) || (strict && !(a->flags & A_OPTIONAL));
        snprintf(attr, sizeof attr, "%s attribute %s", where, a->name);
        if (rc < 0 && trace_h5_damaged(path, attr)) return -1; // not "not an aha trace", nor "not a number"
        if (rc != 0 && a->obj == OBJ_CONST) { // absent or another value: a file of something else
            aha_err("%s: not an aha trace (%s attribute %s is not \"%s\")", path, where, a->name, a->value);
            return -1;
        }
        if (rc == 1 && need) {
            aha_err("%s: %s attribute %s is missing", path, where, a->name);
            return -1;
        }
        if (rc == 1 && attr_default(a, obj[a->obj]) < 0) {
            aha_err("%s: out of memory", path);
            return -1;
        }
        if (rc < 0) {
            aha_err("%s: %s attribute %s is not %s", path, where, a->name, what);
            return -1;
        }
        if (rc == 2) {
            aha_err("%s: %s attribute %s holds %d values; a trace holds at most %d", path, where, a->name,
                    n, a->cap);
            return -1;
        }
    }
    return per_layer_fill(path, where, g, obj);
}
