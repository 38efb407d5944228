"""aha plot --html on a real (tiny-model) sweep trace. The page is rendered in
headless Chromium (tests/chromium.py, Debian's chromium): it loads without a
script error and asks for nothing but itself; a click on a heatmap cell
selects that layer and head; a known token's colour, in each colouring, and
its tooltip are the trace's values, read here with h5py, with the colour
rules of docs/reports.md written out again here. Without a browser: the
page's data (base64, zlib) decoded here equals h5py's, the flags choose
what it holds, bad flags are one-line errors. The screenshot and the page
are kept in build/test-artefacts/view/ (view.png, view.html). PASS/FAIL lines.
"""
import base64
import json
import math
import os
import re
import shutil
import struct
import tempfile
import zlib

import h5py
import numpy as np

import chromium
from ahatest import ROOT, aha, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_view_")
ART = os.path.join(ROOT, "build", "test-artefacts", "view")
rng = np.random.default_rng(3)
TRACE = os.path.join(TMP, "sweep.h5")
aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"),
    tokfile(os.path.join(TMP, "d.tok"), [rng.integers(0, 128, size=n).tolist() for n in (50, 33, 41)]),
    "-o", TRACE, "--windows", "2,4,8,16", "--route", "oracle", "--sinks", 1, "--eps", "0.01,0.1", "--force", "--quiet")
EPS = ["0.01", "0.1"]
DOC, FROM = 1, 5            # the page: document 1 from position 5 to its end
POS, LSEL, HSEL = 10, 1, 2  # the token checked (its position in the document), the head clicked: d_eps 7 and 4,
                            # at eps 0.1 the window 4 itself (global iff d_eps > w, not >=); 3 of its layer's 4 heads global

with h5py.File(TRACE, "r") as f:
    OFFS = f["doc_offsets"][:]
    DEP = [f["dependency/eps_" + e][...] for e in EPS]
    GATE = f["gate"][...]
    TEXT = f["token_text"].asstr()[...]
    IDS = f["tokens"][...]
    POSITION = f["position"][...]
    WINDOWS = [int(w) for w in f.attrs["windows"]]
    CTX, TAU = int(f.attrs["ctx"]), float(f.attrs["tau"])
    RUNS = {name: (f["runs"][name]["nll"][...], f["runs"][name]["gate"][...] if "gate" in f["runs"][name] else None)
            for name in f["runs"]}
T0, T1 = OFFS[DOC] + FROM, OFFS[DOC + 1]
N = T1 - T0
TOK = OFFS[DOC] + POS         # the token checked, on the trace's axis
I = POS - FROM                # ... among the page's
D = max(2, CTX, FROM + N)     # the d_eps colour scale's end
WI = len(WINDOWS) // 2        # the window selected at first: the heatmap's


def viridis(x):
    """The viridis stops of heatmap.png, linear in between, rounded half up."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    y = min(1.0, max(0.0, x)) * 4
    i = min(3, math.floor(y))
    return tuple(math.floor(a + (b - a) * (y - i) + 0.5) for a, b in zip(stops[i], stops[i + 1]))


def reds(x):
    """White (local) to #d62728 (global) by the fraction global."""
    return tuple(math.floor(255 + (c - 255) * x + 0.5) for c in (214, 39, 40))


def rgb(c):
    return "rgb(%d, %d, %d)" % c


def plot(out, *flags):
    r = aha("plot", TRACE, "-o", out, "--html", *flags)
    assert r.stdout.split()[-1] == f"{out}/view.html", r.stdout
    return f"{out}/view.html"


PAGE = plot(os.path.join(TMP, "figs"), "--doc", DOC, "--html-from", FROM, "--html-tokens", 0)


def meta(page):
    html = open(page, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="aha-meta">(.*?)</script>', html, re.S)
    return html, json.loads(m[1])


def blob(html, name):
    m = re.search(rf'<script type="application/octet-stream" id="{name}">([A-Za-z0-9+/=]*)</script>', html)
    return zlib.decompress(base64.b64decode(m[1]))


def test_data():
    # the page's own arrays, decoded with base64 + zlib here, are h5py's; --html-tokens and --html-from choose them
    page = plot(os.path.join(TMP, "few"), "--doc", 2, "--html-from", 3, "--html-tokens", 7)
    html, m = meta(page)
    t0 = OFFS[2] + 3
    assert m["doc"] == {"number": 2, "tokens": int(OFFS[3] - OFFS[2]), "from": 3, "shown": 7, "trace_token": int(t0)}, m["doc"]
    assert m["text"] == list(TEXT[t0:t0 + 7])
    assert m["eps_names"] == EPS and m["windows"] == WINDOWS and m["sinks"] == 1 and m["ctx"] == CTX
    assert np.frombuffer(blob(html, "aha-ids"), "<i4").tolist() == IDS[t0:t0 + 7].tolist()
    L, H = DEP[0].shape[0], DEP[0].shape[2]
    gates = [GATE] + [g for _, g in RUNS.values() if g is not None]
    assert [g.get("name", "learned") for g in m["gates"]] == ["learned"] + [n for n, (_, g) in RUNS.items() if g is not None]
    for l in range(L):
        raw = blob(html, f"aha-layer-{l}")
        dep = np.frombuffer(raw[:len(EPS) * 7 * H * 2], "<u2").reshape(len(EPS), 7, H)
        assert all((dep[e] == DEP[e][l, t0:t0 + 7]).all() for e in range(len(EPS))), f"layer {l}: d_eps"
        gate = np.frombuffer(raw[len(EPS) * 7 * H * 2:], np.uint8).reshape(len(gates), 7, H)
        assert all((gate[s] == g[l, t0:t0 + 7]).all() for s, g in enumerate(gates)), f"layer {l}: gates"
        assert len(raw) == 7 * H * (2 * len(EPS) + len(gates))
    for k, (name, (nll, _)) in enumerate(RUNS.items()):
        assert m["runs"][k]["name"] == name
        got = np.frombuffer(blob(html, f"aha-nll-{k}"), "<f4")
        assert np.array_equal(got, nll[t0:t0 + 7], equal_nan=True), name
    # by default: at most 4096 tokens, from the document's start
    _, m = meta(plot(os.path.join(TMP, "default"), "--doc", 2))
    assert m["doc"]["from"] == 0 and m["doc"]["shown"] == OFFS[3] - OFFS[2]


def test_self_contained():
    # nothing in the page names something to fetch, and its policy forbids fetching anything
    html = open(PAGE, encoding="utf-8").read()
    for pat in (r"\bsrc\s*=", r"<link\b", r"@import", r"url\(", r"https?:", r"\bfetch\(", r"XMLHttpRequest"):
        assert not re.search(pat, html), pat
    assert "content=\"default-src 'none';" in html


def test_errors():
    for args, pat in ((["--html", "--compare", TRACE], "--html views one run: not with --compare"),
                      (["--html-tokens", "5"], "choose what view.html shows: add --html"),
                      (["--html", "--doc", "9"], "--doc 9: the trace has 3 documents"),
                      (["--html", "--doc", "1", "--html-from", "33"], "--html-from 33: document 1 has 33 tokens")):
        out = os.path.join(TMP, "bad")
        r = aha("plot", TRACE, "-o", out, *args, ok=False)
        assert r.returncode != 0 and pat in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert not os.path.exists(out), f"{args}: {out} made before the error"
    figs = os.path.dirname(PAGE)
    r = aha("plot", TRACE, "-o", figs, "--html", ok=False)
    assert r.returncode != 0 and "exists (use --force to replace it)" in r.stderr, r.stderr
    before = open(PAGE, "rb").read()
    aha("plot", TRACE, "-o", figs, "--html", "--force", "--doc", DOC, "--html-from", FROM, "--html-tokens", 0)
    assert open(PAGE, "rb").read() == before, "the same page again"
    assert not [n for n in os.listdir(os.path.dirname(figs)) if "aha-tmp" in n or "aha-lock" in n], \
        os.listdir(os.path.dirname(figs))


# ---- in the browser ----

ROWS = "(id) => { const e = document.getElementById(id); return e ? [...e.rows].map(r => [...r.cells].map(c => c.textContent)) : null; }"


def centre(b, selector):
    """Scroll the element into view; the centre of its box, in the viewport."""
    return b.eval(f"(() => {{ const e = document.querySelector('{selector}'); e.scrollIntoView({{block: 'center'}});"
                  f" const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")


def hover(b, i):
    """Move the mouse onto token i of the page (from outside it); its colour and the tooltip's contents."""
    x, y = centre(b, f'#aha-tokens span[data-i="{i}"]')
    b.mouse("mouseMoved", 1, 1)
    b.mouse("mouseMoved", x, y)
    return b.eval(f"""(() => {{ const rows = {ROWS}, t = document.getElementById('aha-tip');
        const s = document.querySelector('#aha-tokens span[data-i="{i}"]');
        return {{hidden: t.hidden, head: t.firstChild.textContent, text: t.querySelector('.aha-text').textContent,
                 what: t.children[1].textContent, dep: rows('aha-tip-dep'), gates: rows('aha-tip-gates'),
                 nll: rows('aha-tip-nll'), bg: getComputedStyle(s).backgroundColor}}; }})()""")


def choose(b, select, value):
    b.eval(f"(() => {{ const s = document.getElementById('{select}'); s.value = '{value}';"
           f" s.dispatchEvent(new Event('change')); return window.ahaView.idle(); }})()")


def text(b, id):
    return b.eval(f"document.getElementById('{id}').textContent")


def browser_checks(b):
    url = "file://" + os.path.abspath(PAGE)
    b.open(url)
    b.eval("window.ahaView.main")
    assert b.eval("document.body.dataset.ready") == "1"
    assert b.eval("document.querySelectorAll('#aha-tokens span').length") == N
    about, heat = text(b, "aha-about"), text(b, "aha-heat-caption")
    for want in ("eps 0.01, 0.1", "windows 2, 4, 8, 16", "sinks 1, ctx 128", f"Document {DOC} holds {OFFS[DOC + 1] - OFFS[DOC]} tokens"):
        assert want in about, (want, about)
    for want in ("oracle eps 0.01", f"w = {WINDOWS[WI]}", "decisions with t >= w", "sinks 1, ctx 128", "3 documents"):
        assert want in heat, (want, heat)

    # a click on a heatmap cell selects its layer and head; the cell says the trace's fraction global
    b.click(*centre(b, f'#aha-heat td[data-l="{LSEL}"][data-h="{HSEL}"]'))
    b.eval("window.ahaView.idle()")
    assert b.eval("[+document.getElementById('aha-layer').value, +document.getElementById('aha-head').value]") == [LSEL, HSEL]
    w = WINDOWS[WI]
    d = DEP[0][LSEL, :, HSEL]
    frac = (d > w)[POSITION >= w].mean()
    cell = b.eval(f"document.querySelector('#aha-heat td[data-l=\"{LSEL}\"][data-h=\"{HSEL}\"]').title")
    assert f"fraction global {frac:.4f} (oracle eps 0.01, w = {w}, decisions with t >= w)" in cell, (cell, frac)
    choose(b, "aha-heat-subset", "all")
    cell = b.eval(f"document.querySelector('#aha-heat td[data-l=\"{LSEL}\"][data-h=\"{HSEL}\"]').title")
    assert f"fraction global {(d > w).mean():.4f} (oracle eps 0.01, w = {w}, all decisions)" in cell, cell

    # the token checked, at that head: colour d_eps (eps 0.01), tooltip every number
    tip = hover(b, I)
    dep = [int(x[LSEL, TOK, HSEL]) for x in DEP]
    assert not tip["hidden"] and tip["text"] == TEXT[TOK], tip
    assert tip["head"] == f"position {POS} of document {DOC} (trace token {TOK}, id {IDS[TOK]}): {TEXT[TOK]}", tip["head"]
    assert tip["what"] == f"layer {LSEL}, head {HSEL}", tip["what"]
    assert tip["bg"] == rgb(viridis(math.log2(dep[0]) / math.log2(D))), (tip["bg"], dep[0])
    assert tip["dep"][0] == ["eps", "d_eps"] + [f"w = {x}" for x in WINDOWS], tip["dep"][0]
    assert tip["dep"][1:] == [[e, str(v)] + ["global" if v > x else "local" for x in WINDOWS] for e, v in zip(EPS, dep)], tip["dep"]
    gl = lambda g: "global" if g else "local"
    want = [[f"learned router (sigmoid(logit) > tau {TAU:g})", gl(GATE[LSEL, TOK, HSEL])]]
    want += [[f"run {n} (policy oracle, window {n[1:]})", gl(g[LSEL, TOK, HSEL])] for n, (_, g) in RUNS.items() if g is not None]
    assert tip["gates"][1:] == want, (tip["gates"], want)
    assert [r[1] for r in tip["nll"][1:]] == [f"{nll[TOK]:.4f}" for nll, _ in RUNS.values()], tip["nll"]
    assert [r[0].split()[0] for r in tip["nll"][1:]] == list(RUNS), tip["nll"]
    caption = text(b, "aha-caption")
    assert f"d_eps at eps 0.01" in caption and f"layer {LSEL}, head {HSEL}" in caption and "sinks 1, ctx 128" in caption, caption
    os.makedirs(ART, exist_ok=True)
    b.screenshot(os.path.join(ART, "view.png"))  # the tooltip shown
    shutil.copy(PAGE, os.path.join(ART, "view.html"))

    # the oracle's decision at eps 0.1, w = 4: red where d_eps > 4
    choose(b, "aha-colour", "oracle:1")
    choose(b, "aha-window", WINDOWS.index(4))
    assert hover(b, I)["bg"] == rgb(reds(1.0 if dep[1] > 4 else 0.0))
    assert "oracle's decision at w = 4, eps 0.1" in text(b, "aha-caption")
    # ... over the layer's heads: the fraction of them that are global
    choose(b, "aha-head", -1)
    tip = hover(b, I)
    assert tip["bg"] == rgb(reds((DEP[1][LSEL, TOK] > 4).mean())), tip["bg"]
    assert tip["what"].startswith(f"mean over the 4 heads of layer {LSEL}"), tip["what"]
    assert tip["dep"][2][1 + 1 + WINDOWS.index(4)] == f"{(DEP[1][LSEL, TOK] > 4).mean():.3f}", tip["dep"]
    # the learned router over every layer and head
    choose(b, "aha-colour", "gate:0")
    choose(b, "aha-layer", -1)
    assert hover(b, I)["bg"] == rgb(reds(GATE[:, TOK].mean()))
    # d_eps over every layer and head: the mean of log2 d_eps, summed layer by layer, head by head
    choose(b, "aha-colour", "dep:0")
    s = 0.0
    for v in DEP[0][:, TOK, :].ravel():
        s += math.log2(v)
    tip = hover(b, I)
    assert tip["bg"] == rgb(viridis(s / DEP[0][:, TOK, :].size / math.log2(D))), tip["bg"]
    assert tip["dep"][1][1] == f"{2 ** (s / DEP[0][:, TOK, :].size):.2f}", tip["dep"]
    # the document's last token has no next token: no NLL
    assert hover(b, N - 1)["nll"][1][1] == "none: the document's last token"

    assert b.errors() == [], b.errors()
    assert b.requests == [url], f"the page asked for more than itself: {b.requests}"


def native_checks(b):
    # layer 1 natively local (window 4; make_native: what such a layer records): means over layers leave it out,
    # as every figure does, and say so; its heatmap row is hatched
    nat = make_native(shutil.copy(TRACE, os.path.join(TMP, "native.h5")), [0, 4])
    page = aha("plot", nat, "-o", os.path.join(TMP, "native"), "--html").stdout.split()[-1]
    b.open("file://" + page)
    b.eval("window.ahaView.main")
    with h5py.File(nat, "r") as f:
        d = f["dependency/eps_0.01"][:, OFFS[0] + 7, :]
    choose(b, "aha-layer", -1)
    choose(b, "aha-head", -1)
    s = 0.0
    for v in d[0]:
        s += math.log2(v)
    tip = hover(b, 7)
    assert tip["bg"] == rgb(viridis(s / len(d[0]) / math.log2(D))), (tip["bg"], d)
    assert "the 1 global layer (0; the others natively local)" in tip["what"], tip["what"]
    assert b.eval("[...document.querySelectorAll('#aha-heat td[data-l=\"1\"]')].every(c => c.className.includes('aha-null'))")
    assert "1 (natively local, window 4)" in b.eval("[...document.getElementById('aha-layer').options].map(o => o.text)")


def test_browser():
    with chromium.Chromium() as b:
        browser_checks(b)
        native_checks(b)
        assert b.errors() == [], b.errors()
    png = open(os.path.join(ART, "view.png"), "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1400, 1000) and len(png) > 20000


check("view.html's data, decoded here, is the trace's (h5py); --doc, --html-from, --html-tokens choose it", test_data)
check("view.html names nothing to fetch and forbids fetching", test_self_contained)
check("--html flags: one-line errors before anything is written; an existing figure folder needs --force", test_errors)
if chromium.executable():
    check("headless Chromium: view.html loads without a script error and fetches nothing; a heatmap click selects the "
          "head; a token's colour (d_eps, oracle, learned, means) and tooltip (d_eps per eps and window, gates, NLL) are "
          "h5py's; means leave natively local layers out; screenshot: build/test-artefacts/view/view.png", test_browser)
else:
    print("SKIP headless Chromium checks of view.html: no chromium here (scripts/setup.sh test installs Debian's chromium)")
finish()
