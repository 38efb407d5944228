// What every figure shares (figure.h): its files, rendering, title words.
#include "figure.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "report_schema.h"
#include "report_text.h"

static FILE *open_one(const char *dir, const char *name, const char *ext) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "w");
    if (!f) aha_err("%s: %s", path, strerror(errno));
    return f;
}

int aha_plot_open(const char *dir, const char *name, FILE **dat, FILE **gp) {
    *dat = open_one(dir, name, "dat");
    *gp = *dat ? open_one(dir, name, "gp") : NULL;
    if (*gp) return 0;
    if (*dat) fclose(*dat);
    return -1;
}

static const char *const format_names[] = {"png", "svg", "pdf"};
const aha_enum aha_plot_formats = AHA_ENUM(format_names);

void aha_plot_terminal(FILE *gp, const char *name, const aha_plot_opts *o) {
    fprintf(gp, "# Re-render with: gnuplot %s.gp (data: %s.dat)\n", name, name);
    switch (o->format) {
    case AHA_PLOT_SVG:
        fprintf(gp, "set terminal svg size %d,%d font \"Sans,11\" background \"white\"\n", o->width, o->height);
        break;
    case AHA_PLOT_PDF:
        fprintf(gp, "set terminal pdfcairo size %gin,%gin font \"Sans,8\"\n", o->width / 100.0, o->height / 100.0);
        break;
    case AHA_PLOT_PNG: fprintf(gp, "set terminal pngcairo size %d,%d font \"Sans,10\"\n", o->width, o->height); break;
    }
    fprintf(gp, "set output '%s.%s'\nset datafile missing NaN\n", name, aha_enum_name(&aha_plot_formats, o->format));
}

// The last line of file path (at most size - 1 bytes of it) into buf, "" when none.
static void last_line(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    char line[512];
    buf[0] = '\0';
    while (f && fgets(line, sizeof line, f))
        if (line[strspn(line, " \t\r\n")]) snprintf(buf, size, "%.*s", (int)strcspn(line, "\r\n"), line);
    if (f) fclose(f);
}

// Run gnuplot on NAME.gp in dir (so the script's relative names work there
// too), its messages into dir/NAME.log, whose last line the error quotes (the
// folder is removed with the failed output). posix_spawn: a large report in
// memory is not copied (nor its page tables) to start it.
static int gnuplot(const char *dir, const char *name) {
    char script[256], log[4096], said[256];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    char *argv[] = {"gnuplot", script, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int st = 0, rc = posix_spawn_file_actions_init(&fa);
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (!rc) rc = posix_spawn_file_actions_addchdir_np(&fa, dir);
    if (!rc) rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == 0 && (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) rc = -1;
    if (rc != 0) { // rc > 0: gnuplot did not start
        last_line(log, said, sizeof said);
        aha_err("gnuplot %s.gp failed (%s%s%s)", name,
                rc == ENOENT ? "gnuplot is not installed: apt-get install gnuplot-nox"
                : rc > 0     ? strerror(rc)
                             : "exit status",
                said[0] ? "; it said: " : "", said);
        return -1;
    }
    unlink(log);
    return 0;
}

// 1 when dir/NAME.<ext> (a figure gnuplot wrote; absent: 1) ends as a whole
// file of its format does: gnuplot says nothing when a write fails (a full
// disk), and a cut figure must not pass for one.
static int rendered_whole(const char *dir, const char *name, const char *ext) {
    static const struct {
        const char *ext, *end;
        size_t n;
    } tails[] = {{"png", "IEND\xae\x42\x60\x82", 8}, {"svg", "</svg>", 6}, {"pdf", "%%EOF", 5}};
    char path[4096], buf[64] = "";
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT;
    size_t n =
        fseek(f, -(long)sizeof buf, SEEK_END) == 0 || fseek(f, 0, SEEK_SET) == 0 ? fread(buf, 1, sizeof buf, f) : 0;
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++)
        if (!strcmp(ext, tails[i].ext))
            return n >= tails[i].n && !memcmp(buf + n - tails[i].n, tails[i].end, tails[i].n);
    return 1;
}

int aha_plot_render(FILE *gp, FILE *dat, const char *dir, const char *name) {
    int bad = ferror(gp) | (dat && ferror(dat));
    bad |= fclose(gp) != 0;
    if (dat) bad |= fclose(dat) != 0;
    if (bad) aha_err("%s/%s: write failed", dir, name);
    if (bad || rep_read_failed() || gnuplot(dir, name) != 0) return -1; // a failed read has its message
    for (int i = 0; i < aha_plot_formats.n; i++)
        if (!rendered_whole(dir, name, aha_plot_formats.names[i])) {
            aha_err("%s/%s.%s: gnuplot wrote it cut short (a full disk?)", dir, name, aha_plot_formats.names[i]);
            return -1;
        }
    return 0;
}

void aha_plot_title_settings(const cJSON *tr, char *buf, size_t size) { aha_report_settings_sep(tr, ";\\n", buf, size); }

void aha_plot_layers_note(const cJSON *tr, int always, char *buf, size_t size) {
    char n[64];
    aha_report_layers_short(tr, n, sizeof n);
    if (always || aha_report_has_local(tr)) snprintf(buf, size, " (%s)", n);
    else buf[0] = '\0';
}
