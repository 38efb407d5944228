"""aha sweep --policies (a grid of routed runs), the report's frontier and the
frontier figure (issue 16, part 2).

On a tiny model: every grid run is bit-identical to the single-policy run
`aha record --route P --window W` would make; topk's heads are the top k of
the observe trace's per-head oracle rates (numpy); werr's gates are
(window_error > threshold) from the trace (h5py). The smallest fraction
global within --delta equals a numpy interpolation over the runs' numbers
read from the trace with h5py; the frontier .dat / .gp hold the lines, the
delta line and the paper's point. On SmolLM2: the mass oracle beats random:P
at matched fraction global. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import csv
import io
import json
import os
import shutil
import tempfile

import h5py
import numpy as np

from ahatest import ROOT, aha, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_frontier_")
MODEL = os.path.join(ROOT, "tests/fixtures/tiny/llama_aha")  # has router rows: learned:TAU runs
SMOL = os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
PROSE = os.path.join(ROOT, "datasets/corpora/prose")
WINDOWS = (4, 8)
SINKS = "1"
rng = np.random.default_rng(3)
DATA = tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, size=n).tolist() for n in (70, 45, 60)])
OBS = os.path.join(TMP, "obs.h5")
GRID = os.path.join(TMP, "grid.h5")
POLICIES = "oracle:0.01,0.1 werr:0.05,0.2 random:0.3 topk:2 learned:0.4 local"
COMMON = ("--windows", ",".join(map(str, WINDOWS)), "--sinks", SINKS, "--seed", "7", "--force", "--quiet")
aha("record", MODEL, DATA, "-o", OBS, *COMMON)
aha("sweep", MODEL, DATA, "-o", GRID, "--policies", POLICIES, "--heads-from", OBS, *COMMON)


def topk_heads(w, k):
    """The k (layer, head) pairs of the observe trace with the most oracle-global decisions at w."""
    with h5py.File(OBS, "r") as f:
        eps0 = "%g" % f.attrs["eps"][0]
        d = f[f"dependency/eps_{eps0}"][...]
    counts = (d > w).sum(axis=1).ravel()  # [L * H]
    order = np.argsort(-counts, kind="stable")  # ties: the lower (layer, head) first
    heads = np.zeros(counts.size, np.uint8)
    heads[order[:k]] = 1
    return heads.reshape(d.shape[0], d.shape[2])


def single(name, route, w, *extra):
    out = os.path.join(TMP, f"single_{name}.h5")
    aha("record", MODEL, DATA, "-o", out, "--route", route, "--window", w, *COMMON, *extra)
    with h5py.File(out, "r") as f:
        (run,) = [r for r in f["runs"] if r != "full"]
        return {k: f[f"runs/{run}/{k}"][...] for k in ("nll", "kl", "gate")}


def test_grid_equals_single():
    with h5py.File(GRID, "r") as g:
        for w in WINDOWS:
            heads = topk_heads(w, 2)
            path = os.path.join(TMP, f"heads{w}.txt")
            with open(path, "w") as f:
                f.writelines(f"{l} {h}\n" for l, h in zip(*np.nonzero(heads)))
            cases = {f"oracle_e0.01_w{w}": ("oracle", "--eps", "0.01"), f"oracle_e0.1_w{w}": ("oracle", "--eps", "0.1"),
                     f"random_p0.3_w{w}": ("random:0.3",), f"learned_tau0.4_w{w}": ("learned", "--tau", "0.4"),
                     f"topk_k2_w{w}": (f"heads:{path}",), f"local_w{w}": ("local",)}
            for name, (route, *extra) in cases.items():
                one = single(name, route, w, *extra)
                for k in ("nll", "kl", "gate"):
                    got = g[f"runs/{name}/{k}"][...]
                    assert got.dtype == one[k].dtype and np.array_equal(got, one[k], equal_nan=True), f"{name} {k} differs"
            # topk: exactly numpy's top 2 heads, global at every token
            gate = g[f"runs/topk_k2_w{w}/gate"][...]
            assert np.array_equal(gate, np.broadcast_to(heads[:, None, :], gate.shape)), f"topk w{w}"


def test_werr_gates():
    with h5py.File(GRID, "r") as g:
        assert g.attrs["werr"] == 1, "werr:T turns the window errors on"
        for w in WINDOWS:
            err = g[f"window_error/w_{w}"][...]  # float16, as the router compared
            for thr in (0.05, 0.2):
                gate = g[f"runs/werr_t{thr:g}_w{w}/gate"][...]
                want = (err.astype(np.float32) > np.float32(thr)).astype(np.uint8)
                assert np.array_equal(gate, want), f"werr {thr} w{w}: {np.sum(gate != want)} gates differ"
                assert 0 < gate.mean() < 1, f"werr {thr} w{w}: a degenerate case {gate.mean()}"


def test_run_attrs():
    with h5py.File(GRID, "r") as g:
        runs = list(g["runs"])
        assert len(runs) == 1 + 8 * len(WINDOWS), runs
        want = {"oracle_e0.01": ("oracle", 0.01), "oracle_e0.1": ("oracle", 0.1), "werr_t0.05": ("werr", 0.05),
                "werr_t0.2": ("werr", 0.2), "random_p0.3": ("random", 0.3), "topk_k2": ("topk", 2),
                "learned_tau0.4": ("learned", 0.4), "local": ("local", None)}
        for stem, (policy, param) in want.items():
            for w in WINDOWS:
                a = g[f"runs/{stem}_w{w}"].attrs
                assert a["policy"] in (policy, policy.encode()) and a["window"] == w, (stem, dict(a))
                assert (np.isnan(a["param"]) if param is None else a["param"] == param), (stem, a["param"])
        # oracle:0.1 put its eps into the dependency pass; the first eps still drives the summary
        assert list(g.attrs["eps"]) == [0.01, 0.05, 0.1] and "eps_0.1" in g["dependency"], list(g.attrs["eps"])
    one = os.path.join(TMP, "one_eps.h5")
    aha("sweep", MODEL, DATA, "-o", one, "--policies", "oracle:0.3", "--eps", "0.02", *COMMON)
    with h5py.File(one, "r") as g:
        assert list(g.attrs["eps"]) == [0.02, 0.3], list(g.attrs["eps"])


def err(args, text):
    r = aha("sweep", MODEL, DATA, "-o", os.path.join(TMP, "never.h5"), *args, ok=False)
    assert r.returncode != 0 and text in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not os.path.exists(os.path.join(TMP, "never.h5"))


def test_refusals():
    big = "random:" + ",".join("%g" % (i / 40) for i in range(33))  # 33 points x 2 windows + full = 67 runs
    err(("--policies", big, "--windows", "4,8"), "a trace holds at most 64")
    err(("--policies", "topk:2",), "--heads-from")
    err(("--policies", "bogus:1",), "unknown policy 'bogus:1'")
    err(("--policies", "random:1.5",), "random takes numbers in [0, 1]")
    err(("--policies", "oracle:0.1,0.1",), "listed twice")
    err(("--policies", "local", "--route", "oracle"), "not both")
    err(("--policies", "topk:9999", "--heads-from", OBS), "heads in all")
    r = aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa"), DATA, "-o", os.path.join(TMP, "never.h5"),
            "--policies", "learned:0.5", ok=False)
    assert r.returncode != 0 and "learned:0.5: the model has no AHA router rows" in r.stderr, r.stderr


def runs_numbers(path):
    """Per routed run, from the trace's arrays: (name, policy, window, fraction all, fraction t >= w, ppl change)."""
    out = []
    with h5py.File(path, "r") as f:
        pos = f["position"][...]
        ppl = lambda r: np.exp(np.nanmean(f[f"runs/{r}/nll"][...].astype(np.float64)))
        full = ppl("full")
        for r in f["runs"]:
            a = f[f"runs/{r}"].attrs
            if r == "full":
                continue
            g = f[f"runs/{r}/gate"][...]
            w = int(a["window"])
            pol = a["policy"].decode() if isinstance(a["policy"], bytes) else a["policy"]
            out.append((r, pol, w, g.mean(), g[:, pos >= w].mean(), ppl(r) / full - 1))
    return out


def smallest(points, delta):
    """numpy's rule: sorted by fraction, the first within delta, interpolated with the one before."""
    points = sorted(points)
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    within = np.nonzero(ys <= delta)[0]
    if within.size == 0:
        return None, "not reached within the grid"
    i = within[0]
    if i == 0 or ys[i] == delta:
        return xs[i], "at a grid point"
    return float(np.interp(delta, ys[i - 1:i + 1][::-1], xs[i - 1:i + 1][::-1])), "interpolated"


def planted():
    """The grid trace with NLLs rewritten so the lines meet delta = 0.01 in each of the three ways."""
    path = os.path.join(TMP, "planted.h5")
    shutil.copy(GRID, path)
    # each line's ppl changes, its runs in order of fraction global: oracle brackets delta (interpolated),
    # werr and topk start within it (at a grid point), random, learned and local never reach it
    change = {"oracle": [0.03, 0.004], "werr": [0.005, 0.002], "random": [0.05], "topk": [0.001],
              "learned": [0.2], "local": [0.3]}
    with h5py.File(path, "r+") as f:
        base = f["runs/full/nll"][...]
        lines = {}
        for r in f["runs"]:
            if r != "full":
                a = f[f"runs/{r}"].attrs
                pol = a["policy"].decode() if isinstance(a["policy"], bytes) else a["policy"]
                lines.setdefault((pol, int(a["window"])), []).append((f[f"runs/{r}/gate"][...].mean(), r))
        for (pol, w), runs in lines.items():
            for c, (_, r) in zip(change[pol], sorted(runs)):
                f[f"runs/{r}/nll"][...] = (base + np.log1p(c)).astype(np.float32)
    return path


def test_smallest_at_delta():
    path = planted()
    delta = 0.01
    fr = json.loads(aha("report", path, "--out-format", "json", "--delta", delta).stdout)["traces"][0]["frontier"]
    assert fr["delta"] == delta
    nums = runs_numbers(path)
    hows = set()
    for line in fr["lines"]:
        pts = [n for n in nums if n[1] == line["policy"] and n[2] == line["window"]]
        assert [p["run"] for p in line["points"]] == [n[0] for n in sorted(pts, key=lambda n: n[3])], line
        for s, col in (("all", 3), ("t_ge_w", 4)):
            want, how = smallest([(n[col], n[5]) for n in pts], delta)
            got = line[f"smallest_{s}"]
            assert got["how"] == how, (line["policy"], line["window"], s, got, how)
            assert (got["fraction"] is None) if want is None else abs(got["fraction"] - want) < 1e-9, (got, want)
            hows.add(how)
    assert hows == {"interpolated", "at a grid point", "not reached within the grid"}, hows
    # Markdown and CSV say the same
    md = aha("report", path, "--delta", delta).stdout
    assert "smallest fraction global with perplexity change <= +1.00% (delta), over all decisions and over decisions with t >= w" in md, md[-2000:]
    for h in hows:
        assert h in md, h
    rows = list(csv.DictReader(io.StringIO(aha("report", path, "--out-format", "csv", "--delta", delta).stdout)))
    fr_rows = [r for r in rows if r["table"] == "frontier" and r["metric"] == "smallest_fraction_global"]
    for line in fr["lines"]:
        for s in ("all", "t_ge_w"):
            (row,) = [r for r in fr_rows if r["router"] == line["policy"] and r["window"] == str(line["window"])
                      and r["subset"] == s]
            want = line[f"smallest_{s}"]["fraction"]
            assert (row["value"] == "") if want is None else float(row["value"]) == want, (row, want)


def test_frontier_figure():
    path = planted()
    out = os.path.join(TMP, "plot")
    r = aha("plot", path, "-o", out, "--delta", "0.02")
    assert os.path.join(out, "frontier.png") in r.stdout, r.stdout
    dat = open(os.path.join(out, "frontier.dat")).read()
    gp = open(os.path.join(out, "frontier.gp")).read()
    fr = json.loads(aha("report", path, "--out-format", "json", "--delta", "0.02").stdout)["traces"][0]["frontier"]
    blocks = dat.split("\n\n\n")
    assert len(blocks) == len(fr["lines"]) + 1, len(blocks)
    for k, line in enumerate(fr["lines"]):
        head, *rows = [l for l in blocks[k].splitlines() if not l.startswith("# frontier")]
        assert head == f"# line {k}: policy {line['policy']}, w={line['window']}", head
        vals = np.array([[float(x) for x in l.split()] for l in rows])
        want = np.array([[p["fraction_all"], 100 * p["ppl_change"]] for p in line["points"]])
        assert np.allclose(vals[:, :2], want, rtol=1e-12), (vals, want)
        assert f"index {k} using 1:2 " in gp and f"index {k} using 1:3 " in gp, k
    assert "# reference: paper: OLMo-2-1B AHA, w=128, 11.6% global" in blocks[-1] and "0.116 0" in blocks[-1]
    assert "paper: OLMo-2-1B AHA, w=128, 11.6% global" in gp and "title 'delta +2.00%'" in gp, gp
    assert "multiplot layout 2,2" in gp, "a column per window, ppl change and KL rows"


def test_grid_named_and_quality_per_policy():
    # a mixed grid is named as one, its policies listed: the trace's router attribute, the report, the notebook;
    # its quality figure has a line per policy with its legend entry (not one line across them all)
    want = "grid oracle:0.01,0.1 werr:0.05,0.2 random:0.3 topk:2 learned:0.4 local"
    with h5py.File(GRID, "r") as f:
        router = f.attrs["router"]
        assert (router.decode() if isinstance(router, bytes) else router) == want, router
    assert f"router {want}" in aha("report", GRID).stdout
    out = os.path.join(TMP, "grid_plot")
    aha("plot", GRID, "-o", out, "--force")
    fams = ["oracle", "werr", "random", "topk", "learned", "local"]
    gp = open(os.path.join(out, "quality.gp")).read()
    assert f"routed by {want}" in gp, gp
    for k, fam in enumerate(fams):
        assert f"index {k} using 2:3 with linespoints lw 2 pt 7 lc {k + 1} title '{fam}: perplexity change'" in gp, fam
        assert f"title '{fam}: mean KL'" in gp, fam
    blocks = open(os.path.join(out, "quality.dat")).read().split("\n\n\n")
    rep = json.loads(aha("report", GRID, "--out-format", "json").stdout)["traces"][0]
    for fam, blk in zip(fams, blocks):
        lines = [l for l in blk.splitlines() if l and not l.startswith("# routed")]
        assert lines[0] == f"# policy {fam}", lines[0]
        got = sorted(float(l.split()[1]) for l in lines[1:])
        runs = [r for r in rep["runs"] if r["policy"] == fam]
        assert got == sorted(r["global_all"]["fraction"] for r in runs), (fam, got)
        assert [float(l.split()[1]) for l in lines[1:]] == got, f"{fam}: its points in order of fraction global"
    nb_path = os.path.join(TMP, "grid_named.ipynb")
    aha("notebook", GRID, "-o", nb_path, "--force")
    text = open(nb_path).read()
    assert f"router {want}" in text and "`aha sweep`" in text, text[:2000]


def test_notebook():
    """The notebook's frontier cell, run with nbconvert, prints (from h5py) the table aha stored (from the report)."""
    import subprocess
    import sys
    import nbformat
    path = planted()
    os.makedirs(os.path.join(TMP, "nb"), exist_ok=True)
    nb_path = os.path.join(TMP, "nb", "grid.ipynb")
    aha("notebook", path, "-o", nb_path, "--delta", "0.01", "--force")
    nb = nbformat.read(nb_path, as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "DELTA = 0.01" in c.source]
    (stored,) = [o.text for o in cell.outputs if o.output_type == "stream"]
    assert "interpolated" in stored and "at a grid point" in stored and "not reached within the grid" in stored, stored
    out = os.path.join(TMP, "nb", "ran.ipynb")
    r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", nb_path, "--output", out,
                        "--ExecutePreprocessor.timeout=120"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ran = nbformat.read(out, as_version=4)
    (cell,) = [c for c in ran.cells if c.cell_type == "code" and "DELTA = 0.01" in c.source]
    printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
    assert printed == stored, (printed, stored)
    assert any(o.output_type == "display_data" for o in cell.outputs), "the frontier figure"


def test_smol_oracle_beats_random():
    """SmolLM2, ~1000 prose tokens, w=128, 4 sinks: at matched (or more) fraction global, random:P is worse."""
    if not os.path.exists(SMOL):
        raise AssertionError(f"{SMOL} is missing")
    out = os.path.join(TMP, "smol.h5")
    aha("sweep", SMOL, PROSE, "-o", out, "--policies", "oracle:0.1,0.3 random:0.2,0.5", "--windows", "128",
        "--sinks", "4", "--ctx", "1024", "--max-tokens", "1024", "--force", "--quiet")
    fr = json.loads(aha("report", out, "--out-format", "json").stdout)["traces"][0]["frontier"]
    pts = {l["policy"]: l["points"] for l in fr["lines"]}
    for o in pts["oracle"]:
        denser = [r for r in pts["random"] if r["fraction_all"] >= o["fraction_all"]]
        assert denser, (o, pts["random"])
        for r in denser:  # random keeps more global attention and still loses more
            assert r["ppl_change"] > o["ppl_change"], (o, r)


def test_topk_global_layers():
    # topk picks among the global layers of --heads-from's trace: a natively local layer runs its window
    # whatever is picked. Here layer 1 is made local (window 16) with every d_eps at its bound, so it has
    # the most oracle-global decisions of all, and is still picked last.
    obs = os.path.join(TMP, "obs_native.h5")
    shutil.copy(OBS, obs)
    make_native(obs, [0, 16])
    with h5py.File(obs, "r+") as f:
        pos = f["position"][...]
        for name in f["dependency"]:
            d = f["dependency/" + name]
            d[1] = np.broadcast_to(np.minimum(16, pos + 1)[:, None], d[1].shape)
        H = int(f.attrs["n_heads"])
    out = os.path.join(TMP, "grid_native.h5")
    aha("sweep", MODEL, DATA, "-o", out, "--policies", "topk:2", "--heads-from", obs, *COMMON)
    with h5py.File(out, "r") as f:
        for w in WINDOWS:
            g = f[f"runs/topk_k2_w{w}/gate"][...]
            picked = g.any(axis=1)  # [L, H] heads routed global
            assert picked[1].sum() == 0 and picked[0].sum() == min(2, H), (w, picked)


check("grid: every run (oracle eps, random P, learned tau, topk, local) is bit-identical to aha record --route P --window W; topk = numpy's top k of the observe trace", test_grid_equals_single)
check("grid: werr:T gates are (window_error > T) of the trace's full pass", test_werr_gates)
check("grid: names, policy / param / window attributes; oracle eps join the dependency pass", test_run_attrs)
check("grid: too many runs, topk without --heads-from, bad or repeated points: one line, no file", test_refusals)
check("grid: topk picks the heads of global layers first (a natively local layer of --heads-from's trace last)", test_topk_global_layers)
check("report: the smallest fraction global within --delta equals numpy's interpolation (interpolated / at a grid point / not reached), md and CSV agree", test_smallest_at_delta)
check("plot: frontier .dat holds every line, .gp the delta line and the paper's operating point", test_frontier_figure)
check("a --policies grid is named as one (trace router attribute, report, notebook); its quality figure has a line "
      "and a legend entry per policy", test_grid_named_and_quality_per_policy)
check("notebook: the frontier cell recomputes from h5py the table aha stored", test_notebook)
check("SmolLM2: the mass oracle beats random:P at matched fraction global", test_smol_oracle_beats_random)
finish()
