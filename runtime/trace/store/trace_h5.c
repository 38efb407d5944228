// HDF5 plumbing of the trace store and reader (trace_h5.h).
#include "trace_h5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "trace_codec.h"

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

void trace_h5_cause(char cause[256]) {
    cause[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, cause_cb, cause);
    H5Eclear2(H5E_DEFAULT);
}

// The message for damage HDF5 found while doing what: metadata whose checksum
// fails (HDF5 1.10's format checksums every block), said as chunk damage is.
static void say_damage(const char *path, const char *what, const char *cause) {
    if (strstr(cause, "checksum")) aha_err("%s: the file is damaged: its metadata fails its checksum (%s)", path, what);
    else aha_err("%s: the file is damaged: HDF5 cannot read its metadata (%s: %s)", path, what, cause);
}

int trace_h5_fail(const char *path, const char *what) {
    char cause[256];
    trace_h5_cause(cause);
    if (strstr(cause, "checksum")) say_damage(path, what, cause);
    else aha_err("%s: %s failed%s%s", path, what, cause[0] ? ": " : "", cause);
    return -1;
}

static _Thread_local char kept[256]; // trace_h5_keep's cause

void trace_h5_keep(void) {
    char cause[256];
    trace_h5_cause(cause);
    if (!kept[0]) snprintf(kept, sizeof kept, "%s", cause[0] ? cause : "an HDF5 call failed");
}

int trace_h5_damaged(const char *path, const char *what) {
    if (!kept[0]) return 0;
    say_damage(path, what, kept);
    kept[0] = '\0';
    return 1;
}

void trace_h5_forget(void) { kept[0] = '\0'; }

int trace_vds_escape(const char *name, char *out, size_t size) {
    size_t k = 0;
    for (; *name; name++) {
        if (k + 2 >= size) return -1;
        if (*name == '%') out[k++] = '%';
        out[k++] = *name;
    }
    out[k] = '\0';
    return 0;
}

void trace_vds_unescape(char *name) {
    char *w = name;
    for (const char *r = name; *r; r++) {
        *w++ = *r;
        if (r[0] == '%' && r[1] == '%') r++;
    }
    *w = '\0';
}

// ---- types ----

hid_t trace_h5_f16(void) {
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    if (t >= 0 && (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 ||
                   H5Tset_ebias(t, 15) < 0 || H5Tset_precision(t, 16) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

hid_t trace_h5_str(size_t width) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, width ? width : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
                   H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

// ---- files and groups ----

static hid_t fapl_new(int lock) {
    hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    if (p >= 0 && H5Pset_file_locking(p, lock, 1) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

hid_t trace_file_open(const char *path, int lock) {
    hid_t fapl = fapl_new(lock);
    hid_t f = fapl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    trace_h5_drop(fapl);
    return f;
}

hid_t trace_file_open_image(const char *name, const void *data, size_t size) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = -1;
    // the image is copied; without backing store nothing is written
    if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 16, 0) >= 0 && H5Pset_file_image(fapl, (void *)data, size) >= 0)
        f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    trace_h5_drop(fapl);
    return f;
}

// A group's (or the root's, in a file creation list) properties: members in
// creation order; links and attributes kept in the object header, which
// HDF5 1.10's format checksums (its dense storage's heap blocks have none).
static int group_props(hid_t gcpl) {
    return H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0 &&
                   H5Pset_link_phase_change(gcpl, TRACE_COMPACT_MAX, 0) >= 0 &&
                   H5Pset_attr_phase_change(gcpl, TRACE_COMPACT_MAX, 0) >= 0
               ? 0
               : -1;
}

hid_t trace_file_create(const char *path) {
    hid_t fapl = fapl_new(1), fcpl = H5Pcreate(H5P_FILE_CREATE), f = -1;
    if (fapl >= 0 && fcpl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0 &&
        group_props(fcpl) == 0)
        f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    trace_h5_drop(fapl);
    trace_h5_drop(fcpl);
    if (f < 0) trace_h5_fail(path, "creating");
    return f;
}

int trace_file_close(hid_t f, const char *path) {
    return H5Fclose(f) < 0 ? trace_h5_fail(path, "writing") : 0;
}

hid_t trace_group_create(hid_t loc, const char *path) {
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g = -1;
    if (gcpl >= 0 && group_props(gcpl) == 0) g = H5Gcreate2(loc, path, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    trace_h5_drop(gcpl);
    return g;
}

int trace_group_parents(hid_t f, const char *path) {
    char dir[256];
    for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
        if ((size_t)(s - path) >= sizeof dir) return -1;
        memcpy(dir, path, (size_t)(s - path));
        dir[s - path] = '\0';
        htri_t e = H5Lexists(f, dir, H5P_DEFAULT);
        hid_t g = e == 0 ? trace_group_create(f, dir) : -1;
        trace_h5_drop(g);
        if (e < 0 || (e == 0 && g < 0)) return -1;
    }
    return 0;
}

hid_t trace_h5_dset_1d(hid_t f, const char *path, hid_t ftype, hid_t mtype, int64_t n, const void *v,
                       const char *desc) {
    hsize_t dim = (hsize_t)n, maxd = H5S_UNLIMITED, chunk = n < 1 ? 1 : n < 65536 ? (hsize_t)n : 65536;
    hid_t sp = H5Screate_simple(1, &dim, &maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0 && trace_codec_pipeline(dcpl) >= 0 &&
        trace_group_parents(f, path) == 0)
        d = H5Dcreate2(f, path, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    trace_h5_drop(sp);
    trace_h5_drop(dcpl);
    if (d >= 0 && ((n > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) ||
                   trace_attr_describe(d, desc) < 0)) {
        trace_h5_drop(d);
        d = -1;
    }
    return d;
}

// ---- attributes ----

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

int trace_attr_str(hid_t loc, const char *name, const char *s) {
    const char *v = s ? s : "";
    hid_t ty = trace_h5_str(strlen(v)); // "" takes one NUL byte: HDF5 has no empty string type
    int rc = ty < 0 ? -1 : trace_attr_put(loc, name, ty, ty, -1, v);
    trace_h5_drop(ty);
    return rc;
}

int trace_attr_describe(hid_t loc, const char *text) { return trace_attr_str(loc, "description", text); }

int trace_attr_f64(hid_t loc, const char *name, double v) {
    return trace_attr_put(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v);
}

int trace_str_padded(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    while (len < n && !s[len]) len++;
    return len == n;
}
