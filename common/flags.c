#include "flags.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

// 1 when x is in range, 0 when not, -1 when range is not one the rows may
// give (see aha_flag).
static int in_range(const char *range, double x) {
    double v, a, b;
    char lo, hi, end;
    int n = 0;
    if (sscanf(range, "%lf or %n", &v, &n) == 1 && n > 0) {
        if (x == v) return 1;
        range += n;
    }
    if (sscanf(range, ">= %lf%c", &a, &end) == 1) return x >= a;
    if (sscanf(range, "> %lf%c", &a, &end) == 1) return x > a;
    if (sscanf(range, "<= %lf%c", &b, &end) == 1) return x <= b;
    if (sscanf(range, "%c%lf, %lf%c%c", &lo, &a, &b, &hi, &end) == 4 && (lo == '[' || lo == '(') &&
        (hi == ']' || hi == ')'))
        return (lo == '[' ? x >= a : x > a) && (hi == ']' ? x <= b : x < b);
    return -1;
}

int aha_flag_range_check(const char *flag, const char *range, double x, const char *typed) {
    int in = range ? in_range(range, x) : 1;
    if (in < 0) aha_err("%s: its range '%s' is not one aha_flag reads (a bug)", flag, range);
    else if (!in) aha_err("%s must be %s%s (got %s)", flag, strchr("[(", range[0]) ? "in " : "", range, typed);
    return in == 1 ? 0 : -1;
}

int aha_flag_list_check(const char *flag, const char *s) {
    size_t n = strlen(s);
    if (n && s[0] != ',' && s[n - 1] != ',' && !strstr(s, ",,")) return 0;
    aha_err("%s: '%s' has an empty element", flag, s);
    return -1;
}

const char *aha_enum_name(const aha_enum *e, int v) { return v >= 0 && v < e->n ? e->names[v] : "?"; }

// e's names into buf: "a, b or c" (sep ", ", last " or ") or "a | b | c".
static void enum_list(const aha_enum *e, const char *sep, const char *last, char *buf, size_t size) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < e->n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i == 0 ? "" : i == e->n - 1 ? last : sep, e->names[i]);
}

int aha_enum_parse(const aha_enum *e, const char *what, const char *s, int *v) {
    for (int i = 0; i < e->n; i++)
        if (strcmp(s, e->names[i]) == 0) {
            *v = i;
            return 0;
        }
    char list[512];
    enum_list(e, ", ", " or ", list, sizeof list);
    aha_err("%s: '%s' is not %s", what, s, list);
    return -1;
}

static int parse_value(const aha_flag *f, const char *v) {
    char *end;
    errno = 0;
    if (f->type == FLAG_INT) {
        long x = strtol(v, &end, 10);
        if (*v == '\0' || *end || errno || x < -2147483647L || x > 2147483647L) goto bad;
        if (aha_flag_range_check(f->name, f->range, (double)x, v) != 0) return -1;
        *(int *)f->ptr = (int)x;
    } else if (f->type == FLAG_FLOAT || f->type == FLAG_DOUBLE) { // a float flag rounds as strtof does
        double x = f->type == FLAG_FLOAT ? strtof(v, &end) : strtod(v, &end);
        if (*v == '\0' || *end || errno || !isfinite(x)) goto bad;
        if (aha_flag_range_check(f->name, f->range, x, v) != 0) return -1;
        if (f->type == FLAG_FLOAT) *(float *)f->ptr = (float)x;
        else *(double *)f->ptr = x;
    } else if (f->type == FLAG_ENUM) {
        const aha_flag_enum *b = f->ptr;
        return aha_enum_parse(b->e, f->name, v, b->value);
    } else {
        *(const char **)f->ptr = v;
    }
    return 0;
bad:
    aha_err("%s: '%s' is not a valid %s", f->name, v, f->type == FLAG_INT ? "integer" : "number");
    return -1;
}

// The row named name[0..len) of flags, or NULL.
static const aha_flag *find(const aha_flag *flags, const char *name, size_t len) {
    for (const aha_flag *f = flags; f->name; f++)
        if (strlen(f->name) == len && strncmp(f->name, name, len) == 0) return f;
    return NULL;
}

int aha_flags_parse(int argc, char **argv, int first, const aha_flag *flags, const char **pos,
                    int max_pos, int *n_pos) {
    *n_pos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0) {
            if (strcmp(a, "--") == 0) a = ++i < argc ? argv[i] : NULL;
            if (!a) break;
            if (*n_pos == max_pos) {
                aha_err("unexpected argument '%s'", a);
                return -1;
            }
            pos[(*n_pos)++] = a;
            continue;
        }
        // "--ctx 64" or "--ctx=64"
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const aha_flag *f = find(flags, a, len);
        if (!f) {
            aha_err("unknown flag '%.*s' (see --help)", (int)len, a);
            return -1;
        }
        if (f->type == FLAG_ALIAS) { // the flag it names, said once per use
            fprintf(stderr, "aha: note: %s is now %s (the old name still works)\n", f->name, f->help);
            if (!(f = find(flags, f->help, strlen(f->help)))) {
                aha_err("%.*s: names no flag of this command (a bug)", (int)len, a);
                return -1;
            }
        }
        if (f->type == FLAG_BOOL) {
            if (eq) {
                aha_err("%s takes no value", f->name);
                return -1;
            }
            *(int *)f->ptr = 1;
            continue;
        }
        if (!eq && ++i == argc) {
            aha_err("%s needs a value", a);
            return -1;
        }
        if (parse_value(f, eq ? eq + 1 : argv[i]) != 0) return -1;
    }
    return 0;
}

void aha_flags_usage(FILE *out, const char *usage, const aha_flag *flags) {
    fprintf(out, "%s\n", usage);
    if (flags->name) fprintf(out, "flags:\n");
    for (const aha_flag *f = flags; f->name; f++) {
        if (!f->help) continue;
        if (f->type == FLAG_ALIAS) {
            fprintf(out, "  %-14s the old name of %s\n", f->name, f->help);
            continue;
        }
        char def[96], names[512];
        const char *range = f->range;
        switch (f->type) {
        case FLAG_INT: snprintf(def, sizeof def, "%d", *(int *)f->ptr); break;
        case FLAG_FLOAT: snprintf(def, sizeof def, "%g", *(float *)f->ptr); break;
        case FLAG_DOUBLE: snprintf(def, sizeof def, "%g", *(double *)f->ptr); break;
        case FLAG_STR: snprintf(def, sizeof def, "%s", *(const char **)f->ptr ? *(const char **)f->ptr : "unset"); break;
        case FLAG_BOOL: snprintf(def, sizeof def, "%s", *(int *)f->ptr ? "on" : "off"); break;
        case FLAG_ENUM: {
            const aha_flag_enum *b = f->ptr;
            enum_list(b->e, " | ", " | ", names, sizeof names);
            snprintf(def, sizeof def, "%s", aha_enum_name(b->e, *b->value));
            range = names;
            break;
        }
        case FLAG_ALIAS: break;
        }
        fprintf(out, "  %-14s %s (%s%sdefault: %s)\n", f->name, f->help, range ? range : "", range ? "; " : "", def);
    }
}

int aha_cli_fail(void) {
    fprintf(stderr, "aha: %s\n", aha_errmsg());
    return 1;
}

int aha_cli_parse_n(int argc, char **argv, const char *usage, const aha_flag *flags, const char **pos,
                    int n_min, int n_max, int *n) {
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            aha_flags_usage(stdout, usage, flags);
            return -1;
        }
    }
    if (aha_flags_parse(argc, argv, 2, flags, pos, n_max, n) != 0) return aha_cli_fail();
    if (*n < n_min) {
        aha_flags_usage(stderr, usage, flags);
        return 2;
    }
    return 0;
}

int aha_cli_parse(int argc, char **argv, const char *usage, const aha_flag *flags,
                  const char **pos, int n_req) {
    int n;
    return aha_cli_parse_n(argc, argv, usage, flags, pos, n_req, n_req, &n);
}
