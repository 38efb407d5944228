// Command-line flags: a table per command, with defaults shown in the usage
// text and unknown flags rejected.
#pragma once
#include <stdio.h>

// FLAG_DOUBLE: a number kept as typed (what a trace records, e.g. --tau 0.7).
// FLAG_ENUM: one of a table's names (aha_enum), stored as the enum's value.
// FLAG_ALIAS: an old name of another flag of the same table; using it says so
// on stderr (one line) and sets that flag.
typedef enum { FLAG_INT, FLAG_FLOAT, FLAG_STR, FLAG_BOOL, FLAG_DOUBLE, FLAG_ENUM, FLAG_ALIAS } aha_flag_type;

typedef struct {
    const char *name;   // "--threads"
    aha_flag_type type;
    void *ptr;          // int*, float*, const char**, int* (bool), double*, aha_flag_enum*
                        // (enum); holds the default. NULL for an alias
    const char *help;   // NULL: parsed but not in the usage text (a shared table's
                        // flag this command refuses with its own message);
                        // FLAG_ALIAS: the flag it names ("--data-format")
    const char *range;  // FLAG_INT / FLAG_FLOAT: the values it takes, checked as it is
                        // parsed and shown in the usage line: ">= 1", "> 0", "<= 1",
                        // "[0, 1]" (either bracket may be open: "[0, 1)"), optionally
                        // after one more value: "0 or >= 2"; NULL: any
} aha_flag;

// An enum's names, in the order of its values: the one table that parses
// its flag, lists the values in the usage text and names them in messages
// and files.
typedef struct {
    const char *const *names; // [n], as the command line spells them
    int n;                    // how many
} aha_enum;

#define AHA_ENUM(names) {(names), (int)(sizeof(names) / sizeof *(names))} // from a names array

// A FLAG_ENUM row's ptr: the variable (an enum, int-sized) and its table.
typedef struct {
    int *value;        // the variable, its value the index of its name
    const aha_enum *e; // the names it takes
} aha_flag_enum;

// The rows of an enum flag and of an old name (help: the usage line). var
// must be int-sized (an enum is): anything else fails to compile.
#define AHA_FLAG_ENUM(name, var, table, help)                                                          \
    {(name), FLAG_ENUM,                                                                                \
     &(aha_flag_enum){(int *)&(var) + 0 * sizeof(char[sizeof(var) == sizeof(int) ? 1 : -1]), &(table)}, \
     (help), NULL}
#define AHA_FLAG_ALIAS(old, flag) {(old), FLAG_ALIAS, NULL, (flag), NULL}

// Value v's name ("?" when v is not one of e's).
const char *aha_enum_name(const aha_enum *e, int v);
// s's value into *v: 0, or -1 with "what: 's' is not a, b or c".
int aha_enum_parse(const aha_enum *e, const char *what, const char *s, int *v);

// Parse argv[first..argc) into flags (terminated by a NULL name) and up to
// max_pos positional arguments. 0, or -1 with an error message.
int aha_flags_parse(int argc, char **argv, int first, const aha_flag *flags, const char **pos,
                    int max_pos, int *n_pos);
// 0 when x is in range (an aha_flag range); else -1 with "flag must be
// <range> (got typed)", the value as the user typed it.
int aha_flag_range_check(const char *flag, const char *range, double x, const char *typed);
// 0 when s is a comma-separated list without an empty element ("16,32");
// else -1 with an error naming flag ("16,", "16,,32" and "" have one).
int aha_flag_list_check(const char *flag, const char *s);
// Print "usage" then every flag with its current (default) value to out
// (stdout for --help, stderr when the command line was wrong).
void aha_flags_usage(FILE *out, const char *usage, const aha_flag *flags);

// For commands: parse flags after argv[1] ("--flag value" or "--flag=value");
// on --help print usage to stdout and return -1 (exit 0); with fewer than
// n_min positionals print usage to stderr and return 2; on a bad flag print
// the error and return 1; else 0 with *n positionals (at most n_max) in pos.
int aha_cli_parse_n(int argc, char **argv, const char *usage, const aha_flag *flags, const char **pos,
                    int n_min, int n_max, int *n);
// ... with exactly n_req positionals.
int aha_cli_parse(int argc, char **argv, const char *usage, const aha_flag *flags,
                  const char **pos, int n_req);
// Print "aha: <error>" to stderr; returns 1, the exit code.
int aha_cli_fail(void);

#define AHA_PARSE(usage, flags, pos, n)                                       \
    do {                                                                      \
        int rc_ = aha_cli_parse(argc, argv, usage, flags, pos, n);            \
        if (rc_) return rc_ < 0 ? 0 : rc_;                                    \
    } while (0)
