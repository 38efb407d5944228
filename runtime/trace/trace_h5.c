// HDF5 plumbing for the trace writer: closing ids, error messages, the
// element types, files and attributes.
#include "trace_impl.h"

#include <stdio.h>
#include <string.h>

#include "err.h"

// Close any HDF5 object. The type's own close, unlike H5Idec_ref, releases
// the id even when closing fails (a flush on a full disk).
void trace_h5_drop(hid_t id) {
    if (id < 0) return;
    switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    default: H5Pclose(id); break;
    }
}

// ---- errors ----

static herr_t cause_cb(unsigned n, const H5E_error2_t *e, void *data) {
    if (n > 0) return 0; // only the innermost error names the cause
    const char *m = strstr(e->desc, "error message = '"); // a failed read/write: errno text
    if (m)
        snprintf(data, 256, "%.*s", (int)strcspn(m + 17, "'"), m + 17);
    else
        snprintf(data, 256, "%s", e->desc);
    return 0;
}

int trace_h5_fail(const char *path, const char *what) {
    char cause[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, cause_cb, cause);
    H5Eclear2(H5E_DEFAULT);
    aha_err("%s: %s failed%s%s", path, what, cause[0] ? ": " : "", cause);
    return -1;
}

// ---- types ----

int trace_types_init(aha_trace *t) {
    // No HDF5 exit hook: after a failed write (a full disk) HDF5 1.10 cannot
    // close that file, and the hook would crash retrying. Every file the
    // writer opens it closes. (A no-op once HDF5 has been used.)
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // errors come back as messages, not stack dumps
    t->f16 = H5Tcopy(H5T_IEEE_F32LE);
    t->str = H5Tcopy(H5T_C_S1);
    if (t->f16 < 0 || H5Tset_fields(t->f16, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t->f16, 2) < 0 ||
        H5Tset_ebias(t->f16, 15) < 0 || H5Tset_precision(t->f16, 16) < 0 || t->str < 0 ||
        H5Tset_size(t->str, H5T_VARIABLE) < 0 || H5Tset_cset(t->str, H5T_CSET_UTF8) < 0)
        return trace_h5_fail(t->path, "making HDF5 types");
    return 0;
}

size_t trace_ty_size(int ty) {
    static const size_t size[] = {4, 1, 4, 4, 2, sizeof(char *)};
    return size[ty];
}

hid_t trace_ty_file(const aha_trace *t, int ty) {
    switch (ty) {
    case TY_I32: return H5T_STD_I32LE;
    case TY_U8: return H5T_STD_U8LE;
    case TY_U32: return H5T_STD_U32LE;
    case TY_F32: return H5T_IEEE_F32LE;
    case TY_F16: return t->f16;
    default: return t->str;
    }
}

hid_t trace_ty_mem(const aha_trace *t, int ty) {
    switch (ty) {
    case TY_I32: return H5T_NATIVE_INT32;
    case TY_U8: return H5T_NATIVE_UINT8;
    case TY_U32: return H5T_NATIVE_UINT32;
    case TY_F32: return H5T_NATIVE_FLOAT;
    default: return trace_ty_file(t, ty); // float16 bits and strings: as in the file
    }
}

// ---- files and attributes ----

// File access: lock where the file system can, go on where it cannot.
static hid_t fapl_new(void) {
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    if (p >= 0 && H5Pset_file_locking(p, 1, 1) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

hid_t trace_file_open(const char *path) {
    hid_t fapl = fapl_new();
    hid_t f = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    trace_h5_drop(fapl);
    if (f < 0) trace_h5_fail(path, "opening");
    return f;
}

// A new file; groups (and the root) list their members in creation order.
hid_t trace_file_create(const char *path) {
    hid_t fapl = fapl_new(), fcpl = H5Pcreate(H5P_FILE_CREATE), f = -1;
    if (fapl >= 0 && fcpl >= 0 &&
        H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0)
        f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    trace_h5_drop(fapl);
    trace_h5_drop(fcpl);
    if (f < 0) trace_h5_fail(path, "creating");
    return f;
}

int trace_file_close(hid_t f, const char *path) {
    return H5Fclose(f) < 0 ? trace_h5_fail(path, "writing") : 0;
}

// Part file p of the parts folder, read-only.
hid_t trace_part_open(const aha_trace *t, const trace_part *p) {
    char path[4096];
    trace_part_paths(t, p->name, path, NULL, sizeof path);
    return trace_file_open(path);
}

// n < 0: a scalar; else a 1-D array of n.
int trace_attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int n, const void *v) {
    hsize_t dim = (hsize_t)(n < 0 ? 0 : n);
    hid_t sp = n < 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
    hid_t a = sp < 0 ? -1 : H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, mtype, v);
    trace_h5_drop(a);
    trace_h5_drop(sp);
    return e < 0 ? -1 : 0;
}

int trace_attr_str(const aha_trace *t, hid_t loc, const char *name, const char *s) {
    const char *v = s ? s : "";
    return trace_attr_put(loc, name, t->str, t->str, -1, &v);
}

int trace_attr_i64(hid_t loc, const char *name, int64_t v) {
    return trace_attr_put(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v);
}

int trace_attr_f64(hid_t loc, const char *name, double v) {
    return trace_attr_put(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v);
}
