"""make frontier's pipeline (scripts/frontier.sh, frontier_data.py,
frontier_compare.py). The data: no evaluated text is in any fitting file, and
the long documents are whole files. The stages large and long end to end on
SmolLM2 with QUICK_TOKENS (their numbers mean nothing; the plumbing must hold):
each comparison names its sets and policies, and the per-layer table of the
ctx-4096 frontier equals each layer's fraction of the run's gates read with
h5py; the cost lines compare each grid with a prefill. An unknown stage is one
line and exit 2, before anything is written. Prints PASS/FAIL lines
(tests/run.sh counts them).
"""
import json
import os
import re
import subprocess
import tempfile

import h5py
import numpy as np

from ahatest import ROOT, check, finish

TMP = tempfile.mkdtemp(prefix="aha_frontier_script_")
CORPORA = os.path.join(ROOT, "datasets/corpora")


def texts(path):
    with open(path) as f:
        return [json.loads(line)["text"] for line in f]


def test_data():
    out = os.path.join(TMP, "data")
    subprocess.run(["python3", os.path.join(ROOT, "scripts/frontier_data.py"), CORPORA, out], check=True)
    fitting = "\x00".join(t for n in ("fit", "fit-more", "fit-large") for t in texts(os.path.join(out, n + ".jsonl")))
    held = [t for n in ("prose-eval", "code-eval", "prose-long", "code-long") for t in texts(os.path.join(out, n + ".jsonl"))]
    assert len(held) == 9 + 10 + 2 + 2, len(held)
    files = [open(os.path.join(CORPORA, k, n), encoding="utf-8").read() for k in ("prose", "code")
             for n in sorted(os.listdir(os.path.join(CORPORA, k)))]
    corpus = "\x00".join(files)
    for t in held:  # 80-character probes every 400 characters, each once in the corpora (a refrain or a licence header is no leak)
        assert any(f.startswith(t) for f in files), t[:60]
        probes = [t[i:i + 80] for i in range(0, max(1, len(t) - 80), 400)]
        probes = [q for q in probes if corpus.count(q) == 1]
        assert len(probes) > len(t) // 800, (t[:60], len(probes))
        for q in probes:
            assert q not in fitting, (t[:60], q)
    long = texts(os.path.join(out, "prose-long.jsonl")) + texts(os.path.join(out, "code-long.jsonl"))
    assert all(t in files for t in long), "a long document is a whole file"
    assert len(fitting) > 750_000, len(fitting)  # enough for 200,000 tokens


def frontier(env, *args):
    e = dict(os.environ, THREADS="2", **env)
    return subprocess.run(["bash", os.path.join(ROOT, "scripts/frontier.sh"), *args], env=e, capture_output=True, text=True)


def test_unknown_stage():
    out = os.path.join(TMP, "never")
    r = frontier({"FRONTIER_OUT": out, "FRONTIER_STAGES": "large lng"})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout)
    assert r.stderr.strip() == "frontier: unknown stage 'lng' in FRONTIER_STAGES (base ablations large long)", r.stderr
    assert not os.path.exists(out)


def test_quick_stages():
    out = os.path.join(TMP, "quick")
    r = frontier({"FRONTIER_OUT": out, "FRONTIER_STAGES": "large long", "QUICK_TOKENS": "300", "LARGE_WINDOWS": "128"})
    assert r.returncode == 0, r.stderr[-2000:]
    large = open(os.path.join(out, "compare-large.md")).read()
    for data in ("prose-eval.jsonl", "code-eval.jsonl"):
        assert f"### {data}, w=128, sinks 4, ctx 1024" in large, large[:800]
    for pol in ("learned", "werr", "local"):
        assert re.search(rf"^\| {pol} \| ", large, re.M), pol
    long = open(os.path.join(out, "compare-long.md")).read()
    for corpus in ("prose", "code"):
        sec = long[long.index(f"### {corpus}-long.jsonl, w=128, sinks 4, ctx 4096"):]
        sec = sec[:sec.index("\n### ")] if "\n### " in sec else sec
        head = re.search(r"^\| layer \| (.*) \|$", sec, re.M)
        assert head, sec[-1500:]
        cols = re.findall(r"\((learned|werr):([0-9.e-]+):", head.group(1))
        rows = re.findall(r"^\| (\d+) \| (.*) \|$", sec[head.end():], re.M)
        assert [int(x[0]) for x in rows] == list(range(30)), rows[:3]
        with h5py.File(os.path.join(out, f"long-{corpus}-w128.h5")) as f:
            for j, (pol, param) in enumerate(cols):
                name = next(n for n in f["runs"] if n.startswith(pol) and n.endswith("_w128") and
                            np.isclose(float(re.search(r"_[a-z]*([0-9.e-]+)_w128$", n).group(1)), float(param), rtol=1e-5))
                g = f[f"runs/{name}/gate"][...] != 0  # [L, T, H]
                want = g.mean(axis=(1, 2))
                got = [float(x[1].split(" | ")[j]) for x in rows]
                assert np.allclose(got, want, atol=5e-4), (corpus, name, got[:4], want[:4])
    cost = open(os.path.join(out, "cost-long.txt")).read().splitlines()
    assert len(cost) == 2 and all(re.search(r"\+ 12 routed runs\) [0-9.]+ s, aha ppl of the same tokens [0-9.]+ s: [0-9.]+x one prefill$", c)
                                  for c in cost), cost


check("frontier data: no evaluated text (ctx 1024 pieces, ctx 4096 documents) is in fit, fit-more or fit-large; "
      "the long documents are whole files", test_data)
check("make frontier: an unknown stage is one line naming it, exit 2, nothing written", test_unknown_stage)
check("make frontier, stages large and long (QUICK_TOKENS): the comparisons name each set and policy; the ctx-4096 "
      "per-layer table equals each layer's fraction of the run's gates (h5py); a cost line per grid", test_quick_stages)
finish()
