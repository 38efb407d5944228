"""aha plot on a real (tiny-model) sweep trace: every figure exists, is a
valid PNG / SVG / PDF of the requested size, its data file holds the numbers
of `aha report --out-format json` (the raster's: h5py's), and its .gp script
re-renders it. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from ahatest import AHA, ROOT, aha, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_plot_")
FIGS = ["sparsity", "ccdf", "heatmap", "raster", "quality", "layers", "tokens", "classes",
        "frontier"]  # quality, frontier: a sweep's routed runs
W, H_PX = 640, 400


rng = np.random.default_rng(1)
TRACE = os.path.join(TMP, "sweep.h5")
aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"),
    tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, size=n).tolist() for n in (50, 33, 41)]),
    "-o", TRACE, "--windows", "2,4,8,16", "--route", "oracle", "--sinks", 1, "--force", "--quiet")
REP = json.loads(aha("report", TRACE, "--out-format", "json").stdout)["traces"][0]


def plot(fmt):
    out = os.path.join(TMP, fmt)
    r = aha("plot", TRACE, "-o", out, "--out-format", fmt, "--width", W, "--height", H_PX, "--tokens", 40)
    assert r.stdout.split() == [f"{out}/{n}.{fmt}" for n in FIGS], r.stdout
    return out


def png_size(path):
    b = open(path, "rb").read(24)
    assert b[:8] == b"\x89PNG\r\n\x1a\n", path + " is not a PNG"
    return struct.unpack(">II", b[16:24])


def test_png():
    out = plot("png")
    for n in FIGS:
        assert png_size(f"{out}/{n}.png") == (W, H_PX), n
        assert os.path.getsize(f"{out}/{n}.png") > 2000, n + ".png is suspiciously small"


def test_svg():
    out = plot("svg")
    for n in FIGS:
        head = open(f"{out}/{n}.svg").read(2000)
        m = re.search(r'<svg[^>]*width="(\d+)"[^>]*height="(\d+)"', head, re.S)
        assert m and (int(m[1]), int(m[2])) == (W, H_PX), n
        assert open(f"{out}/{n}.svg").read().rstrip().endswith("</svg>"), n


def test_pdf():
    out = plot("pdf")
    for n in FIGS:
        data = open(f"{out}/{n}.pdf", "rb").read()
        assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:], n
        box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
        # 1/100 inch per pixel: 0.72 pt, rounded by cairo
        assert box and abs(float(box[1]) - W * 0.72) < 1 and abs(float(box[2]) - H_PX * 0.72) < 1, (n, box and box[0])


def rows(path):
    return [list(map(float, l.split())) for l in open(path) if l.strip() and not l.startswith("#")]


def test_data_match_report():
    out = os.path.join(TMP, "png")
    wins = REP["windows"]
    frac = lambda x, k: x[k]["fraction"]
    got = rows(f"{out}/sparsity.dat")
    assert [r[0] for r in got] == wins
    nr = len(REP["routers"])
    for j, r in enumerate(REP["routers"]):  # over all decisions, then over t >= w
        assert [g[1 + j] for g in got] == [frac(w, "all") for w in r["windows"]], r["router"]
        assert [g[1 + nr + j] for g in got] == [frac(w, "t_ge_w") for w in r["windows"]], r["router"]
    got = rows(f"{out}/ccdf.dat")
    lt = REP["long_tail"]
    assert [g[0] for g in got] == list(range(1, REP["max_d"] + 1))
    for j, e in enumerate(lt):
        assert [g[1 + j] for g in got] == e["ccdf"][1:], "ccdf eps %g" % e["eps"]
    r0 = REP["routers"][0]
    mid = len(wins) // 2
    heat = rows(f"{out}/heatmap.dat")
    assert heat == [[frac(x, "t_ge_w") for x in row] for row in r0["windows"][mid]["per_head"]]
    layers = rows(f"{out}/layers.dat")
    assert [l[1:] for l in layers] == [[frac(w["per_layer"][l], "t_ge_w") for w in r0["windows"]]
                                       for l in range(REP["n_layers"])]
    q = rows(f"{out}/quality.dat")  # one policy (oracle): one block, its runs by fraction global
    routed = sorted(REP["runs"][1:], key=lambda r: r["global_all"]["fraction"])
    assert [x[0] for x in q] == [r["window"] for r in routed]
    assert [x[1] for x in q] == [r["global_all"]["fraction"] for r in routed]
    assert np.allclose([x[2] for x in q], [100 * r["ppl_change"] for r in routed], rtol=1e-15, atol=0)
    assert [x[3] for x in q] == [r["mean_kl"] for r in routed]
    tk, rate = REP["tokens"], lambda v: np.nan if v["fraction"] is None else v["fraction"]
    pos = rows(f"{out}/tokens.dat")  # lo hi tokens, then all layers and each group (tests/test_tokens.py: more)
    assert [p[:2] for p in pos] == tk["position_buckets"]
    assert np.array_equal([p[3] for p in pos], [rate(v) for v in tk["windows"][mid]["position"][-1]["t_ge_w"]], equal_nan=True)
    cls = [l.split() for l in open(f"{out}/classes.dat") if not l.startswith("#")]
    assert [c[0] for c in cls] == tk["classes"]
    assert np.array_equal([float(c[2]) for c in cls], [rate(v) for v in tk["windows"][mid]["class"][-1]["t_ge_w"]], equal_nan=True)


def gp_titles(path):
    """The figure's title and its key entries, as the .gp script sets them."""
    text = open(path).read()
    title = re.search(r"^set title (['\"])(.*)\1", text, re.M)[2]
    return title, re.findall(r" title '([^']*)'", text[text.index("\nplot "):])


def test_labels():
    # every figure names the decisions it counts, the eps, the sinks and the ctx (sinks 1 here)
    out = os.path.join(TMP, "png")
    for n in FIGS:
        title, keys = gp_titles(f"{out}/{n}.gp")
        assert "sinks 1, ctx 128" in title, (n, title)
        if n != "raster":  # the raster shows single decisions
            assert "all decisions" in title or "t >= w" in title, (n, title)
        if n in ("heatmap", "layers", "raster", "tokens", "classes"):
            assert "eps 0.01" in title, (n, title)
        assert "sinks 1, ctx 128" in open(f"{out}/{n}.dat").readline(), n
    title, keys = gp_titles(f"{out}/sparsity.gp")
    assert "solid: all decisions" in title and "dashed: decisions with t >= w" in title, title
    assert "oracle, eps 0.01, all decisions" in keys and "oracle, eps 0.01, decisions with t >= w" in keys, keys
    assert "all decisions" in open(f"{out}/quality.gp").read().split("set xlabel")[1].splitlines()[0]


def test_raster_data():
    out = os.path.join(TMP, "png")
    got = np.array(rows(f"{out}/raster.dat"), int)
    w = max(x for x in REP["windows"] if x <= 20)  # the default: largest window <= tokens / 2
    with h5py.File(TRACE, "r") as f:
        n = min(40, int(f["doc_offsets"][1]))
        d = f["dependency/eps_0.01"][:, :n, :] > w
        g = f["gate"][:, :n, :] != 0
    want = (d + 2 * g).transpose(0, 2, 1).reshape(-1, n)
    assert got.shape == want.shape and (got == want).all()
    assert f"w = {w}" in open(f"{out}/raster.gp").read()


def test_rerender():
    out = os.path.join(TMP, "png")
    for n in FIGS:
        os.remove(f"{out}/{n}.png")
        r = subprocess.run(["gnuplot", f"{n}.gp"], cwd=out, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert png_size(f"{out}/{n}.png") == (W, H_PX), n


def test_errors():
    out = os.path.join(TMP, "err")  # a folder of its own: -o is replaced whole
    for args, pat in (([TRACE], "-o DIR is required"),
                      ([TRACE, "-o", out, "--window", "3"], "window 3 was not recorded"),
                      ([TRACE, "-o", out, "--out-format", "gif"], "not png, svg or pdf"),
                      ([TRACE, "-o", out, "--doc", "9"], "--doc 9: the trace has 3 documents"),
                      ([TRACE, "-o", TMP], "holds ")):  # a folder with other files is never replaced
        r = aha("plot", *args, ok=False)
        assert r.returncode != 0 and pat in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert not os.path.exists(out), "a failed plot left its folder"
        assert not [f for f in os.listdir(TMP) if ".aha-" in f], os.listdir(TMP)


def test_no_runs_no_quality():
    obs = os.path.join(TMP, "obs.h5")
    aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa"), os.path.join(TMP, "d.tok"), "-o", obs,
        "--windows", "4,8", "--force", "--quiet")
    out = os.path.join(TMP, "obs")
    r = aha("plot", obs, "-o", out)
    assert "quality" not in r.stdout and len(r.stdout.split()) == 7, r.stdout


def test_compare():
    other = os.path.join(TMP, "other.h5")
    aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/faolmo"),
        tokfile(os.path.join(TMP, "e.tok"), [rng.integers(0, 128, size=n).tolist() for n in (60, 20)]),
        "-o", other, "--windows", "2,8,32", "--route", "oracle", "--force", "--quiet")
    rep2 = json.loads(aha("report", other, "--out-format", "json").stdout)["traces"][0]
    out = os.path.join(TMP, "cmp")
    r = aha("plot", TRACE, other, "--compare", "-o", out, "--width", W, "--height", H_PX)
    assert r.stdout.split() == [f"{out}/compare_sparsity.png", f"{out}/compare_ccdf.png"], r.stdout
    for n in ("compare_sparsity", "compare_ccdf"):
        assert png_size(f"{out}/{n}.png") == (W, H_PX), n
    blocks = [b for b in open(f"{out}/compare_sparsity.dat").read().split("\n\n\n")]
    assert len(blocks) == 2, len(blocks)
    for blk, rep in zip(blocks, (REP, rep2)):
        got = [list(map(float, l.split())) for l in blk.splitlines() if l.strip() and not l.startswith("#")]
        want = [[w["window"], w["all"]["fraction"], w["t_ge_w"]["fraction"]] for w in rep["routers"][0]["windows"]]
        assert got == want, (got, want)
    blocks = open(f"{out}/compare_ccdf.dat").read().split("\n\n\n")
    for blk, rep in zip(blocks, (REP, rep2)):
        got = [list(map(float, l.split())) for l in blk.splitlines() if l.strip() and not l.startswith("#")]
        assert got == [[w, rep["long_tail"][0]["ccdf"][w]] for w in range(1, rep["max_d"] + 1)]
    r = aha("plot", TRACE, "--compare", "-o", out, ok=False)
    assert r.returncode != 0 and "--compare needs at least two traces" in r.stderr, r.stderr
    title, keys = gp_titles(f"{out}/compare_sparsity.gp")
    assert "solid: all decisions" in title and "dashed: decisions with t >= w" in title, title
    assert keys == [f"llama_aha (sweep.h5): eps 0.01, sinks 1, ctx 128, {s}" for s in ("all decisions", "decisions with t >= w")] + \
        [f"faolmo (other.h5): eps 0.01, sinks 0, ctx 128, {s}" for s in ("all decisions", "decisions with t >= w")], keys


def test_compare_labels():
    # two files named trace.h5 of the same model never share a legend; --label names them
    paths = []
    for d in ("run_a", "run_b"):
        os.makedirs(os.path.join(TMP, d), exist_ok=True)
        paths.append(os.path.join(TMP, d, "trace.h5"))
        shutil.copy(TRACE, paths[-1])
    out = os.path.join(TMP, "cmp_same")
    aha("plot", *paths, "--compare", "-o", out)
    for n in ("compare_sparsity", "compare_ccdf"):
        keys = gp_titles(f"{out}/{n}.gp")[1]
        legends = {k.split(":")[0] for k in keys}
        assert legends == {"llama_aha (run_a/trace.h5)", "llama_aha (run_b/trace.h5)"}, keys
    aha("plot", *paths, "--compare", "-o", out, "--label", "before,after", "--force")
    keys = gp_titles(f"{out}/compare_ccdf.gp")[1]
    assert [k.split(":")[0] for k in keys] == ["before", "after"], keys
    assert open(f"{out}/compare_sparsity.dat").readline().startswith("# before: oracle eps 0.01, sinks 1, ctx 128")
    for args, pat in ((["--label", "one"], "--label: 1 labels for 2 traces"),):
        r = aha("plot", *paths, "--compare", "-o", out, *args, ok=False)
        assert r.returncode != 0 and pat in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = aha("plot", paths[0], "-o", out, "--label", "x", ok=False)
    assert r.returncode != 0 and "--label names the traces of --compare" in r.stderr, r.stderr


def test_native_local():
    # A trace whose layer 1 is natively local (make_native: layer_window set with h5py, its d_eps and gates
    # made what such a layer records): curves count layer 0 only and say so; layer 1 is marked apart.
    nat = os.path.join(TMP, "native.h5")
    shutil.copy(TRACE, nat)
    make_native(nat, [0, 4])
    out = os.path.join(TMP, "native_figs")
    aha("plot", nat, "-o", out, "--tokens", 40)
    label = "global layers only: 1 of 2; 1 natively local (window 4) shown apart"
    with h5py.File(nat, "r") as f:
        d, pos = f["dependency/eps_0.01"][...], f["position"][...]
    wins = REP["windows"]
    got = rows(f"{out}/sparsity.dat")
    assert [g[1] for g in got] == [(d[0] > w).sum() / d[0].size for w in wins], "sparsity: layer 0 only"
    assert [g[1] for g in got] != [(d > w).sum() / d.size for w in wins], "the trick must change the curve"
    title, keys = gp_titles(f"{out}/sparsity.gp")
    assert label in title and "oracle, eps 0.01, all decisions (1 global layer)" in keys, (title, keys)
    ccdf = rows(f"{out}/ccdf.dat")
    assert [c[1] for c in ccdf] == [(d[0] > w).sum() / d[0].size for w in range(1, int(pos.max()) + 2)]
    assert "layers_0-0" in open(f"{out}/ccdf.dat").read().splitlines()[1]
    heat = rows(f"{out}/heatmap.dat")
    assert all(np.isnan(heat[1])) and not any(np.isnan(heat[0])), heat
    assert "'1 local' 1" in open(f"{out}/heatmap.gp").read() and "blank rows: natively local layers 1" in gp_titles(f"{out}/heatmap.gp")[0]
    layers = rows(f"{out}/layers.dat")
    assert all(np.isnan(layers[1][1:])) and not any(np.isnan(layers[0][1:])), layers
    assert "'L1 local'" in open(f"{out}/raster.gp").read()
    for n in ("sparsity", "ccdf", "heatmap", "layers", "tokens", "classes", "quality"):
        assert label in gp_titles(f"{out}/{n}.gp")[0], n
    # --compare of two models with different layer counts: each legend says which layers its curve counts
    other = os.path.join(TMP, "other.h5")  # faolmo, written by test_compare
    with h5py.File(other, "r") as f:
        L2 = int(f.attrs["n_layers"])
    cmp = os.path.join(TMP, "native_cmp")
    aha("plot", nat, other, "--compare", "-o", cmp)
    for n in ("compare_sparsity", "compare_ccdf"):
        legends = {k.split(":")[0] for k in gp_titles(f"{cmp}/{n}.gp")[1]}
        assert legends == {"llama_aha (native.h5) (1 global layer)", f"faolmo (other.h5) (all {L2} layers)"}, legends
    blk = open(f"{cmp}/compare_sparsity.dat").read().split("\n\n\n")[0]
    got = [list(map(float, l.split())) for l in blk.splitlines() if l.strip() and not l.startswith("#")]
    assert [g[1] for g in got] == [(d[0] > w).sum() / d[0].size for w in wins]


def key_pixels(out, name):
    """How many pixels figure name's key draws: those of its PNG that differ strongly (grey level by more than
    100 of 255) from the same script's with `unset key`; antialiasing alone moves none that far (0 measured
    where gnuplot dropped the key, which it does without a word when the key is too wide for where it sits)."""
    from PIL import Image
    gp = open(f"{out}/{name}.gp").read().replace(f"set output '{name}.png'", "set output 'nokey.png'")
    with open(f"{out}/nokey.gp", "w") as f:
        f.write(gp.replace("\nplot ", "\nunset key\nplot ", 1))
    subprocess.run(["gnuplot", "nokey.gp"], cwd=out, check=True, capture_output=True)
    a, b = (np.asarray(Image.open(f"{out}/{f}.png").convert("L"), np.int32) for f in (name, "nokey"))
    return int(np.count_nonzero(np.abs(a - b) > 100))


def test_compare_gaps_and_legend():
    # where a trace has no decision (no t >= w at a window past every document) --compare writes NaN, a gap, as
    # the single-trace figures do, never 0; default legends too wide to sit inside the plot are still drawn
    short = tokfile(os.path.join(TMP, "short.tok"), [rng.integers(0, 128, size=n).tolist() for n in (30, 20)])
    paths = []
    for d in ("a", "b"):
        deep = os.path.join(TMP, f"run-{d}-of-an-experiment-whose-folder-has-a-long-descriptive-name-as-they-do")
        os.makedirs(deep, exist_ok=True)
        paths.append(os.path.join(deep, "trace.h5"))
        aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"), short, "-o", paths[-1], "--windows", "4,64",
            "--force", "--quiet")
    out = os.path.join(TMP, "cmp_gap")
    aha("plot", *paths, "--compare", "-o", out, "--width", W, "--height", H_PX)
    rows = [l.split() for l in open(f"{out}/compare_sparsity.dat") if l.strip() and not l.startswith("#")]
    assert [r[0] for r in rows] == ["4", "64"] * 2 and all(r[2] != "nan" for r in rows[::2]), rows
    assert all(r[2].lower() == "nan" for r in rows[1::2]), f"no decision with t >= 64: want NaN, got {rows}"
    for n in ("compare_sparsity", "compare_ccdf"):
        drawn = key_pixels(out, n)
        assert drawn > 500, f"{n}: the key of {paths} draws {drawn} pixels"


check("PNG figures of the requested pixel size", test_png)
check("SVG figures of the requested size", test_svg)
check("PDF figures of the requested size", test_pdf)
check("data files hold the report's numbers (sparsity, CCDF, heatmap, layers, quality)", test_data_match_report)
check("raster data equals the trace's decisions", test_raster_data)
check("every figure names its decisions (all / t >= w), eps, sinks and ctx; sparsity shows both", test_labels)
check("each .gp script re-renders its figure", test_rerender)
check("bad flags and unrecorded windows: one-line errors", test_errors)
check("a trace without routed runs has no quality figure", test_no_runs_no_quality)
check("--compare: one line per trace, data equal to each trace's report", test_compare)
check("natively local layers: curves count the global layers (title and legend say so), heatmap / layers / raster mark "
      "the local ones; --compare of models with different layer counts labels what each curve counts", test_native_local)
check("--compare: two trace.h5 get distinct legends; --label A,B names them", test_compare_labels)
check("--compare: NaN (a gap) where no decision exists, as single-trace figures; a wide key is never dropped",
      test_compare_gaps_and_legend)
finish()
