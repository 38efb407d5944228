// 4. Token x (layer, head) raster of one document's decisions at one window:
// the oracle's (first eps) and, where the model has one, the learned router's.
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "figure.h"
#include "report_schema.h"
#include "report_text.h"
#include "trace_read.h"

// A token's text as a gnuplot single-quoted label: visible newlines and tabs,
// no quotes or control characters, at most 12 bytes.
static void label(FILE *gp, const char *s) {
    char buf[64];
    int n = 0;
    for (; *s && n < 12; s++) {
        if (*s == '\n') buf[n++] = '\\', buf[n++] = 'n';
        else if (*s == '\t') buf[n++] = '\\', buf[n++] = 't';
        else if (*s == '\'' || *s == '"') buf[n++] = '`';
        else if ((unsigned char)*s < 0x20) buf[n++] = '?';
        else buf[n++] = *s;
    }
    buf[n] = '\0';
    fprintf(gp, "'%s'", buf);
}

static int read_doc(aha_tr *tr, int doc, int max_tokens, int64_t *t0, int64_t *n) {
    if (doc >= tr->n_docs) {
        aha_err("%s: --doc %d: the trace has %lld documents", tr->path, doc, (long long)tr->n_docs);
        return -1;
    }
    const int64_t *offs = tr->doc_offsets + doc; // checked when the trace was opened
    *t0 = offs[0];
    *n = offs[1] - offs[0] < max_tokens ? offs[1] - offs[0] : max_tokens;
    return 0;
}

// set: the trace's settings ("sinks S, ctx C"; tset: the same for the title).
static int write_raster(aha_tr *tr, FILE *dat, FILE *gp, int w, const char *set, const char *tset,
                        const aha_plot_opts *o) {
    int64_t t0, n;
    if (read_doc(tr, o->doc, o->tokens, &t0, &n) != 0) return -1;
    int L = tr->m.n_layers, H = tr->m.n_heads;
    size_t lth = (size_t)L * (size_t)n * (size_t)H;
    uint32_t *dep = aha_malloc(lth, sizeof *dep, "raster");
    uint8_t *gate = aha_calloc(lth, 1, "raster");
    char **text = aha_calloc((size_t)n, sizeof *text, "raster");
    int rc = -1;
    if (!dep || !gate || !text || aha_tr_read(tr, TD_DEP, 0, t0, n, dep) != 0 ||
        (tr->m.aha && aha_tr_read(tr, TD_GATE, 0, t0, n, gate) != 0) || aha_tr_read(tr, TD_TOKEN_TEXT, 0, t0, n, text) != 0)
        goto done;
    fprintf(dat, "# document %d, tokens 0..%lld, w = %d: one row per (layer, head) = layer * %d + head, one column per"
                 " token; 0 local, 1 oracle global (eps %g)%s; %s\n",
            o->doc, (long long)n - 1, w, H, tr->m.eps[0], tr->m.aha ? ", 2 learned global, 3 both" : "", set);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            for (int64_t t = 0; t < n; t++) {
                size_t k = ((size_t)l * n + t) * H + h;
                fprintf(dat, "%d ", (dep[k] > (uint32_t)w) + 2 * (gate[k] != 0));
            }
            fputc('\n', dat);
        }
    aha_plot_terminal(gp, "raster", o);
    int every = (int)((n * 14 + o->width - 200) / (o->width - 200)); // ~14 px per label
    fprintf(gp, "set xtics rotate by 90 right scale 0 font ',7' noenhanced (");
    for (int64_t t = 0; t < n; t += every) {
        label(gp, text[t]);
        fprintf(gp, " %lld%s", (long long)t, t + every < n ? ", " : "");
    }
    fprintf(gp, ")\nset ytics scale 0 (");
    int lstep = L > 16 ? 2 : 1;
    for (int l = 0; l < L; l += lstep) // a natively local layer says so: its router decides nothing
        fprintf(gp, "'L%d%s' %g%s", l, aha_trace_layer_window(&tr->m, l) ? " local" : "", l * H + (H - 1) / 2.0,
                l + lstep < L ? ", " : "");
    for (int l = 1; lstep > 1 && l < L; l += lstep)
        if (aha_trace_layer_window(&tr->m, l)) fprintf(gp, ", 'L%d local' %g", l, l * H + (H - 1) / 2.0);
    fprintf(gp, ")\nset for [l=1:%d] arrow from graph 0, first l*%d-0.5 to graph 1, first l*%d-0.5 nohead lc rgb 'gray70' lw 0.5\n",
            L - 1, H, H);
    if (tr->m.aha)
        fprintf(gp, "set palette defined (0 'white', 1 '#d62728', 2 '#1f77b4', 3 '#6a3d9a')\nset cbrange [-0.5:3.5]\n"
                    "set cbtics ('local' 0, 'oracle' 1, 'learned' 2, 'both' 3)\nset palette maxcolors 4\n");
    else
        fprintf(gp, "set palette defined (0 'white', 1 '#d62728')\nset cbrange [-0.5:1.5]\nset cbtics ('local' 0, 'global' 1)\nset palette maxcolors 2\n");
    fprintf(gp, "set xrange [-0.5:%g]\nset yrange [%g:-0.5]\nset ylabel 'layer (rows: heads)'\n"
                "set title \"Routing of document %d, first %lld tokens, w = %d (oracle eps %g; %s)\" noenhanced\n"
                "plot 'raster.dat' matrix with image notitle\n",
            n - 0.5, L * H - 0.5, o->doc, (long long)n, w, tr->m.eps[0], tset);
    rc = 0;
done:
    if (text) aha_tr_free_text(n, text);
    free(dep), free(gate), free(text);
    return rc;
}

int aha_plot_raster(const cJSON *trj, const char *trace_path, const char *dir, int wi, const aha_plot_opts *o) {
    int w = (int)rep_num_at(rep_get(trj, RF_TRACE_WINDOWS), wi);
    aha_tr tr;
    if (aha_tr_open(&tr, trace_path) != 0) return -1;
    FILE *dat, *gp;
    if (aha_plot_open(dir, "raster", &dat, &gp) != 0) {
        aha_tr_close(&tr);
        return -1;
    }
    char set[AHA_SETTINGS_MAX], tset[AHA_SETTINGS_MAX];
    aha_report_settings(trj, set, sizeof set);
    aha_plot_title_settings(trj, tset, sizeof tset);
    int rc = write_raster(&tr, dat, gp, w, set, tset, o);
    aha_tr_close(&tr);
    if (rc != 0) {
        fclose(dat), fclose(gp);
        return -1;
    }
    return aha_plot_render(gp, dat, dir, "raster");
}
