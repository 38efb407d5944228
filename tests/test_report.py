"""aha report on synthetic traces with known answers, and on real ones.

Traces are written with h5py in the schema of docs/trace-format.md; every
number `aha report --out-format json` prints is checked against numpy computed
independently from the same arrays (exact: the report divides the same integer
counts), one small trace against values worked out by hand. Then: CSV and
Markdown agree with JSON, shards combine, mismatches and bad input give one
clear line and a non-zero exit, and a SIGKILLed `aha record` reports its
completed documents. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import csv
import io
import json
import math
import os
import re
import struct
import sys
import tempfile

import h5py
import numpy as np

from ahatest import ROOT, aha, check, finish, kill_mid_write, make_native, tokfile

TMP = tempfile.mkdtemp(prefix="aha_report_")


def report(*paths, extra=()):
    return json.loads(aha("report", *paths, "--out-format", "json", *extra).stdout)


def write_trace(path, lens, dep, windows, gate=None, runs=None, **attrs):
    """A trace: documents of lens tokens; dep {eps: uint32 [L, T, H]}; runs
    {name: (policy, window, nll, kl, gate or None, flops_executed, flops_full)}."""
    eps = list(dep)
    L, T, H = dep[eps[0]].shape
    assert T == sum(lens)
    with h5py.File(path, "w") as f:
        a = dict(format="aha-trace", format_version=1, model="synthetic", architecture="llama", n_layers=L,
                 n_heads=H, router="learned" if gate is not None else "none", tau=0.5, eps=np.array(eps),
                 windows=np.array(windows), sinks=0, mode="observe", complete=1, n_docs=len(lens), n_tokens=T)
        a.update(attrs)
        for k, v in a.items():
            f.attrs[k] = v
        f["tokens"] = np.arange(T, dtype=np.int32) % 100
        f["doc_offsets"] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        f["position"] = np.concatenate([np.arange(n) for n in lens]).astype(np.int32) if lens else np.zeros(0, np.int32)
        f.create_dataset("token_text", data=[f"tok{i}" for i in range(T)], dtype=h5py.string_dtype())
        for e, d in dep.items():
            f.create_dataset("dependency/eps_%g" % e, data=d.astype(np.uint32), chunks=(L, min(T, 5), H) if T else None)
        if gate is not None:
            f["gate"] = gate.astype(np.uint8)
            f["router_logit"] = np.where(gate, 1.0, -1.0).astype(np.float16)
        for name, (policy, w, nll, kl, g, fe, ff) in (runs or {}).items():
            grp = f.create_group("runs/" + name)
            grp.attrs.update(policy=policy, window=w, flops_executed=fe, flops_full=ff)
            grp["nll"], grp["kl"] = nll.astype(np.float32), kl.astype(np.float32)
            if g is not None:
                grp["gate"] = g.astype(np.uint8)
    return path


def random_trace(path, seed=0, lens=(9, 17, 4, 12), L=3, H=2, windows=(2, 4, 8), **attrs):
    rng = np.random.default_rng(seed)
    pos = np.concatenate([np.arange(n) for n in lens])
    T = len(pos)
    # d_eps in 1..t+1, weighted toward the ends so every window sees both answers
    d01 = np.minimum(1 + (rng.random((L, T, H)) ** 0.7 * (pos[None, :, None] + 1)).astype(np.uint32), pos[None, :, None] + 1)
    d1 = np.maximum(1, d01 - rng.integers(0, 3, size=d01.shape)).astype(np.uint32)
    gate = rng.random((L, T, H)) < 0.4
    nll = rng.integers(1, 40, size=T) / 8.0  # eighths: sums are exact in float32 and double
    nll_r = nll + rng.integers(0, 4, size=T) / 8.0
    last = np.cumsum(lens) - 1
    nll[last] = nll_r[last] = np.nan
    kl_r = rng.integers(0, 16, size=T) / 16.0
    runs = {"full": ("global", 0, nll, np.zeros(T), None, 1000.0, 1000.0),
            "w4": ("oracle", 4, nll_r, kl_r, d01 > 4, 600.0, 1000.0)}
    write_trace(path, list(lens), {0.01: d01, 0.1: d1}, list(windows), gate=gate, runs=runs, **attrs)
    return dict(pos=pos, dep=[d01, d1], gate=gate, lens=list(lens), windows=list(windows), nll=nll, nll_r=nll_r,
                kl_r=kl_r, L=L, H=H)


def frac(g, n):
    return {"global": int(g), "total": int(n), "fraction": (int(g) / int(n)) if n else None}


def test_hand():
    # one layer, one head, one document of 8 tokens
    d = np.array([1, 2, 3, 1, 5, 2, 7, 8], np.uint32).reshape(1, 8, 1)
    p = write_trace(os.path.join(TMP, "hand.h5"), [8], {0.05: d}, [2, 4])
    tr = report(p)["traces"][0]
    assert tr["max_d"] == 8 and tr["decisions"] == 8
    assert tr["device"] == "cpu"  # a trace without the attribute was made on the CPU
    assert tr["long_tail"][0]["ccdf"] == [1, 0.75, 0.5, 0.375, 0.375, 0.25, 0.25, 0.125, 0]
    assert tr["long_tail"][0]["quantiles"] == {"median": 2, "p90": 8, "p99": 8, "max": 8}
    w2, w4 = tr["routers"][0]["windows"]
    assert w2["all"] == frac(4, 8) and w2["t_ge_w"] == frac(4, 6), w2  # d > 2: 3, 5, 7, 8; t >= 2: 6 tokens
    assert w4["all"] == frac(3, 8) and w4["t_ge_w"] == frac(3, 4), w4
    assert tr["agreement"] == [] and tr["runs"] == []


def expected_fracs(t, e, r):
    """numpy: {window: (all, t_ge_w, per_layer, per_head, per_doc)} for eps index e (None = learned)."""
    out = {}
    L, H, pos = t["L"], t["H"], t["pos"]
    docs = np.repeat(np.arange(len(t["lens"])), t["lens"])
    for w in t["windows"]:
        glob = t["gate"] if e is None else t["dep"][e] > w
        tw = np.broadcast_to(pos[None, :, None] >= w, glob.shape)
        per = lambda m: frac((glob & m).sum(), m.sum())
        allm = np.ones_like(glob)
        out[w] = dict(all=per(allm), t_ge_w=per(tw),
                      per_layer=[{"all": per(allm & (np.arange(L) == l)[:, None, None]),
                                  "t_ge_w": per(tw & (np.arange(L) == l)[:, None, None])} for l in range(L)],
                      per_head=[[{"all": per(allm & ((np.arange(L) == l)[:, None, None] & (np.arange(H) == h)[None, None, :])),
                                  "t_ge_w": per(tw & ((np.arange(L) == l)[:, None, None] & (np.arange(H) == h)[None, None, :]))}
                                 for h in range(H)] for l in range(L)],
                      per_doc=[{"all": per(allm & (docs == k)[None, :, None]), "t_ge_w": per(tw & (docs == k)[None, :, None])}
                               for k in range(len(t["lens"]))])
    return out


def test_random_fractions():
    t = random_trace(os.path.join(TMP, "rand.h5"))
    tr = report(os.path.join(TMP, "rand.h5"))["traces"][0]
    assert [r["router"] for r in tr["routers"]] == ["oracle", "oracle", "learned"]
    for r, e in zip(tr["routers"], (0, 1, None)):
        want = expected_fracs(t, e, r)
        for w in r["windows"]:
            exp = want[w["window"]]
            for k in ("all", "t_ge_w", "per_layer", "per_head", "per_doc"):
                assert w[k] == exp[k], f"{r['router']} w={w['window']} {k}: {w[k]} != {exp[k]}"


def test_random_long_tail():
    t = random_trace(os.path.join(TMP, "rand.h5"))
    tr = report(os.path.join(TMP, "rand.h5"))["traces"][0]
    max_d = int(t["pos"].max()) + 1
    for lt, d in zip(tr["long_tail"], t["dep"]):
        ws = np.arange(max_d + 1)
        assert lt["ccdf"] == [(d > w).sum() / d.size for w in ws], "overall CCDF"
        for l in range(t["L"]):
            assert lt["ccdf_per_layer"][l] == [(d[l] > w).sum() / d[l].size for w in ws], f"CCDF layer {l}"
        s = np.sort(d.ravel())
        q = lambda p: int(s[np.searchsorted(np.arange(1, s.size + 1), p * s.size)])  # smallest d with rank >= p N
        assert lt["quantiles"] == {"median": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": int(s[-1])}, lt["quantiles"]


def conf(g, o):
    tp, fp, fn, tn = int((g & o).sum()), int((g & ~o).sum()), int((~g & o).sum()), int((~g & ~o).sum())
    r = lambda a, b: a / b if b else None
    return dict(tp=tp, fp=fp, fn=fn, tn=tn, precision=r(tp, tp + fp), recall=r(tp, tp + fn), f1=r(2 * tp, 2 * tp + fp + fn))


def test_agreement():
    t = random_trace(os.path.join(TMP, "rand.h5"))
    tr = report(os.path.join(TMP, "rand.h5"))["traces"][0]
    assert len(tr["agreement"]) == 2 * len(t["windows"])
    for a in tr["agreement"]:
        w, e = a["window"], [0.01, 0.1].index(a["eps"])
        o, g = t["dep"][e] > w, t["gate"]
        m = t["pos"] >= w
        assert a["all"] == conf(g, o), (a["all"], conf(g, o))
        assert a["t_ge_w"] == conf(g[:, m], o[:, m])
        for l in range(t["L"]):
            for h in range(t["H"]):
                assert a["per_head_t_ge_w"][l][h] == conf(g[l, m, h], o[l, m, h]), (l, h)


def test_runs():
    t = random_trace(os.path.join(TMP, "rand.h5"))
    runs = report(os.path.join(TMP, "rand.h5"))["traces"][0]["runs"]
    full, w4 = runs
    ok = np.isfinite(t["nll"])
    ppl_full = math.exp(t["nll"][ok].sum() / ok.sum())
    ppl = math.exp(t["nll_r"][ok].sum() / ok.sum())
    assert full["name"] == "full" and full["policy"] == "global" and full["ppl_delta"] == 0
    assert math.isclose(full["ppl"], ppl_full, rel_tol=1e-13) and full["mean_kl"] == 0
    assert full["global_all"]["fraction"] == 1 and full["flops_fraction"] == 1
    assert math.isclose(w4["ppl"], ppl, rel_tol=1e-13)
    assert math.isclose(w4["ppl_change"], ppl / ppl_full - 1, rel_tol=1e-9)
    assert w4["mean_kl"] == t["kl_r"].mean() and w4["tokens_scored"] == ok.sum()
    g = t["dep"][0] > 4
    assert w4["global_all"] == frac(g.sum(), g.size)
    m = t["pos"] >= 4
    assert w4["global_t_ge_w"] == frac(g[:, m].sum(), g[:, m].size)
    # per layer, each layer's own decisions; a run without gates (full attention) has none
    assert w4["per_layer"] == [{"all": frac(x.sum(), x.size), "t_ge_w": frac(x[m].sum(), x[m].size)} for x in g]
    assert full["per_layer"] == [None] * len(g)
    assert w4["flops_executed"] == 600 and w4["flops_fraction"] == 0.6
    # the oracle decides from d_eps: its run needs the full pass first, counted beside the routed pass
    assert w4["flops_incl_oracle_pass"] == 1600 and w4["flops_fraction_incl_oracle_pass"] == 1.6
    assert full["flops_incl_oracle_pass"] is None and full["flops_fraction_incl_oracle_pass"] is None
    md = aha("report", os.path.join(TMP, "rand.h5")).stdout
    runs_md = md[md.index("### Runs"):]
    assert "FLOPs incl. the oracle's full pass/full" in runs_md and "| 0.6000 | 1.6000 |" in runs_md, runs_md
    assert "FLOPs executed count the routed pass only" in runs_md, runs_md


def test_full_pass_attribute():
    # The report counts the full pass a run needs by the run's full_pass attribute, never by its policy's
    # name: set, it rules (a policy it does not know, an oracle said not to); absent (a trace before it),
    # it is derived from the policy (test_runs: an oracle counts it).
    p = os.path.join(TMP, "fullpass.h5")
    random_trace(p)
    with h5py.File(p, "r+") as f:
        f["runs/w4"].attrs["policy"] = "mine"
        f["runs/w4"].attrs["full_pass"] = 1
    w4 = report(p)["traces"][0]["runs"][1]
    assert w4["policy"] == "mine" and w4["flops_fraction_incl_oracle_pass"] == 1.6, w4
    with h5py.File(p, "r+") as f:
        f["runs/w4"].attrs["policy"] = "oracle"
        f["runs/w4"].attrs["full_pass"] = 0
    w4 = report(p)["traces"][0]["runs"][1]
    assert w4["flops_incl_oracle_pass"] is None and w4["flops_fraction_incl_oracle_pass"] is None, w4


def test_run_window_not_recorded():
    # a routed run at a window --windows does not hold (4, beside 2 and 8): its t >= w fraction and per-layer
    # totals still come from its stored gates (numpy over them), never "-" or 0
    t = random_trace(os.path.join(TMP, "w4-apart.h5"), windows=(2, 8))
    w4 = report(os.path.join(TMP, "w4-apart.h5"))["traces"][0]["runs"][1]
    g, m = t["dep"][0] > 4, t["pos"] >= 4
    assert w4["window"] == 4 and w4["global_t_ge_w"] == frac(g[:, m].sum(), g[:, m].size), w4["global_t_ge_w"]
    assert w4["per_layer"] == [{"all": frac(x.sum(), x.size), "t_ge_w": frac(x[m].sum(), x[m].size)} for x in g]
    md = aha("report", os.path.join(TMP, "w4-apart.h5")).stdout
    row = next(l for l in md[md.index("### Runs"):].splitlines() if l.startswith("| w4 "))
    assert "| %.4f |" % (g[:, m].sum() / g[:, m].size) in row and "| - |" not in row, row


def test_labels():
    # every table, key and CSV row says which decisions a fraction counts, and the eps, sinks and ctx
    p = os.path.join(TMP, "labels.h5")
    random_trace(p, sinks=2, ctx=64)
    tr = report(p)["traces"][0]
    assert tr["sinks"] == 2 and tr["ctx"] == 64 and tr["fraction_subsets"]["default"] == "all"
    assert set(tr["fraction_subsets"]) == {"default", "all", "t_ge_w"}
    for r in tr["runs"]:
        assert "global" not in r and "global_all" in r and "global_t_ge_w" in r, sorted(r)
    md = aha("report", p).stdout
    heads = [l for l in md.splitlines() if l.startswith("### ")]
    assert len(heads) >= 8, heads
    for h in heads:
        assert "sinks 2, ctx 64" in h and ("all decisions" in h or "t >= w" in h), h
    assert "### Fraction of full-attention decisions, all decisions, the default (sinks 2, ctx 64)" in heads, heads
    assert any(h.startswith("### Fraction of full-attention decisions, decisions with t >= w") for h in heads), heads
    assert "oracle eps 0.01" in md and "| global, all decisions | global, t >= w |" in md
    rows = list(csv.DictReader(io.StringIO(aha("report", p, "--out-format", "csv").stdout)))
    got = {(r["table"], r["subset"], r["metric"]): r["value"] for r in rows if r["layer"] == ""}  # not per layer
    assert got[("trace", "", "sinks")] == "2" and got[("trace", "", "ctx")] == "64"
    w4 = tr["runs"][1]
    assert float(got[("run", "w4", "fraction_all")]) == w4["global_all"]["fraction"]
    assert float(got[("run", "w4", "fraction_t_ge_w")]) == w4["global_t_ge_w"]["fraction"]
    assert float(got[("run", "w4", "flops_fraction_incl_oracle_pass")]) == 1.6
    assert ("run", "w4", "fraction") not in got, "a run's fraction without its subset"
    # side by side: both subsets, each row naming its eps, sinks and ctx
    q = os.path.join(TMP, "labels_b.h5")
    random_trace(q, seed=3, sinks=2)
    md = aha("report", p, q, "--compare").stdout
    assert "## Side by side: fraction global, all decisions (the first eps's oracle)" in md, md[:600]
    assert "## Side by side: fraction global, decisions with t >= w (the first eps's oracle)" in md
    assert "| %s (synthetic; eps 0.01, sinks 2, ctx 64) |" % p in md and "eps 0.01, sinks 2, ctx not recorded) |" in md


def test_csv_md_agree():
    p = os.path.join(TMP, "rand.h5")
    random_trace(p)
    tr = report(p)["traces"][0]
    rows = list(csv.DictReader(io.StringIO(aha("report", p, "--out-format", "csv").stdout)))
    key = lambda r: (r["table"], r["router"], r["eps"], r["window"], r["layer"], r["head"], r["doc"], r["subset"], r["metric"])
    got = {key(r): r["value"] for r in rows}
    for r in tr["routers"]:
        e = "%.9g" % r["eps"] if "eps" in r else ""
        for w in r["windows"]:
            for sub in ("all", "t_ge_w"):
                assert float(got[("fraction", r["router"], e, str(w["window"]), "", "", "", sub, "fraction")]) == w[sub]["fraction"]
                assert float(got[("fraction", r["router"], e, str(w["window"]), "", "", "", sub, "total")]) == w[sub]["total"]
            assert float(got[("fraction", r["router"], e, str(w["window"]), "1", "0", "", "t_ge_w", "global")]) == \
                w["per_head"][1][0]["t_ge_w"]["global"]
    lt = tr["long_tail"][1]
    assert float(got[("ccdf", "", "0.1", "3", "", "", "", "", "p_gt")]) == lt["ccdf"][3]
    assert float(got[("quantile", "", "0.1", "", "2", "", "", "", "p90")]) == lt["per_layer_quantiles"][2]["p90"]
    a = tr["agreement"][0]
    assert float(got[("agreement", "", "0.01", "2", "", "", "", "t_ge_w", "f1")]) == a["t_ge_w"]["f1"]
    assert float(got[("run", "oracle", "", "4", "", "", "", "w4", "ppl")]) == tr["runs"][1]["ppl"]
    pl = tr["runs"][1]["per_layer"][2]
    assert float(got[("run", "oracle", "", "4", "2", "", "", "w4", "global_t_ge_w")]) == pl["t_ge_w"]["global"]
    assert float(got[("run", "oracle", "", "4", "2", "", "", "w4", "fraction_all")]) == pl["all"]["fraction"]
    md = aha("report", p).stdout
    w0 = tr["routers"][0]["windows"][0]["all"]
    assert "| oracle eps 0.01 | %.4f (%d/%d) |" % (w0["fraction"], w0["global"], w0["total"]) in md, md[:800]
    assert "| w4 | oracle | 4 | %.4f |" % tr["runs"][1]["ppl"] in md
    out = os.path.join(TMP, "rep")
    aha("report", p, "-o", out)
    assert json.load(open(os.path.join(out, "report.json"))) == report(p)
    assert open(os.path.join(out, "report.md")).read() == md


def test_shards_combine():
    whole = os.path.join(TMP, "whole.h5")
    t = random_trace(whole, seed=5)
    a, b = os.path.join(TMP, "shard0.h5"), os.path.join(TMP, "shard1.h5")
    T0 = sum(t["lens"][:2])
    runs = lambda sl, ds: {"full": ("global", 0, t["nll"][sl], np.zeros(sl.stop - sl.start), None, 500.0, 500.0),
                           "w4": ("oracle", 4, t["nll_r"][sl], t["kl_r"][sl], t["dep"][0][:, sl] > 4, 300.0, 500.0)}
    for path, sl, lens in ((a, slice(0, T0), t["lens"][:2]), (b, slice(T0, len(t["pos"])), t["lens"][2:])):
        write_trace(path, lens, {0.01: t["dep"][0][:, sl], 0.1: t["dep"][1][:, sl]}, t["windows"],
                    gate=t["gate"][:, sl], runs=runs(sl, None), shard="%d/2" % (path == b))
    got, want = report(a, b)["traces"][0], report(whole)["traces"][0]
    assert got["files"] == [a, b]
    for k in ("routers", "long_tail", "agreement", "n_docs", "n_tokens", "decisions"):
        assert got[k] == want[k], k + " differs between shards and the whole"
    for r, s in zip(got["runs"], want["runs"]):
        for k in ("ppl", "mean_kl", "global_all", "flops_fraction", "tokens_scored"):
            assert r[k] == s[k] or math.isclose(r[k], s[k], rel_tol=1e-13), (k, r[k], s[k])


def err(args, pattern):
    r = aha("report", *args, ok=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0, f"exit 0 for {args}"
    assert len(lines) == 1 and pattern in lines[0], f"want one line with {pattern!r}: {r.stderr!r}"


def test_mismatch():
    a = os.path.join(TMP, "rand.h5")
    random_trace(a)
    b = os.path.join(TMP, "other_model.h5")
    random_trace(b, model="another")
    err([a, b], "differ in model")
    c = os.path.join(TMP, "other_eps.h5")
    t = random_trace(c)
    with h5py.File(c, "a") as f:
        f.attrs["eps"] = np.array([0.01, 0.2])
        f.move("dependency/eps_0.1", "dependency/eps_0.2")
    err([a, c], "differ in --eps (0.01,0.1 vs 0.01,0.2)")  # the flag, the values as typed
    # side by side, different models are fine
    both = report(a, b, extra=("--compare",))["traces"]
    assert [x["model"] for x in both] == ["synthetic", "another"] and both[0]["routers"] == both[1]["routers"]
    assert "Side by side" in aha("report", a, b, "--compare").stdout
    del t


def test_bad_input():
    err([os.path.join(TMP, "nope.h5")], "nope.h5: No such file")
    txt = os.path.join(TMP, "text.h5")
    open(txt, "w").write("not hdf5\n")
    err([txt], "not an HDF5 file")
    foreign = os.path.join(TMP, "foreign.h5")
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2, 3]
    err([foreign], "not an aha trace")
    newer = os.path.join(TMP, "newer.h5")
    random_trace(newer, format_version=3)
    err([newer], "format_version 3 is newer than this aha reads (2)")
    err([os.path.join(TMP, "rand.h5"), newer], "format_version 3 is newer")
    # nothing recorded yet (a complete trace without documents is an empty shard: test_identity.py)
    empty = write_trace(os.path.join(TMP, "empty.h5"), [], {0.01: np.zeros((2, 0, 2), np.uint32)}, [4], complete=0)
    err([empty], "unfinished trace without documents")
    random_trace(os.path.join(TMP, "rand.h5"))
    err([os.path.join(TMP, "rand.h5"), "--window", "3"], "window 3 was not recorded (the trace has 2,4,8)")
    err([os.path.join(TMP, "rand.h5"), "--bogus"], "unknown flag '--bogus'")
    many = os.path.join(TMP, "many_eps.h5")
    random_trace(many)
    with h5py.File(many, "a") as f:
        f.attrs["eps"] = np.linspace(0.001, 0.5, 33)
    err([many], "root attribute eps holds 33 values; a trace holds at most 32")
    bad = os.path.join(TMP, "bad_d.h5")
    d = np.ones((1, 4, 1), np.uint32)
    d[0, 1, 0] = 7  # beyond position + 1
    write_trace(bad, [4], {0.01: d}, [2])
    err([bad], "outside 1..position+1")


def test_killed_run():
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 128, size=int(rng.integers(20, 60))).tolist() for _ in range(3000)]
    data = tokfile(os.path.join(TMP, "many.tok"), docs)
    out = os.path.join(TMP, "killed.h5")
    args = ["record", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"), data, "-o", out, "--force",
            "--quiet", "--windows", "4,8,16"]
    killed_with = kill_mid_write(args, out, past=19, total=len(docs))
    assert os.path.isdir(out + ".parts"), "the killed trace should be an index over parts"
    tr = report(out)["traces"][0]
    with h5py.File(out, "r") as f:
        n = len(f["doc_offsets"]) - 1
        d = f["dependency/eps_0.01"][...]
        gate = f["gate"][...]
    assert n == killed_with and tr["n_docs"] == n and tr["complete"] is False, (n, tr["n_docs"], tr["complete"])
    assert tr["n_tokens"] == d.shape[1]
    for w in tr["routers"][0]["windows"]:
        assert w["all"] == frac((d > w["window"]).sum(), d.size), w["window"]
    assert tr["routers"][-1]["windows"][0]["all"] == frac(gate.sum(), gate.size)
    assert "unfinished trace" in aha("report", out).stdout
    os.makedirs(os.path.join(TMP, "alone"), exist_ok=True)
    alone = os.path.join(TMP, "alone", "killed.h5")  # the index without its parts
    with open(out, "rb") as a, open(alone, "wb") as b:
        b.write(a.read())
    err([alone], "a part file of this unfinished trace is missing")


def test_copied_index():
    # an unfinished trace's index copied beside another trace's parts folder of the same name finds
    # none of those parts (their names carry each trace's id): an error, not the other trace's data
    model = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
    paths = []
    for k in range(2):
        rng = np.random.default_rng(40 + k)
        tok = tokfile(os.path.join(TMP, f"stop{k}.tok"), [rng.integers(0, 100, 30).tolist() for _ in range(2)] + [[10**6]])
        os.makedirs(os.path.join(TMP, f"run{k}"), exist_ok=True)
        paths.append(os.path.join(TMP, f"run{k}", "t.h5"))
        r = aha("record", model, tok, "-o", paths[-1], "--ctx", 32, "--force", "--quiet", ok=False)
        assert r.returncode == 1 and "out of range" in r.stderr, r.stderr  # stopped: unfinished, 2 documents
    assert report(paths[1])["traces"][0]["n_docs"] == 2
    with open(paths[0], "rb") as a, open(paths[1], "wb") as b:
        b.write(a.read())
    err([paths[1]], "a part file of this unfinished trace is missing")


def test_real_trace():
    out = os.path.join(TMP, "tiny_sweep.h5")
    tok = tokfile(os.path.join(TMP, "few.tok"), [list(range(5, 45)), list(range(60, 90))])
    aha("sweep", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"), tok, "-o", out, "--windows", "2,4,8",
        "--route", "oracle", "--force", "--quiet")
    tr = report(out)["traces"][0]
    with h5py.File(out, "r") as f:
        for r in tr["runs"][1:]:
            g = f[f"runs/{r['name']}/gate"][...]
            assert r["global_all"] == frac(g.sum(), g.size), r["name"]
            nll = f[f"runs/{r['name']}/nll"][...].astype(np.float64)
            assert math.isclose(r["ppl"], math.exp(nll[np.isfinite(nll)].mean()), rel_tol=1e-9)
    # aha record's summary and aha report define perplexity and mean KL alike (trace_schema.h): KL over
    # every token, the documents' last ones included (they once divided by the scored tokens instead)
    rnd = os.path.join(TMP, "tiny_random.h5")
    summary = aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_aha"), tok, "-o", rnd, "--route",
                  "random:0.3", "--window", 2, "--force", "--quiet").stdout
    run = report(rnd)["traces"][0]["runs"][1]
    ppl, kl = map(float, re.search(r"ppl ([\d.]+) .*mean KL ([\d.]+)", summary).groups())
    with h5py.File(rnd, "r") as f:
        want = f["runs/w2/kl"][...].astype(np.float64).mean()
    assert kl > 0.001 and math.isclose(run["mean_kl"], want, rel_tol=1e-12) and kl == round(want, 5), (kl, run["mean_kl"], want)
    assert ppl == round(run["ppl"], 4), (ppl, run["ppl"])


def werr_expect(f, windows):
    """Window-error statistics from h5py (the float16 values, in float64)."""
    out = []
    for w in windows:
        v = f["window_error/w_%d" % w][...].astype(np.float64).ravel()
        q = lambda p: float(np.quantile(v, p, method="inverted_cdf"))
        out.append(dict(window=w, mean=float(v.mean()), median=q(0.5), p90=q(0.9), p99=q(0.99), max=float(v.max()),
                        above=[dict(frac((v > t).sum(), v.size), threshold=t) for t in (0.01, 0.05, 0.1)]))
    return out


def test_window_error():
    # synthetic: float16 values over the whole range (zeros, subnormals, large), one window per kind
    rng = np.random.default_rng(3)
    p = os.path.join(TMP, "werr.h5")
    info = random_trace(p, werr=1)
    L, H, T = info["L"], info["H"], len(info["pos"])
    vals = {2: rng.random((L, T, H)) * 0.2, 4: 10.0 ** rng.uniform(-7, 1, (L, T, H)), 8: np.zeros((L, T, H))}
    vals[8][0, :3, 0] = [6e-8, 1e-5, 0.5]
    with h5py.File(p, "a") as f:
        for w, v in vals.items():
            f.create_dataset("window_error/w_%d" % w, data=v.astype(np.float16), chunks=(L, 5, H))
    with h5py.File(p, "r") as f:
        want = werr_expect(f, info["windows"])
    got = report(p)["traces"][0]["window_error"]
    for g, x in zip(got, want):
        assert math.isclose(g.pop("mean"), x.pop("mean"), rel_tol=1e-12), g["window"]
        assert g == x, (g, x)
    csv = aha("report", p, "--out-format", "csv").stdout
    assert ",window_error,,,4,,,,,fraction_above_0.05,%.17g" % want[1]["above"][1]["fraction"] in csv
    assert "### Window-output relative error" in aha("report", p).stdout
    # a real --werr trace, read back with h5py
    out = os.path.join(TMP, "tiny_werr.h5")
    tok = tokfile(os.path.join(TMP, "werr.tok"), [list(range(5, 45))])
    aha("record", os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa"), tok, "-o", out, "--windows", "2,4,8",
        "--werr", "--force", "--quiet")
    with h5py.File(out, "r") as f:
        want = werr_expect(f, [2, 4, 8])
    for g, x in zip(report(out)["traces"][0]["window_error"], want):
        assert math.isclose(g.pop("mean"), x.pop("mean"), rel_tol=1e-12) and g == x, (g, x)
    # an impossible (negative) error is named
    with h5py.File(p, "a") as f:
        d = f["window_error/w_4"]
        d[1, 2, 0] = -1
    r = aha("report", p, ok=False)
    assert r.returncode != 0 and "window_error/w_4 is -1 at layer 1 token 2 head 0" in r.stderr, r.stderr


def test_streaming_blocks():
    # a slab much smaller than the trace (and not chunk-aligned) gives the same numbers
    p = os.path.join(TMP, "rand.h5")
    random_trace(p)
    assert report(p, extra=("--block", "3")) == report(p)


def test_max_eps():
    # As many eps as a trace holds (32): aha record writes them, and report,
    # merge, plot and notebook read them back (they once read only 16).
    eps = [round(0.001 * (i + 1), 3) for i in range(32)]
    model = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
    tok = tokfile(os.path.join(TMP, "eps32.tok"), [list(range(5, 45)), list(range(60, 80))])
    out = os.path.join(TMP, "eps32.h5")
    aha("record", model, tok, "-o", out, "--windows", "2,4,8", "--eps", ",".join(map(str, eps)), "--force", "--quiet")
    oracle = [r for r in report(out)["traces"][0]["routers"] if r["router"] == "oracle"]
    assert len(oracle) == 32, len(oracle)
    with h5py.File(out, "r") as f:
        for r in oracle:
            d = f["dependency/eps_%g" % r["eps"]][...]
            for w in r["windows"]:
                assert w["all"] == frac((d > w["window"]).sum(), d.size), (r["eps"], w["window"])
    merged = os.path.join(TMP, "eps32_merged.h5")
    aha("merge", out, "-o", merged, "--force")
    with h5py.File(out, "r") as a, h5py.File(merged, "r") as b:
        assert list(b.attrs["eps"]) == list(a.attrs["eps"])
        for e in eps:
            key = "dependency/eps_%g" % e
            assert np.array_equal(a[key][...], b[key][...]), key
    figs = os.path.join(TMP, "eps32_plot")  # eps32_figures is the notebook's
    aha("plot", out, "-o", figs)
    assert os.path.getsize(os.path.join(figs, "sparsity.png")) > 1000
    nb = os.path.join(TMP, "eps32.ipynb")
    aha("notebook", out, "-o", nb)
    with open(nb) as f:
        assert "oracle eps 0.032" in "".join(c["source"] for c in json.load(f)["cells"])
    r = aha("record", model, tok, "-o", out, "--eps", ",".join(map(str, eps + [0.5])), "--force", ok=False)
    assert r.returncode != 0 and "at most 32" in r.stderr, r.stderr


def native_trace(path, layer_window=(0, 4, 0, 4), seed=0, **attrs):
    """random_trace with natively local layers (make_native), its arrays read
    back, and the same arrays cut to the global layers (what every count over
    layers must equal)."""
    t = random_trace(path, seed=seed, L=len(layer_window), **attrs)
    make_native(path, layer_window)
    with h5py.File(path, "r") as f:
        t["dep"] = [f["dependency/eps_0.01"][...], f["dependency/eps_0.1"][...]]
        t["gate"] = f["gate"][...] != 0
        t["run_gate"] = f["runs/w4/gate"][...] != 0
    G = [l for l, w in enumerate(layer_window) if w == 0]
    g = dict(t, dep=[d[G] for d in t["dep"]], gate=t["gate"][G], run_gate=t["run_gate"][G], L=len(G))
    return t, g, G


def test_native_local():
    # Natively local layers (layer_window > 0) never count: every number over
    # layers equals numpy's over the global layers only; local ones are apart.
    p = os.path.join(TMP, "native.h5")
    t, g, G = native_trace(p)
    tr = report(p)["traces"][0]
    label = "global layers only: 2 of 4; 2 natively local (window 4) shown apart"
    assert tr["layer_window"] == [0, 4, 0, 4] and tr["n_global_layers"] == 2 and tr["layers_counted"] == label, tr["layers_counted"]
    assert tr["decisions_counted"] == len(t["pos"]) * 2 * t["H"] and tr["decisions"] == len(t["pos"]) * 4 * t["H"]
    for r, e in zip(tr["routers"], (0, 1, None)):
        want = expected_fracs(g, e, r)
        for w in r["windows"]:
            exp = want[w["window"]]
            for k in ("all", "t_ge_w", "per_doc"):
                assert w[k] == exp[k], f"{r['router']} w={w['window']} {k}: {w[k]} != {exp[k]}"
            for i, l in enumerate(G):
                assert w["per_layer"][l] == exp["per_layer"][i] and w["per_head"][l] == exp["per_head"][i], (l, w["window"])
    max_d = int(t["pos"].max()) + 1
    for lt, d in zip(tr["long_tail"], g["dep"]):
        assert lt["ccdf"] == [(d > w).sum() / d.size for w in range(max_d + 1)], "CCDF over global layers"
        s = np.sort(d.ravel())
        q = lambda p: int(s[np.searchsorted(np.arange(1, s.size + 1), p * s.size)])
        assert lt["quantiles"] == {"median": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": int(s[-1])}, lt["quantiles"]
    for a in tr["agreement"]:
        o = g["dep"][[0.01, 0.1].index(a["eps"])] > a["window"]
        assert a["all"] == conf(g["gate"], o), a["window"]
    w4 = tr["runs"][1]
    assert w4["global_all"] == frac(g["run_gate"].sum(), g["run_gate"].size), w4["global_all"]
    assert [x is None for x in w4["per_layer"]] == [l not in G for l in range(4)], "local layers are not the policy's"
    for i, l in enumerate(G):
        assert w4["per_layer"][l]["all"] == frac(g["run_gate"][i].sum(), g["run_gate"][i].size), l
    assert tr["runs"][0]["global_all"]["total"] == len(t["pos"]) * 2 * t["H"]
    # the local layers, apart: window and d_eps quantiles, bounded by the window
    assert [(x["layer"], x["window"]) for x in tr["local_layers"]] == [(1, 4), (3, 4)]
    for x in tr["local_layers"]:
        for qd, d in zip(x["quantiles"], t["dep"]):
            s = np.sort(d[x["layer"]].ravel())
            assert qd["max"] == int(s[-1]) <= 4 and qd["median"] == int(s[(s.size + 1) // 2 - 1]), (x, qd)
    md = aha("report", p).stdout
    heads = [l for l in md.splitlines() if l.startswith("### ")]
    for h in heads:
        assert label in h or h.startswith("### Natively local layers"), h
    assert "### Natively local layers (2 of 4; not counted above)" in heads, heads
    assert "**Natively local layers:** 2 of 4 layers run a native sliding window" in md and \
        "counts the 2 global layers' %d decisions" % tr["decisions_counted"] in md, md[:1200]
    per_layer = md[md.index("### Per layer"):md.index("### Per head")]
    assert "\n| 0 |" in per_layer and "\n| 1 |" not in per_layer and "\n| 3 |" not in per_layer, per_layer
    local_md = md[md.index("### Natively local layers"):]
    assert "\n| 1 | 4 |" in local_md and "\n| 3 | 4 |" in local_md, local_md
    rows = list(csv.DictReader(io.StringIO(aha("report", p, "--out-format", "csv").stdout)))
    got = {(r["table"], r["layer"], r["eps"], r["metric"]): r["value"] for r in rows}
    assert got[("local_layer", "1", "", "window")] == "4" and got[("trace", "", "", "n_global_layers")] == "2"
    assert float(got[("local_layer", "3", "0.1", "max")]) == tr["local_layers"][1]["quantiles"][1]["max"]
    # shards with different native windows are not one run
    q = os.path.join(TMP, "native_b.h5")
    native_trace(q, layer_window=(0, 4, 4, 4), shard="1/2")
    with h5py.File(p, "r+") as f:
        f.attrs["shard"] = "0/2"
    err([p, q], "differ in layer_window")


def test_old_trace_all_global():
    # a trace without layer_window (every trace before it) reports as before: every layer global
    p = os.path.join(TMP, "rand.h5")
    t = random_trace(p, L=4)
    tr = report(p)["traces"][0]
    assert tr["layer_window"] == [0] * 4 and tr["n_global_layers"] == 4 and tr["layers_counted"] == "all layers"
    assert tr["local_layers"] == [] and tr["decisions_counted"] == tr["decisions"]
    want = expected_fracs(t, 0, None)
    for w in tr["routers"][0]["windows"]:
        assert w["all"] == want[w["window"]]["all"] and w["per_layer"] == want[w["window"]]["per_layer"]
    md = aha("report", p).stdout
    assert "global layers only" not in md and "Natively local" not in md


check("hand-computed CCDF, quantiles and fractions", test_hand)
check("fractions overall / per layer / head / doc, all and t >= w, oracle and learned", test_random_fractions)
check("CCDF at every w (overall, per layer) and d_eps quantiles", test_random_long_tail)
check("learned vs oracle confusion, precision, recall, F1 (overall and per head)", test_agreement)
check("routed runs: perplexity, its change, KL, fraction global, FLOPs", test_runs)
check("a run's full_pass attribute, not its policy's name, says whether its FLOPs count the full pass; "
      "derived from the policy where absent", test_full_pass_attribute)
check("a routed run at a window not in --windows: its t >= w fraction and per-layer totals from its gates",
      test_run_window_not_recorded)
check("CSV and Markdown agree with JSON; -o writes all three", test_csv_md_agree)
check("tables, JSON and CSV keys name the decisions counted (all / t >= w), eps, sinks and ctx", test_labels)
check("shards combine to the numbers of the whole trace", test_shards_combine)
check("mismatched traces error naming the field; --compare puts them side by side", test_mismatch)
check("bad input: one line, non-zero exit", test_bad_input)
check("a SIGKILLed record's trace (index over parts) reports its completed documents", test_killed_run)
check("an unfinished index copied beside another trace's parts folder is an error, not its data", test_copied_index)
check("a real sweep trace: run fractions and perplexity equal h5py's", test_real_trace)
check("small read slabs give the same report", test_streaming_blocks)
check("window-output errors: quantiles, mean, fractions above thresholds equal numpy's", test_window_error)
check("natively local layers: every count over layers is the global layers' (numpy), local ones apart, "
      "labelled; md / CSV / JSON agree; shards must agree on layer_window", test_native_local)
check("a trace without layer_window reports as before: every layer global", test_old_trace_all_global)
check("32 eps (a trace's most) read back in report, merge, plot and notebook", test_max_eps)
finish()
