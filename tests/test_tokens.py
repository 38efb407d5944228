"""Which tokens need global attention: `aha report`'s "tokens" section (JSON,
tokens.csv, Markdown) and `aha plot`'s tokens / classes figures, against numpy
computed independently from the trace read with h5py (top tokens by global
rate, log2 position buckets, token classes; every window, every layer group,
both subsets), on a tiny-model trace recorded in short contexts and on a
synthetic trace of hand-made pieces. Prints PASS/FAIL lines.
"""
import csv
import json
import os
import shutil
import tempfile
from fractions import Fraction

import h5py
import numpy as np

from ahatest import ROOT, aha, check, finish, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_tokens_")
CLASSES = ["whitespace", "punct", "digit", "word_start", "word_cont", "special"]


def token_class(piece):
    """The class rule of docs/reports.md, written again from its text."""
    b = piece.encode()
    if not b or (len(b) >= 3 and b[:1] == b"<" and b[-1:] == b">" and not any(c in b" \t\n\r\v\f" for c in b)):
        return "special"
    r = b
    while True:  # leading spaces and space markers (U+0120, U+2581)
        if r[:1] and r[0] in b" \t\n\r\v\f":
            r = r[1:]
        elif r[:2] == "\u0120".encode() or r[:3] == "\u2581".encode():
            r = r[len("\u0120".encode()) if r[:2] == "\u0120".encode() else 3:]
        else:
            break
    lead = len(r) < len(b)
    if not r:
        return "whitespace"
    if all(48 <= c <= 57 for c in r):
        return "digit"
    if all(32 < c < 127 and not chr(c).isalnum() for c in r):
        return "punct"
    if lead and (r[0] >= 0x80 or chr(r[0]).isalpha()):
        return "word_start"
    return "word_cont"


def layer_groups(lw):
    """Thirds of the global layers (layer_window 0; natively local ones count in
    none), then all of them: [(first, last + 1)] and each one's layers."""
    gl = [l for l, w in enumerate(lw) if w == 0]
    n = len(gl)
    G = min(3, n)
    members = [gl[g * n // G:(g + 1) * n // G] for g in range(G)] + [gl]
    return [(m[0], m[-1] + 1) for m in members[:-1]] + [(0, len(lw))], members


def expect(path, min_count, top):
    """The "tokens" member, from the trace's arrays."""
    with h5py.File(path, "r") as f:
        eps = float(f.attrs["eps"][0])
        dep = f["dependency/eps_%g" % eps][:].astype(np.int64)
        tok, pos = f["tokens"][:], f["position"][:]
        text = [t.decode() for t in f["token_text"][:]]
        windows = [int(w) for w in f.attrs["windows"]]
        lw = f.attrs.get("layer_window", np.zeros(dep.shape[0], np.int64))
    L, T, H = dep.shape
    groups, members = layer_groups(lw)
    first = {}
    for i, t in enumerate(tok):
        first.setdefault(int(t), text[i])
    pb = np.array([int(t).bit_length() for t in pos])
    cls = np.array([CLASSES.index(token_class(s)) for s in text])
    out = []
    for w in windows:
        x = {"window": w, "top": [], "position": [], "class": []}
        for ls in members:
            per_tok = (dep[ls] > w).sum(axis=(0, 2))  # global decisions of each token in the group
            n = len(ls) * H
            tw = pos >= w

            def fr(mask):
                occ, g = int(mask.sum()), int(per_tok[mask].sum())
                return dict(global_=g, total=occ * n, occurrences=occ, fraction=g / (occ * n) if occ else None)

            ranked = []
            for t in np.unique(tok[tw]):
                d = fr(tw & (tok == t))
                if d["occurrences"] >= min_count:
                    ranked.append((-Fraction(d["global_"], d["total"]), -d["total"], int(t), d))
            ranked.sort(key=lambda r: r[:3])
            x["top"].append([dict(r[3], id=r[2], text=first[r[2]]) for r in ranked[:top]])
            for key, keys, n_keys in (("position", pb, int(pos.max()).bit_length() + 1), ("class", cls, len(CLASSES))):
                x[key].append({s: [fr(m & (keys == k)) for k in range(n_keys)]
                               for s, m in (("all", np.ones(T, bool)), ("t_ge_w", tw))})
        out.append(x)
    return eps, groups, out


def norm(d):
    d = dict(d)
    if "global" in d:
        d["global_"] = d.pop("global")
    return d


def check_json(path, min_count=5, top=20, extra=()):
    rep = json.loads(aha("report", path, "--out-format", "json", "--min-count", min_count, "--top", top, *extra).stdout)
    tk = rep["traces"][0]["tokens"]
    eps, groups, want = expect(path, min_count, top)
    assert tk["eps"] == eps and tk["min_count"] == min_count and tk["classes"] == CLASSES
    assert [(g["first_layer"], g["last_layer"] + 1) for g in tk["groups"]] == groups, tk["groups"]
    nb = len(tk["position_buckets"])
    assert tk["position_buckets"] == [[0, 1]] + [[2 ** (k - 1), 2 ** k] for k in range(1, nb)]
    assert len(tk["windows"]) == len(want)
    for got, x in zip(tk["windows"], want):
        assert got["window"] == x["window"]
        for g in range(len(groups)):
            assert [norm(t) for t in got["top"][g]] == x["top"][g], (x["window"], g, got["top"][g][:3], x["top"][g][:3])
            for key in ("position", "class"):
                for s in ("all", "t_ge_w"):
                    assert [norm(v) for v in got[key][g][s]] == x[key][g][s], (key, s, x["window"], g)
    return rep


def tiny_trace():
    """A real trace: the tiny model, contexts of 16 tokens (documents split), a few repeated ids."""
    path = os.path.join(TMP, "tiny.h5")
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 12, size=n).tolist() for n in (40, 9, 23)]
    aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa"), tokfile(os.path.join(TMP, "d.tok"), docs),
        "-o", path, "--windows", "2,4,8", "--eps", "0.05,0.01", "--sinks", 1, "--ctx", 16, "--force", "--quiet", "--mass")
    return path


TINY = tiny_trace()


def test_tiny():
    # position is the position in the context: 40 tokens at ctx 16 are contexts of 16, 16, 8
    with h5py.File(TINY, "r") as f:
        assert list(np.diff(f["doc_offsets"][:])) == [16, 16, 8, 9, 16, 7], f["doc_offsets"][:]
        assert f["position"][:].max() == 15
    check_json(TINY)
    check_json(TINY, min_count=1, top=1000)  # every token: the whole ranking
    check_json(TINY, min_count=3, top=4, extra=("--block", 5))  # small slabs: same numbers


def test_csv_md():
    out = os.path.join(TMP, "rep")
    aha("report", TINY, "-o", out, "--window", 4)
    rep = json.load(open(os.path.join(out, "report.json")))
    tk = rep["traces"][0]["tokens"]
    rows = list(csv.DictReader(open(os.path.join(out, "tokens.csv"), newline="")))
    got = {}
    for r in rows:
        got.setdefault((r["table"], int(r["window"]), r["subset"], r["group"]), []).append(r)
    n = 0
    for x in tk["windows"]:
        for g, grp in enumerate(tk["groups"]):
            def same(table, subset, vals, keys):
                k = got.get((table, x["window"], subset, grp["name"]), [])  # an empty top list has no rows
                assert len(k) == len(vals), (table, subset)
                for r, v, key in zip(k, vals, keys):
                    assert r["key"] == str(key[0]) and r["text"] == key[1], (r, key)
                    assert int(r["occurrences"]) == v["occurrences"] and int(r["global"]) == v["global"]
                    assert int(r["total"]) == v["total"] and int(r["first_layer"]) == grp["first_layer"]
                    assert (float(r["fraction"]) if r["fraction"] else None) == v["fraction"]
                return len(k)

            top = x["top"][g]
            n += same("top", "t_ge_w", top, [(t["id"], t["text"]) for t in top])
            for s in ("all", "t_ge_w"):
                n += same("position", s, x["position"][g][s], [(b[0], "[%d, %d)" % tuple(b)) for b in tk["position_buckets"]])
                n += same("class", s, x["class"][g][s], [(c, c) for c in tk["classes"]])
    assert n == len(rows)
    md = open(os.path.join(out, "report.md")).read()
    assert "### Which tokens need global attention at w=4 (oracle eps 0.05, decisions with t >= w; sinks 1, ctx 16)" in md
    t0 = tk["windows"][1]["top"][-1][0]  # all layers, w = 4: rank 1
    assert '| 1 | "%s" %.4f (%d) |' % (t0["text"], t0["fraction"], t0["occurrences"]) in md, md
    names = [g["name"] for g in tk["groups"]]
    assert "| rank | %s |" % " | ".join(names[-1:] + names[:-1]) in md  # all layers first, then the groups
    assert "| class | tokens | %s |" % " | ".join(names[-1:] + names[:-1]) in md
    c = tk["windows"][1]["class"][-1]["t_ge_w"][2]  # digit: the tiny model has no tokenizer, its pieces are ids
    assert "| digit | %d | %.4f |" % (c["occurrences"], c["fraction"]) in md
    assert "| [8, 16) |" in md and "| [0, 1) |" not in md  # buckets without tokens at t >= w are left out


# Hand-made pieces: (piece, class)
PIECES = [(" ", "whitespace"), ("\n\n  ", "whitespace"), ("\t", "whitespace"), (",", "punct"), (" ,", "punct"),
          ("...", "punct"), ("<>", "punct"), ("12", "digit"), (" 7", "digit"), (" the", "word_start"),
          ("\nThe", "word_start"), ("\u0120the", "word_start"), ("\u2581the", "word_start"), (" \u00e9t\u00e9", "word_start"),
          ("ing", "word_cont"), ("1.", "word_cont"), ("a1", "word_cont"), ("\u00e9", "word_cont"), (" .com", "word_cont"),
          ("< a >", "word_cont"), ("<|endoftext|>", "special"), ("<s>", "special"), ("</s>", "special"), ("", "special"),
          ("a|b", "word_cont")]


def synthetic(path, L=7, H=2):
    """Each hand-made piece is one token id, repeated in 4 contexts of 2 * len(PIECES) tokens."""
    n = 2 * len(PIECES)
    ids = np.tile(np.arange(n) % len(PIECES), 4).astype(np.int32)
    pos = np.tile(np.arange(n), 4).astype(np.int32)
    rng = np.random.default_rng(5)
    dep = np.minimum(1 + rng.integers(0, n, size=(L, len(ids), H)), pos[None, :, None] + 1).astype(np.uint32)
    with h5py.File(path, "w") as f:
        f.attrs.update(format="aha-trace", format_version=1, model="synthetic", architecture="llama", n_layers=L,
                       n_heads=H, router="none", tau=0.5, eps=np.array([0.02]), windows=np.array([4, 16]), sinks=0,
                       mode="observe", complete=1, n_docs=4, n_tokens=len(ids))
        f["tokens"], f["position"] = ids, pos
        f["doc_offsets"] = np.arange(0, 5 * n, n, dtype=np.int64)
        f.create_dataset("token_text", data=[PIECES[i][0] for i in ids], dtype=h5py.string_dtype())
        f.create_dataset("dependency/eps_0.02", data=dep)
    return path


def test_classes():
    for p, c in PIECES:  # the Python rule the numpy check uses says what docs/reports.md says
        assert token_class(p) == c, (p, c, token_class(p))
    path = synthetic(os.path.join(TMP, "pieces.h5"))
    rep = check_json(path, min_count=2, top=100)  # seven layers: groups 0-1, 2-3, 4-6
    tk = rep["traces"][0]["tokens"]
    assert [g["name"] for g in tk["groups"]] == ["layers 0-1", "layers 2-3", "layers 4-6", "all layers"]
    n_per = {c: 8 * sum(1 for _, k in PIECES if k == c) for c in CLASSES}  # 8 occurrences of each piece
    assert [v["occurrences"] for v in tk["windows"][0]["class"][-1]["all"]] == [n_per[c] for c in CLASSES]
    md = aha("report", path, "--window", 16, "--min-count", 1).stdout
    assert '"a\\|b"' in md and '"\\n\\n\u2423\u2423"' in md and '"&lt;|endoftext|&gt;"' in md.replace("\\|", "|"), md
    r = aha("report", path, "--min-count", 0, ok=False)
    assert r.returncode != 0 and "--min-count must be >= 1 (got 0)" in r.stderr, r.stderr


def test_native_local():
    # natively local layers count in no group: thirds of the global layers, numbers equal numpy's over them
    path = synthetic(os.path.join(TMP, "pieces_native.h5"))
    make_native(path, [0, 4, 0, 0, 4, 0, 4])  # global: 0, 2, 3, 5
    rep = check_json(path, min_count=2, top=100)
    tk = rep["traces"][0]["tokens"]
    assert [g["name"] for g in tk["groups"]] == ["layers 0-0 (1 global)", "layers 2-2 (1 global)", "layers 3-5 (2 global)",
                                               "all global layers (4 of 7)"], tk["groups"]
    assert [g["layers_counted"] for g in tk["groups"]] == [1, 1, 2, 4]
    tiny = os.path.join(TMP, "tiny_native.h5")
    shutil.copy(TINY, tiny)
    make_native(tiny, [0, 4])
    ms = json.loads(aha("report", tiny, "--out-format", "json").stdout)["traces"][0]["mass"]
    eps, S, groups, want = expect_mass(tiny)
    assert [(g["first_layer"], g["last_layer"] + 1) for g in ms["groups"]] == groups == [(0, 1), (0, 2)], ms["groups"]
    for x in ms["windows"]:
        for g, y in enumerate(x["groups"]):
            n, sk, wi, fa = want[x["window"], g, "all"]
            assert y["decisions"] == n and abs(y["far"] - fa) <= 1e-12 if n else y["decisions"] == 0, (x["window"], g)


def test_shards():
    # two shards of a run (documents 0-1 and 2-3) give the numbers of the whole trace
    whole = synthetic(os.path.join(TMP, "whole.h5"))
    parts = []
    with h5py.File(whole, "r") as f:
        offs = f["doc_offsets"][:]
        for k, (d0, d1) in enumerate(((0, 2), (2, 4))):
            a, b = offs[d0], offs[d1]
            parts.append(os.path.join(TMP, "shard%d.h5" % k))
            with h5py.File(parts[-1], "w") as g:
                g.attrs.update(dict(f.attrs), n_docs=d1 - d0, n_tokens=b - a, shard="%d/2" % k)
                for name in ("tokens", "position"):
                    g[name] = f[name][a:b]
                g["doc_offsets"] = offs[d0:d1 + 1] - a
                g.create_dataset("token_text", data=f["token_text"][a:b], dtype=h5py.string_dtype())
                g["dependency/eps_0.02"] = f["dependency/eps_0.02"][:, a:b]
    got = json.loads(aha("report", *parts, "--out-format", "json", "--min-count", 2).stdout)["traces"][0]["tokens"]
    want = json.loads(aha("report", whole, "--out-format", "json", "--min-count", 2).stdout)["traces"][0]["tokens"]
    assert got == want


def expect_mass(path):
    """The "mass" member's numbers, from the trace's arrays: per window and layer group
    (all layers last), the mean sinks / window / far mass over decisions with
    t >= w + sinks, and over those of them with d_eps > w (first eps)."""
    with h5py.File(path, "r") as f:
        eps, S = float(f.attrs["eps"][0]), int(f.attrs["sinks"])
        dep, pos = f["dependency/eps_%g" % eps][:], f["position"][:]
        sink = f["mass_sinks"][:].astype(np.float64)
        far = {int(w): f["mass_far/w_%d" % w][:].astype(np.float64) for w in f.attrs["windows"]}
        lw = f.attrs.get("layer_window", np.zeros(dep.shape[0], np.int64))
    groups, members = layer_groups(lw)
    out = {}
    for w, fw in far.items():
        for g, ls in enumerate(members):
            sub = np.zeros(dep.shape, bool)
            sub[np.ix_(ls, pos >= w + S)] = True
            for key, m in (("all", sub), ("global", sub & (dep > w))):
                n = int(m.sum())
                out[w, g, key] = (n, sink[m].mean() if n else None, 1 - sink[m].mean() - fw[m].mean() if n else None,
                                  fw[m].mean() if n else None)
    return eps, S, groups, out


def test_mass():
    rep = json.loads(aha("report", TINY, "--out-format", "json").stdout)["traces"][0]
    ms = rep["mass"]
    eps, S, groups, want = expect_mass(TINY)
    assert ms["recorded"] and ms["eps"] == eps and ms["sinks"] == S and "t >= w + sinks" in ms["subset"]
    assert [(g["first_layer"], g["last_layer"] + 1) for g in ms["groups"]] == groups
    close = lambda a, b: (a is None and b is None) or abs(a - b) <= 1e-12
    seen = 0
    for x in ms["windows"]:
        for g, y in enumerate(x["groups"]):
            for key, z in (("all", y), ("global", y["global"])):
                n, sk, wi, fa = want[x["window"], g, key]
                assert z["decisions"] == n and close(z["sinks"], sk) and close(z["window"], wi) and close(z["far"], fa), \
                    (x["window"], g, key, z, want[x["window"], g, key])
                seen += n > 0
            assert y["global"]["fraction"] == y["global"]["decisions"] / y["decisions"]
    assert seen > 10, "the tiny trace must have decisions in most cells"
    # CSV rows of table mass and the Markdown table hold the same numbers
    out = os.path.join(TMP, "mass_rep")
    aha("report", TINY, "-o", out)
    rows = [r for r in csv.DictReader(open(os.path.join(out, "report.csv"))) if r["table"] == "mass"]
    for x in ms["windows"]:
        for g, y in enumerate(x["groups"]):
            for sub, z in (("t_ge_w_sinks", y), ("oracle_global", y["global"])):
                got = {r["metric"]: r["value"] for r in rows if r["window"] == str(x["window"]) and r["subset"] == sub
                       and r["router"] == ms["groups"][g]["name"]}
                for m in ("decisions", "sinks", "window", "far"):
                    assert (got[m] == "" and z[m] is None) or float(got[m]) == z[m], (x["window"], g, sub, m, got)
    md = open(os.path.join(out, "report.md")).read()
    sec = md[md.index("### Where attention mass goes"):]
    assert all(x in sec for x in ("t >= w + sinks", "eps %g" % eps, "sinks %d, ctx 16" % S)), sec[:400]
    y = ms["windows"][0]["groups"][-1]
    assert "| 2 | all layers | %d | %.4f | %.4f | %.4f |" % (y["decisions"], y["sinks"], y["window"], y["far"]) in sec
    # the figure's data are the report's
    figs = os.path.join(TMP, "mass_fig")
    assert f"{figs}/mass.png" in aha("plot", TINY, "-o", figs).stdout.split()
    rows = dat(f"{figs}/mass.dat")
    ng = len(ms["groups"])
    assert len(rows) == len(ms["windows"]) * ng
    for r, (i, k) in zip(rows, [(i, k) for i in range(len(ms["windows"])) for k in range(ng)]):
        x = ms["windows"][i]
        y = x["groups"][(k + ng - 1) % ng]  # all layers first
        fnum = lambda v: float("nan") if v is None else v
        want_row = [y["decisions"], y["sinks"], y["window"], y["far"], y["global"]["decisions"],
                    y["global"]["fraction"], y["global"]["sinks"], y["global"]["window"], y["global"]["far"]]
        assert int(r[0]) == x["window"] and np.array_equal([float(v) for v in r[2:]], [fnum(v) for v in want_row],
                                                          equal_nan=True), (r, want_row)
    gp = open(f"{figs}/mass.gp").read()
    for s_ in ("t >= w + sinks", "d_eps > w", "oracle eps %g" % eps, "sinks %d, ctx 16" % S, "far context"):
        assert s_ in gp, s_
    # a trace without the datasets: said, not guessed
    plain = synthetic(os.path.join(TMP, "nomass.h5"))
    r = json.loads(aha("report", plain, "--out-format", "json").stdout)["traces"][0]
    assert r["mass"] == {"recorded": False}, r["mass"]
    assert "not recorded (aha record --mass)" in aha("report", plain).stdout
    assert "mass.png" not in aha("plot", plain, "-o", os.path.join(TMP, "nomass_fig")).stdout


def dat(path):
    return [l.split() for l in open(path) if l.strip() and not l.startswith("#")]


def test_plot():
    out = os.path.join(TMP, "plot")
    r = aha("plot", TINY, "-o", out, "--window", 8)
    assert f"{out}/tokens.png" in r.stdout.split() and f"{out}/classes.png" in r.stdout.split(), r.stdout
    tk = json.loads(aha("report", TINY, "--out-format", "json").stdout)["traces"][0]["tokens"]
    x = tk["windows"][2]  # w = 8
    order = [len(tk["groups"]) - 1] + list(range(len(tk["groups"]) - 1))  # all layers first
    fnum = lambda v: float("nan") if v is None else v
    for name, key, labels in (("tokens", "position", [[str(b[0]), str(b[1])] for b in tk["position_buckets"]]),
                              ("classes", "class", [[c] for c in tk["classes"]])):
        rows = dat(f"{out}/{name}.dat")
        assert [r[:len(labels[0])] for r in rows] == labels, name
        for r, i in zip(rows, range(len(rows))):
            vals = [float(v) for v in r[len(labels[0]):]]
            assert vals[0] == x[key][-1]["t_ge_w"][i]["occurrences"]
            want = [fnum(x[key][g]["t_ge_w"][i]["fraction"]) for g in order]
            assert np.array_equal(vals[1:], want, equal_nan=True), (name, r, want)
        head = open(f"{out}/{name}.dat").readline()
        gp = open(f"{out}/{name}.gp").read()
        for s in ("oracle eps 0.05", "w = 8", "decisions with t >= w", "sinks 1, ctx 16"):
            assert s in head and s in gp, (name, s)


check("top tokens, position buckets and classes equal numpy on a tiny-model trace (every window, group, subset)", test_tiny)
check("tokens.csv and the Markdown tables hold the JSON's numbers", test_csv_md)
check("the class rule on hand-made pieces; layer thirds; pieces escaped in Markdown", test_classes)
check("natively local layers count in no layer group (thirds of the global layers); tokens and mass equal numpy's", test_native_local)
check("shards of a run combine to the whole trace's token numbers", test_shards)
check("tokens and classes figures: .dat equal the report, labelled with eps, w, subset, sinks, ctx", test_plot)
check("where attention mass goes (--mass): JSON, CSV, Markdown and mass.dat equal numpy on the trace; absent: said", test_mass)
finish()
