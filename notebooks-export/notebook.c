// aha notebook TRACE -o analysis.ipynb: an nbformat v4 notebook that carries
// the run's summary, Python (h5py + matplotlib) cells that load the trace and
// redraw each figure, and, stored as the cells' outputs, the gnuplot figures
// and tables, so that it reads well without being run.
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "commands.h"
#include "err.h"
#include "flags.h"
#include "frontier.h"
#include "mass.h"
#include "plot.h"
#include "report.h"
#include "trace_schema.h"

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double num(const cJSON *o, const char *k) { return cJSON_GetNumberValue(get(o, k)); }

static char *b64(const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; out && i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63], *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=', *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    if (out) *o = '\0';
    return out;
}

// The file dir/name.png as base64, or NULL with a message.
static char *png_b64(const char *dir, const char *name) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n)
        n = -1;
    if (f) fclose(f);
    char *s = n >= 0 && buf ? b64(buf, (size_t)n) : NULL;
    free(buf);
    if (!s) aha_err("%s: cannot read the figure", path);
    return s;
}

static int cell_no;

static cJSON *cell(const char *type, const char *src) {
    cJSON *c = cJSON_CreateObject();
    char id[16];
    snprintf(id, sizeof id, "cell-%d", cell_no++);
    cJSON_AddStringToObject(c, "cell_type", type);
    cJSON_AddStringToObject(c, "id", id);
    cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
    cJSON_AddStringToObject(c, "source", src);
    if (strcmp(type, "code") == 0) {
        cJSON_AddNullToObject(c, "execution_count");
        cJSON_AddArrayToObject(c, "outputs");
    }
    return c;
}

static void add_png(cJSON *code, char *png) {
    cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output_type", "display_data");
    cJSON_AddItemToObject(o, "data", data);
    cJSON_AddStringToObject(data, "image/png", png);
    cJSON_AddStringToObject(data, "text/plain", "<Figure (rendered by aha plot with gnuplot)>");
    cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(code, "outputs"), o);
    free(png);
}

static void add_text(cJSON *code, const char *text) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output_type", "stream");
    cJSON_AddStringToObject(o, "name", "stdout");
    cJSON_AddStringToObject(o, "text", text);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(code, "outputs"), o);
}

// The summary: what was run and the numbers people quote, over all
// decisions (the paper's metric) and over those with t >= w.
static char *summary_md(const cJSON *tr, const char *trace) {
    aha_buf b = {0};
    const cJSON *w, *r, *lt0 = cJSON_GetArrayItem(get(tr, "long_tail"), 0);
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    aha_buf_printf(&b, "# Attention context dependency: %s\n\n", get(tr, "model")->valuestring);
    const char *mode = get(tr, "mode")->valuestring; // what recorded it: observe and routed are aha record's
    aha_buf_printf(&b, "Trace `%s` (relative to this notebook's folder; `%s`, mode %s, router %s) over `%s`: %.0f documents, %.0f "
                       "tokens, %.0f layers x %.0f heads = %.0f decisions%s; %s.\n\n",
                   trace, strcmp(mode, "sweep") ? "aha record" : "aha sweep", mode, get(tr, "router")->valuestring,
                   get(tr, "dataset")->valuestring,
                   num(tr, "n_docs"), num(tr, "n_tokens"), num(tr, "n_layers"), num(tr, "n_heads"), num(tr, "decisions"),
                   cJSON_IsTrue(get(tr, "complete")) ? "" : " (an unfinished trace: its completed documents)", set);
    if (num(tr, "n_global_layers") < num(tr, "n_layers")) {
        const cJSON *x;
        aha_buf_printf(&b, "**Natively local layers** (`layer_window`):");
        cJSON_ArrayForEach(x, get(tr, "local_layers")) aha_buf_printf(&b, " %.0f (window %.0f)%s", num(x, "layer"), num(x, "window"), x->next ? "," : ".");
        aha_buf_printf(&b, " They run their native sliding window in every mode: the router decides nothing there and d_eps is "
                           "at most the window by construction, so every number here counts the %.0f global layers only "
                           "(`aha report` lists the local ones apart).\n\n", num(tr, "n_global_layers"));
    }
    for (int tw = 0; tw < 2; tw++) {
        aha_buf_printf(&b, "%s", tw ? "\n\nThe same over **decisions with t >= w** only (those where the window drops keys):\n\n| router |"
                                    : "Fraction of decisions that need full attention (oracle: d_eps > w) over **all decisions** "
                                      "(every layer, token and head, prompt tokens included: the paper's metric):\n\n| router |");
        cJSON_ArrayForEach(w, get(tr, "windows")) aha_buf_printf(&b, " w=%d |", w->valueint);
        aha_buf_printf(&b, "\n|---|");
        cJSON_ArrayForEach(w, get(tr, "windows")) aha_buf_printf(&b, "---:|");
        cJSON_ArrayForEach(r, get(tr, "routers")) {
            if (strcmp(get(r, "router")->valuestring, "oracle") == 0) aha_buf_printf(&b, "\n| oracle eps %g |", num(r, "eps"));
            else aha_buf_printf(&b, "\n| learned tau %g |", num(r, "tau"));
            cJSON_ArrayForEach(w, get(r, "windows")) {
                const cJSON *x = get(get(w, tw ? "t_ge_w" : "all"), "fraction"); // null: no decision has t >= w
                if (cJSON_IsNumber(x)) aha_buf_printf(&b, " %.4f |", x->valuedouble);
                else aha_buf_printf(&b, " - |");
            }
        }
    }
    const cJSON *q = get(lt0, "quantiles");
    aha_buf_printf(&b, "\n\nDependency distance d_eps (eps %g, all decisions): median %.0f, p90 %.0f, p99 %.0f, max %.0f tokens.\n\n"
                       "The cells below load the trace with h5py and redraw each figure with matplotlib; the stored outputs are "
                       "the gnuplot figures of `aha plot`. They read whole datasets: for large traces use `aha report`.",
                   num(lt0, "eps"), num(q, "median"), num(q, "p90"), num(q, "p99"), num(q, "max"));
    return aha_buf_take(&b, "the notebook's summary");
}

// The trace's dataset names as the schema has them, a Python dict DS by
// each row's key ({eps}: an eps as %g, {window}, {run}: str.format fills
// them), and RUNS, the group of the runs.
static void py_names(aha_buf *b) {
    aha_buf_printf(b, "# The trace's datasets, named as aha's schema names them (docs/trace-format.md):\n"
                      "# {eps} is an eps printed as %%g, {window} a window, {run} a run's name.\nDS = {");
    for (int i = 0; i < TD_COUNT; i++)
        aha_buf_printf(b, "%s\"%s\": \"%s\"", i ? ",\n      " : "", trace_dsets[i].key, trace_dsets[i].path);
    aha_buf_printf(b, "}\nRUNS = \"%s\"\n", trace_groups[TG_RUNS].path);
}

// Python sources of the cells; %s / %d are filled in below.
static const char *py_setup =
    "import os\n\nimport h5py\nimport numpy as np\nimport matplotlib\nimport matplotlib.pyplot as plt\n\n"
    "# The trace, relative to this notebook's folder (Jupyter runs a notebook there): move them together.\n"
    "TRACE = %s\n"
    "if not os.path.exists(TRACE):\n"
    "    raise FileNotFoundError(f\"{TRACE}: not found from {os.getcwd()}: run the notebook from its own folder, or set TRACE\")\n"
    "f = h5py.File(TRACE, \"r\")\n%s"
    "L, H = int(f.attrs[\"n_layers\"]), int(f.attrs[\"n_heads\"])\n"
    "SET = f\"sinks {int(f.attrs['sinks'])}, ctx {int(f.attrs['ctx'])}\" if \"ctx\" in f.attrs and int(f.attrs[\"ctx\"]) > 0 \\\n"
    "    else f\"sinks {int(f.attrs['sinks'])}, ctx not recorded\"  # the settings every figure names\n"
    "# Natively local layers (layer_window > 0: a native sliding window, as Gemma-3's) run their window in every\n"
    "# mode: the router decides nothing there and d_eps is at most the window, so every count over layers is GL's.\n"
    "LW = f.attrs[\"layer_window\"] if \"layer_window\" in f.attrs else np.zeros(L, np.int64)  # older traces: all global\n"
    "GL = np.flatnonzero(LW == 0)  # the global layers\n"
    "if len(GL) < L:\n"
    "    wl = sorted(set(LW[LW > 0].tolist()))\n"
    "    SET += (f\"; global layers only: {len(GL)} of {L}; {L - len(GL)} natively local (window\"\n"
    "            + (f\" {wl[0]}\" if len(wl) == 1 else f\"s {wl[0]}-{wl[-1]}\") + \") shown apart\")\n"
    "windows = [int(w) for w in f.attrs[\"windows\"]]\neps = [float(e) for e in f.attrs[\"eps\"]]\n"
    "pos = f[DS[\"position\"]][...]\noffsets = f[DS[\"doc_offsets\"]][...]\n"
    "dep = {e: f[DS[\"dep\"].format(eps=format(e, \"g\"))][...] for e in eps}  # [L, T, H] d_eps\n"
    "gate = f[DS[\"gate\"]][...] if DS[\"gate\"] in f else None  # learned router, [L, T, H]\n"
    "\n\ndef rate(g, w=None):\n"
    "    \"\"\"Fraction of g [L, T, H] that is set on the global layers: over all decisions (the paper's metric), or\n"
    "    with w over the decisions with t >= w (where the window drops keys); NaN when there are none.\"\"\"\n"
    "    g = g[GL] if w is None else g[GL][:, pos >= w, :]\n"
    "    return g.mean() if g.size else float(\"nan\")\n\n\n"
    "def as_str(v):\n"
    "    \"\"\"A string attribute as str: the trace holds fixed-length UTF-8 strings, which h5py returns as bytes.\"\"\"\n"
    "    return v.decode() if isinstance(v, bytes) else v\n\n\n"
    "print(f\"{L} layers x {H} heads, {len(pos)} tokens, {len(offsets) - 1} documents; {SET}\")\n";
static const char *py_table =
    "for tw in (False, True):\n"
    "    print(f\"{'decisions with t >= w' if tw else 'all decisions'} ({SET})\")\n"
    "    print(\"router        \" + \"\".join(f\"{'w=' + str(w):>9}\" for w in windows))\n"
    "    for e in eps:\n"
    "        print(f\"{'oracle ' + format(e, 'g'):14}\" + \"\".join(f\"{rate(dep[e] > w, w if tw else None):9.4f}\" for w in windows))\n"
    "    if gate is not None:\n"
    "        print(f\"{'learned':14}\" + \"\".join(f\"{rate(gate != 0, w if tw else None):9.4f}\" for w in windows))\n";
static const char *py_sparsity =
    "fig, ax = plt.subplots(figsize=(8, 5))\n"
    "for k, e in enumerate(eps):\n"
    "    for tw, ls in ((False, \"o-\"), (True, \"o--\")):\n"
    "        ax.plot(windows, [rate(dep[e] > w, w if tw else None) for w in windows], ls, c=f\"C{k}\", mfc=\"none\" if tw else None,\n"
    "                label=f\"oracle, eps {e:g}, {'decisions with t >= w' if tw else 'all decisions'}\")\n"
    "if gate is not None:\n"
    "    for tw, ls in ((False, \"o-\"), (True, \"o--\")):\n"
    "        ax.plot(windows, [rate(gate != 0, w if tw else None) for w in windows], ls, c=f\"C{len(eps)}\",\n"
    "                label=f\"learned router, {'decisions with t >= w' if tw else 'all decisions'}\")\n"
    "ax.axhline(1, ls=\":\", c=\"gray\", label=\"all-global (full attention)\")\n"
    "ax.set_xscale(\"log\", base=2); ax.set_ylim(0, 1.05); ax.grid(alpha=.3); ax.legend(fontsize=7)\n"
    "ax.set_title(f\"Sparsity (solid: all decisions, the paper's metric; dashed: t >= w; {SET})\", fontsize=9)\n"
    "ax.set_xlabel(\"local window w (tokens)\"); ax.set_ylabel(\"fraction needing full attention\")\nplt.show()\n";
static const char *py_ccdf =
    "fig, ax = plt.subplots(figsize=(8, 5))\nfor e in eps:\n    d = np.sort(dep[e][GL].ravel()); w = np.arange(1, d[-1] + 1)\n"
    "    ax.loglog(w, 1 - np.searchsorted(d, w, side=\"right\") / d.size,\n"
    "              label=f\"{'all' if len(GL) == L else 'global'} layers, eps {e:g}\")\n"
    "for ls in [GL[g * len(GL) // 3:(g + 1) * len(GL) // 3] for g in range(3)] if len(GL) >= 3 else []:  # thirds of GL\n"
    "    d = np.sort(dep[eps[0]][ls].ravel()); w = np.arange(1, d[-1] + 1)\n"
    "    ax.loglog(w, 1 - np.searchsorted(d, w, side=\"right\") / d.size, \"--\", label=f\"layers {ls[0]}-{ls[-1]}, eps {eps[0]:g}\")\n"
    "ax.set_title(f\"Long tail of d_eps (all decisions; {SET})\", fontsize=9)\n"
    "ax.set_xlabel(\"window w (tokens)\"); ax.set_ylabel(\"P(d_eps > w)\"); ax.grid(alpha=.3); ax.legend()\nplt.show()\n";
static const char *py_heatmap =
    "w = %d\nrate = (dep[eps[0]][:, pos >= w, :] > w).mean(axis=1)  # [L, H], decisions with t >= w\n"
    "rate[LW > 0] = np.nan  # natively local layers: blank rows\n"
    "fig, ax = plt.subplots(figsize=(8, 5))\nim = ax.imshow(rate, origin=\"lower\", aspect=\"auto\", vmax=1)\n"
    "ax.set_yticks(range(L), [f\"{l} local\" if LW[l] else str(l) for l in range(L)], fontsize=7)\n"
    "fig.colorbar(im, label=\"fraction global\"); ax.set_xlabel(\"head\"); ax.set_ylabel(\"layer\")\n"
    "ax.set_title(f\"oracle eps {eps[0]:g}, w = {w}, decisions with t >= w; {SET}\", fontsize=9)\nplt.show()\n";
static const char *py_raster =
    "w, doc, n = %d, %d, %d\nt0 = offsets[doc]; n = min(n, offsets[doc + 1] - t0)\n"
    "r = (dep[eps[0]][:, t0:t0 + n, :] > w).astype(int)\n"
    "if gate is not None:\n    r += 2 * (gate[:, t0:t0 + n, :] != 0)\n"
    "text = f[DS[\"token_text\"]].asstr()[t0:t0 + n]\n"
    "fig, ax = plt.subplots(figsize=(8, 5))\n"
    "colors = [\"white\", \"#d62728\", \"#1f77b4\", \"#6a3d9a\"][: 2 if gate is None else 4]  # local, oracle, learned, both\n"
    "ax.imshow(r.transpose(0, 2, 1).reshape(L * H, n), aspect=\"auto\", interpolation=\"nearest\",\n"
    "          cmap=matplotlib.colors.ListedColormap(colors), vmin=0, vmax=len(colors) - 1)\n"
    "step = max(1, n // 40)\nax.set_xticks(range(0, n, step), [repr(s)[1:-1] for s in text[::step]], rotation=90, fontsize=7)\n"
    "ax.set_yticks([l * H for l in range(L)], [f\"L{l} local\" if LW[l] else f\"L{l}\" for l in range(L)], fontsize=7)\n"
    "ax.set_title(f\"document {doc}, w = {w} (oracle eps {eps[0]:g}; {SET})\", fontsize=9)\nplt.show()\n";
static const char *py_quality =
    "rows = []\nfor name, g in f[RUNS].items():\n    nll = f[DS[\"run_nll\"].format(run=name)][...]; nll = nll[np.isfinite(nll)]\n"
    "    gate_name = DS[\"run_gate\"].format(run=name)\n"
    "    rows.append((name, as_str(g.attrs[\"policy\"]), int(g.attrs[\"window\"]), np.exp(nll.mean()),\n"
    "                 f[DS[\"run_kl\"].format(run=name)][...].mean(), f[gate_name][...][GL].mean() if gate_name in f else 1.0))\n"
    "full = [r for r in rows if r[1] == \"global\"][0]\nrouted = [r for r in rows if r[1] != \"global\"]\n"
    "rt = as_str(f.attrs[\"router\"])  # the policy, or the grid's name\n"
    "fig, ax = plt.subplots(figsize=(8, 5)); ax2 = ax.twinx()\n"
    "for k, pol in enumerate(dict.fromkeys(r[1] for r in routed)):  # a line per policy, its runs by fraction global\n"
    "    pts = sorted((r for r in routed if r[1] == pol), key=lambda r: r[5])\n"
    "    ax.plot([r[5] for r in pts], [100 * (r[3] / full[3] - 1) for r in pts], \"o-\", c=f\"C{k}\", label=f\"{pol}: perplexity change\")\n"
    "    ax2.plot([r[5] for r in pts], [r[4] for r in pts], \"s--\", c=f\"C{k}\", label=f\"{pol}: mean KL\")\n"
    "(h1, l1), (h2, l2) = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()\n"
    "ax.legend(h1 + h2, l1 + l2, fontsize=7)\n"
    "ax.set_xlabel(\"fraction routed global (all decisions)\"); ax.set_ylabel(\"perplexity change (%)\"); ax2.set_ylabel(\"mean KL (nats)\")\n"
    "ax.set_title(f\"Quality vs sparsity, routed by {rt} ({SET})\", fontsize=9)\nplt.show()\n";
static const char *py_mass =
    "S, e0 = int(f.attrs[\"sinks\"]), eps[0]\n"
    "sink = f[DS[\"mass_sinks\"]][...].astype(np.float64)  # [L, T, H] mass on keys 0..S-1\n"
    "n = len(GL)\ngroups = [GL[g * n // min(3, n):(g + 1) * n // min(3, n)] for g in range(min(3, n))]  # thirds of GL, as aha report\n"
    "labels, rows = [], [[], []]\n"
    "for w in windows:\n"
    "    far = f[DS[\"mass_far\"].format(window=w)][...].astype(np.float64)  # mass on keys S..t-w\n"
    "    for ls in [GL] + groups:\n"
    "        sub = np.zeros(far.shape, bool); sub[np.ix_(ls, pos >= w + S)] = True  # window and sinks do not overlap\n"
    "        for k, m in enumerate((sub, sub & (dep[e0] > w))):\n"
    "            s_, f_ = (sink[m].mean(), far[m].mean()) if m.any() else (np.nan, np.nan)\n"
    "            rows[k].append((s_, 1 - s_ - f_, f_))\n"
    "        labels.append(f\"w{w} \" + (\"all layers\" if ls is GL else f\"layers {ls[0]}-{ls[-1]}\"))\n"
    "x = np.arange(len(labels))\n"
    "fig, axs = plt.subplots(2, 1, figsize=(8, 6), sharex=True)\n"
    "for ax, r, title in zip(axs, rows, (\"decisions with t >= w + sinks\", \"those the oracle calls global (d_eps > w)\")):\n"
    "    r, bottom = np.array(r), np.zeros(len(labels))\n"
    "    for k, name in enumerate((\"sinks\", \"window\", \"far context\")):\n"
    "        ax.bar(x, r[:, k], bottom=bottom, label=name); bottom += np.nan_to_num(r[:, k])\n"
    "    ax.set_ylim(0, 1); ax.set_ylabel(\"mean mass\"); ax.set_title(f\"{title} (oracle eps {e0:g}; {SET})\", fontsize=9)\n"
    "axs[0].legend(fontsize=7); axs[1].set_xticks(x, labels, rotation=60, fontsize=7)\nplt.show()\n";
static const char *py_frontier =
    "DELTA = %.17g  # aha notebook --delta: a relative perplexity change\n"
    "PAPER = (0.116, 0.0)  # OLMo-2-1B with AHA routers, w=128: 11.6%% global, ~0%% change\n"
    "nll = lambda r: f[DS[\"run_nll\"].format(run=r)][...].astype(np.float64)\n"
    "ppl = lambda r: np.exp(np.nanmean(nll(r)))\nfull = ppl(\"full\")\nlines = {}\n"
    "for name, g in f[RUNS].items():\n"
    "    pol = as_str(g.attrs[\"policy\"])\n"
    "    if pol == \"global\":\n        continue\n"
    "    w = int(g.attrs[\"window\"]); gt = f[DS[\"run_gate\"].format(run=name)][...][GL]  # global layers only\n"
    "    lines.setdefault((w, pol.split(\":\")[0]), []).append((gt.mean(), gt[:, pos >= w, :].mean(), ppl(name) / full - 1,\n"
    "        f[DS[\"run_kl\"].format(run=name)][...].mean(), name))\n\n\n"
    "def smallest(pts, k):\n"
    "    \"\"\"The smallest fraction global (column k) within DELTA: the first run within it, interpolated with the one before.\"\"\"\n"
    "    pts = sorted(pts, key=lambda p: (p[k], p[2]))\n"
    "    i = next((i for i, p in enumerate(pts) if p[2] <= DELTA), None)\n"
    "    if i is None:\n        return float(\"nan\"), \"not reached within the grid\"\n"
    "    if i == 0 or pts[i][2] == DELTA:\n        return pts[i][k], \"at a grid point\"\n"
    "    (x0, y0), (x1, y1) = (pts[i - 1][k], pts[i - 1][2]), (pts[i][k], pts[i][2])\n"
    "    return x0 + (DELTA - y0) * (x1 - x0) / (y1 - y0), \"interpolated\"\n\n\n"
    "print(f\"smallest fraction global with perplexity change <= {100 * DELTA:+.2f}%% ({SET})\")\n"
    "print(f\"{'w':>5} {'policy':10} {'all decisions':>14} {'how':28} {'t >= w':>8} how\")\n"
    "for (w, pol), pts in lines.items():\n"
    "    (a, ha), (b, hb) = smallest(pts, 0), smallest(pts, 1)\n"
    "    print(f\"{w:5d} {pol:10} {a:14.4f} {ha:28} {b:8.4f} {hb}\")\n"
    "ws = sorted({w for w, _ in lines})\n"
    "fig, axs = plt.subplots(2, len(ws), figsize=(5 * len(ws), 7), squeeze=False)\n"
    "for j, w in enumerate(ws):\n"
    "    for (lw, pol), pts in lines.items():\n"
    "        if lw == w:\n"
    "            pts = sorted(pts)\n"
    "            axs[0, j].plot([p[0] for p in pts], [100 * p[2] for p in pts], \"o-\", label=pol)\n"
    "            axs[1, j].plot([p[0] for p in pts], [p[3] for p in pts], \"o-\", label=pol)\n"
    "    axs[0, j].axhline(100 * DELTA, ls=\"--\", c=\"gray\", label=f\"delta {100 * DELTA:+.2f}%%\")\n"
    "    axs[0, j].plot(*PAPER, \"k*\", ms=12, label=\"paper: OLMo-2-1B AHA, w=128, 11.6%% global, ~0%% change\")\n"
    "    axs[0, j].set_title(f\"w = {w} (all decisions; {SET})\", fontsize=9); axs[0, j].set_ylabel(\"perplexity change (%%)\")\n"
    "    axs[1, j].set_ylabel(\"mean KL (nats)\"); axs[1, j].set_xlabel(\"fraction global (all decisions)\")\n"
    "    for ax in axs[:, j]:\n        ax.set_xlim(0, 1); ax.grid(alpha=.3); ax.legend(fontsize=7)\n"
    "plt.show()\n";
static const char *py_layers =
    "ws = %s\nfig, ax = plt.subplots(figsize=(8, 5))\nfor k, w in enumerate(ws):\n"
    "    rate = (dep[eps[0]][:, pos >= w, :] > w).mean(axis=(1, 2)); rate[LW > 0] = np.nan  # natively local: no bars\n"
    "    ax.bar(np.arange(L) + (k - len(ws) / 2 + .5) / (len(ws) + 1), rate, 1 / (len(ws) + 1), label=f\"w = {w}\")\n"
    "ax.set_xlabel(\"layer\"); ax.set_ylabel(\"fraction global\"); ax.set_ylim(0, 1.05); ax.legend()\n"
    "ax.set_title(f\"oracle eps {eps[0]:g}, decisions with t >= w; {SET}\", fontsize=9)\nplt.show()\n";

// A markdown heading cell, then a code cell with the figure's stored PNG.
static int add_figure(cJSON *cells, const char *dir, const char *name, const char *md, const char *code) {
    char *png = png_b64(dir, name);
    if (!png) return -1;
    cJSON_AddItemToArray(cells, cell("markdown", md));
    cJSON *c = cell("code", code);
    add_png(c, png);
    cJSON_AddItemToArray(cells, c);
    return 0;
}

// The printed table of py_table, as the cell's stored output.
static char *table_text(const cJSON *tr) {
    aha_buf b = {0};
    const cJSON *w, *r;
    char head[32], set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    for (int tw = 0; tw < 2; tw++) {
        aha_buf_printf(&b, "%s (%s)\nrouter        ", aha_report_subset(tw), set);
        cJSON_ArrayForEach(w, get(tr, "windows")) snprintf(head, sizeof head, "w=%d", w->valueint), aha_buf_printf(&b, "%9s", head);
        cJSON_ArrayForEach(r, get(tr, "routers")) {
            if (strcmp(get(r, "router")->valuestring, "oracle") == 0) snprintf(head, sizeof head, "oracle %g", num(r, "eps"));
            else snprintf(head, sizeof head, "learned");
            aha_buf_printf(&b, "\n%-14s", head);
            cJSON_ArrayForEach(w, get(r, "windows")) {
                const cJSON *x = get(get(w, tw ? "t_ge_w" : "all"), "fraction");
                if (cJSON_IsNumber(x)) aha_buf_printf(&b, "%9.4f", x->valuedouble);
                else aha_buf_printf(&b, "%9s", "nan"); // as Python prints NaN
            }
        }
        aha_buf_printf(&b, "\n");
    }
    return aha_buf_take(&b, "the notebook's table");
}

// The printed table of py_frontier, from the report's frontier.
static char *frontier_text(const cJSON *tr) {
    aha_buf b = {0};
    const cJSON *fr = get(tr, "frontier"), *l;
    char set[AHA_SETTINGS_MAX];
    aha_report_settings(tr, set, sizeof set);
    aha_buf_printf(&b, "smallest fraction global with perplexity change <= %+.2f%% (%s)\n", 100 * num(fr, "delta"), set);
    aha_buf_printf(&b, "%5s %-10s %14s %-28s %8s how\n", "w", "policy", "all decisions", "how", "t >= w");
    cJSON_ArrayForEach(l, get(fr, "lines")) {
        const cJSON *a = get(l, "smallest_all"), *t = get(l, "smallest_t_ge_w");
        const cJSON *fa = get(a, "fraction"), *ft = get(t, "fraction");
        aha_buf_printf(&b, "%5d %-10s ", (int)num(l, "window"), get(l, "policy")->valuestring);
        if (cJSON_IsNumber(fa)) aha_buf_printf(&b, "%14.4f", fa->valuedouble);
        else aha_buf_printf(&b, "%14s", "nan");
        aha_buf_printf(&b, " %-28s ", get(a, "how")->valuestring);
        if (cJSON_IsNumber(ft)) aha_buf_printf(&b, "%8.4f", ft->valuedouble);
        else aha_buf_printf(&b, "%8s", "nan");
        aha_buf_printf(&b, " %s\n", get(t, "how")->valuestring);
    }
    return aha_buf_take(&b, "the notebook's frontier table");
}

static cJSON *notebook(const cJSON *tr, const char *trace, const char *dir, const aha_plot_opts *o, const char **names,
                       int n_fig) {
    cJSON *nb = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *ks = cJSON_CreateObject();
    cJSON *cells = cJSON_AddArrayToObject(nb, "cells");
    cJSON_AddItemToObject(nb, "metadata", meta);
    cJSON_AddItemToObject(meta, "kernelspec", ks);
    cJSON_AddStringToObject(ks, "name", "python3");
    cJSON_AddStringToObject(ks, "display_name", "Python 3");
    cJSON_AddStringToObject(ks, "language", "python");
    cJSON_AddItemToObject(cJSON_AddObjectToObject(meta, "language_info"), "name", cJSON_CreateString("python"));
    cJSON_AddNumberToObject(nb, "nbformat", 4);
    cJSON_AddNumberToObject(nb, "nbformat_minor", 5);
    cell_no = 0;
    aha_buf ds = {0};
    py_names(&ds);
    char *md = summary_md(tr, trace), *names_py = aha_buf_take(&ds, "the notebook's dataset names");
    char *table = md && names_py ? table_text(tr) : NULL;
    char src[3 * PATH_MAX], quoted[PATH_MAX + 8], ws[256] = "[";
    if (!table) { // the text a cell or output would lack: the error says which
        free(md), free(names_py), cJSON_Delete(nb);
        return NULL;
    }
    cJSON_AddItemToArray(cells, cell("markdown", md));
    free(md);
    cJSON *q = cJSON_CreateString(trace); // a JSON string is a valid Python string literal
    char *qs = cJSON_PrintUnformatted(q);
    snprintf(quoted, sizeof quoted, "%s", qs ? qs : "''");
    free(qs), cJSON_Delete(q);
    snprintf(src, sizeof src, py_setup, quoted, names_py);
    free(names_py);
    cJSON_AddItemToArray(cells, cell("code", src));
    cJSON *c = cell("code", py_table);
    add_text(c, table);
    free(table);
    cJSON_AddItemToArray(cells, cell("markdown", "## Key numbers\n\nFraction of decisions routed global per window, over all decisions "
                                                     "(the paper's metric) and over decisions with t >= w."));
    cJSON_AddItemToArray(cells, c);
    int heat, raster, pick[4], np = aha_plot_layer_windows(tr, pick);
    aha_plot_windows(tr, o, &heat, &raster);
    const cJSON *wins = get(tr, "windows");
    for (int k = 0; k < np; k++)
        snprintf(ws + strlen(ws), sizeof ws - strlen(ws), "%d%s", cJSON_GetArrayItem(wins, pick[k])->valueint, k + 1 < np ? ", " : "]");
    for (int i = 0; i < n_fig; i++) {
        const char *nm = names[i], *mdh = "", *code = src;
        if (!strcmp(nm, "sparsity")) {
            mdh = "## Sparsity vs window\n\nFraction of decisions that need full attention at each local window (log2 axis): "
                  "the oracle at each eps and the learned router, against the all-global line; solid over all decisions, "
                  "dashed over decisions with t >= w.";
            code = py_sparsity;
        } else if (!strcmp(nm, "ccdf")) {
            mdh = "## Long tail\n\nCCDF of the dependency distance, P(d_eps > w) over all decisions, log-log: per eps, and "
                  "per layer group.";
            code = py_ccdf;
        } else if (!strcmp(nm, "heatmap")) {
            mdh = "## Layer x head\n\nGlobal rate of each head (oracle, first eps, decisions with t >= w) at one window.";
            snprintf(src, sizeof src, py_heatmap, cJSON_GetArrayItem(wins, heat)->valueint);
        } else if (!strcmp(nm, "raster")) {
            mdh = "## Routing raster\n\nDecisions per token (columns) and (layer, head) (rows) for one document.";
            snprintf(src, sizeof src, py_raster, cJSON_GetArrayItem(wins, raster)->valueint, o->doc, o->tokens);
        } else if (!strcmp(nm, "quality")) {
            mdh = "## Quality vs sparsity\n\nPerplexity change and mean KL against full attention, per routed run, against "
                  "the fraction routed global over all decisions.";
            code = py_quality;
        } else if (!strcmp(nm, "frontier")) {
            mdh = "## Frontier\n\nPer window and policy: perplexity change and mean KL against the fraction routed global "
                  "(all decisions), the delta line and the paper's operating point; and the smallest fraction global with "
                  "perplexity change <= delta (over all decisions and over t >= w), interpolated between the runs that "
                  "bracket delta.";
            snprintf(src, sizeof src, py_frontier, num(get(tr, "frontier"), "delta"));
        } else if (!strcmp(nm, "mass")) {
            mdh = "## Where attention mass goes\n\nMean attention mass per decision on the sinks, the window and the far "
                  "context (keys sinks..t-w, what d_eps thresholds), per window and layer group, over decisions with "
                  "t >= w + sinks and over those the oracle calls global (recorded with aha record --mass).";
            code = py_mass;
        } else {
            mdh = "## Per layer\n\nGlobal rate of each layer (oracle, first eps, t >= w) at several windows.";
            snprintf(src, sizeof src, py_layers, ws);
        }
        char *t = NULL;
        if (add_figure(cells, dir, nm, mdh, code) != 0 || (!strcmp(nm, "frontier") && !(t = frontier_text(tr)))) {
            cJSON_Delete(nb);
            return NULL;
        }
        if (t) add_text(cJSON_GetArrayItem(cells, cJSON_GetArraySize(cells) - 1), t); // the frontier's table above its figure
        free(t);
    }
    return nb;
}

// The path of file `to` from directory `from`, both absolute and canonical
// (realpath): "t.h5", "../data/t.h5".
static void rel_path(const char *from, const char *to, char *buf, size_t size) {
    size_t i = 0, common = 0; // common: the '/' ending the shared leading components
    for (; from[i] && from[i] == to[i]; i++)
        if (from[i] == '/') common = i;
    if (!from[i] && to[i] == '/') common = i; // to is inside from
    buf[0] = '\0';
    for (const char *c = from + common + (from[common] == '/'); *c;) { // one "../" per component left in from
        strncat(buf, "../", size - strlen(buf) - 1);
        c += strcspn(c, "/");
        c += *c == '/';
    }
    strncat(buf, to + common + 1, size - strlen(buf) - 1);
}

// The trace's path as the notebook at nb_path should name it: relative to
// the notebook's folder, so that moving both together keeps it working.
static void trace_from_notebook(const char *trace, const char *nb_path, char *buf, size_t size) {
    char nb_dir[PATH_MAX], abs_dir[PATH_MAX], abs_trace[PATH_MAX];
    const char *slash = strrchr(nb_path, '/');
    if (slash) snprintf(nb_dir, sizeof nb_dir, "%.*s", slash == nb_path ? 1 : (int)(slash - nb_path), nb_path);
    else snprintf(nb_dir, sizeof nb_dir, ".");
    if (realpath(nb_dir, abs_dir) && realpath(trace, abs_trace)) rel_path(abs_dir, abs_trace, buf, size);
    else snprintf(buf, size, "%s", trace);
}

int aha_cmd_notebook(int argc, char **argv) {
    const char *out = "analysis.ipynb", *figures = NULL;
    const char *delta_s = AHA_FRONTIER_DELTA;
    double delta = 0;
    int force = 0;
    aha_plot_opts o = {AHA_PLOT_PNG, 800, 500, 0, 0, 96, NULL};
    const aha_flag flags[] = {
        {"-o", FLAG_STR, &out, "the notebook to write", NULL},
        {"--figures", FLAG_STR, &figures, "directory for the gnuplot figures; default: the notebook's name + _figures", NULL},
        {"--window", FLAG_INT, &o.window, "window of the heatmap and raster; 0: as aha plot chooses", ">= 0"},
        {"--doc", FLAG_INT, &o.doc, "document of the raster", ">= 0"},
        {"--tokens", FLAG_INT, &o.tokens, "raster: first tokens of the document shown", ">= 1"},
        {"--delta", FLAG_STR, &delta_s, "frontier: the smallest fraction global with perplexity change <= delta (0.01 = +1%)", NULL},
        {"--force", FLAG_BOOL, &force, "overwrite an existing notebook and its figures", NULL},
        {NULL, 0, NULL, NULL, NULL}};
    const char *pos[1];
    AHA_PARSE("usage: aha notebook TRACE -o analysis.ipynb [--force]", flags, pos, 1);
    char dir[PATH_MAX], trace[PATH_MAX];
    size_t n = strlen(out);
    if (figures) snprintf(dir, sizeof dir, "%s", figures);
    else snprintf(dir, sizeof dir, "%.*s_figures", (int)(n > 6 && !strcmp(out + n - 6, ".ipynb") ? n - 6 : n), out);
    if (aha_frontier_delta(delta_s, &delta) != 0) return aha_cli_fail();
    // as a trace: an edited notebook is never lost silently, nor are its figures
    if (aha_traces_out("-o", out, NULL, 0, force, pos, 1) != 0 ||
        aha_plot_out(figures ? "--figures" : "-o", dir, &o, 0, force, pos, 1) != 0)
        return aha_cli_fail();
    cJSON *rep = aha_report_load(pos, 1, 0, 0);
    if (!rep || aha_report_frontier(rep, delta) != 0 || aha_mass_report(rep, pos, 1, 0, 0) != 0) {
        cJSON_Delete(rep);
        return aha_cli_fail();
    }
    const char *names[AHA_PLOT_MAX];
    int n_fig = 0, rc = -1;
    cJSON *nb = NULL;
    if (aha_mkdir(dir) == 0 && aha_plot_all(rep, pos[0], dir, &o, names, &n_fig) == 0) {
        trace_from_notebook(pos[0], out, trace, sizeof trace);
        nb = notebook(cJSON_GetArrayItem(get(rep, "traces"), 0), trace, dir, &o, names, n_fig);
    }
    char *text = nb ? cJSON_Print(nb) : NULL;
    FILE *f = text ? fopen(out, force ? "w" : "wx") : NULL; // wx: one made meanwhile is kept too
    if (text && !f && errno == EEXIST) aha_err("%s: exists (use --force to overwrite)", out);
    else if (text && !f) aha_err("%s: %s", out, strerror(errno));
    if (f) {
        fprintf(f, "%s\n", text);
        rc = fclose(f) == 0 ? 0 : (aha_err("%s: write failed", out), -1);
    }
    free(text), cJSON_Delete(nb), cJSON_Delete(rep);
    if (rc != 0) return aha_cli_fail();
    printf("%s (figures in %s)\n", out, dir);
    return 0;
}
