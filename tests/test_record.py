"""aha record / aha sweep end to end, read back with h5py and h5dump.

Checks the recorded numbers against independent references: the AHA router
logits and sliding-window logits that HF transformers computed
(tests/fixtures/tiny/*/golden.json, tests/fixtures/record/golden.json), and
d_eps that numpy computed from transformers' attention probabilities on the
real SmolLM2. Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

from ahatest import (AHA, ROOT, aha, attr_str, assert_same_trace, check, check_deps, durable_docs, finish, kill_mid_write, safetensors_header,
                     same_report, tokfile, tok_model, without_doc_index, write_safetensors)

TINY = os.path.join(ROOT, "tests/fixtures/tiny")
SMOL = os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
GOLD = json.load(open(os.path.join(ROOT, "tests/fixtures/record/golden.json")))
TMP = tempfile.mkdtemp(prefix="aha_record_")


def golden(name):
    return json.load(open(os.path.join(TINY, name, "golden.json")))


def nll_from_logits(logits, ids):
    logits = np.asarray(logits, np.float64)
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    return lse[:-1] - logits[np.arange(len(ids) - 1), ids[1:]]


def test_learned_gates(name):
    g = golden(name)
    ids = g["ids"]
    data = tokfile(os.path.join(TMP, name + ".tok"), [ids])
    out = os.path.join(TMP, name + ".h5")
    aha("record", os.path.join(TINY, name), data, "-o", out, "--force", "--windows", "4,8",
        "--eps", "0.01,0.1", "--ctx", 64)
    want = np.asarray(g["router_logits"], np.float32)  # [L, T, H]
    with h5py.File(out, "r") as f:
        gate, logit = f["gate"][...], f["router_logit"][...]
        assert gate.shape == want.shape, (gate.shape, want.shape)
        assert np.array_equal(gate, (want > 0).astype(np.uint8)), "gate != (HF router logit > 0)"
        assert np.allclose(logit, want, rtol=2e-3, atol=2e-3), "router logits differ from HF"
        assert f["tokens"][...].tolist() == ids
        assert attr_str(f.attrs["router"]) == "learned"


def test_observe_schema():
    out = os.path.join(TMP, "llama_aha.h5")  # written by the learned-gates test
    with h5py.File(out, "r") as f:
        L, T, H = f["gate"].shape
        for key in ("format", "format_version", "tool_version", "git_revision", "model",
                    "architecture", "n_layers", "n_heads", "n_kv_heads", "head_dim", "router",
                    "tau", "eps", "windows", "sinks", "command_line"):
            assert key in f.attrs, "root attribute " + key
        assert list(f["doc_offsets"][...]) == [0, T]
        pos = f["position"][...]
        assert pos.tolist() == list(range(T))
        for e in ("0.01", "0.1"):
            d = f["dependency/eps_" + e][...]
            assert d.shape == (L, T, H) and d.dtype == np.uint32
            assert (d >= 1).all() and (d <= pos[None, :, None] + 1).all(), "d_eps outside 1..t+1"
        # smaller eps never needs less context
        assert (f["dependency/eps_0.01"][...] >= f["dependency/eps_0.1"][...]).all()
        # eps as typed (--eps 0.01,0.1), not rounded to float32
        assert list(f.attrs["eps"]) == [0.01, 0.1] and f["dependency/eps_0.01"].attrs["eps"] == 0.01
        missing = []
        f.visititems(lambda n, o: missing.append(n)
                     if isinstance(o, h5py.Dataset) and "description" not in o.attrs else None)
        assert not missing, "datasets without a description: " + ", ".join(missing)
        texts = f["token_text"].asstr()[...]
        assert len(texts) == T
    r = subprocess.run(["h5dump", "-H", out], capture_output=True, text=True)
    assert r.returncode == 0 and "dependency" in r.stdout, r.stderr
    csv = aha("report", out, "--out-format", "csv").stdout
    assert ",0.01," in csv and "0.00999" not in csv, "the report prints eps as typed"


def test_global_is_plain():
    ids = golden("llama_gqa")["ids"]
    data = tokfile(os.path.join(TMP, "gqa.tok"), [ids, ids[:9]])
    out = os.path.join(TMP, "global.h5")
    aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--route", "global",
        "--window", 4, "--force", "--batch", 5)
    with h5py.File(out, "r") as f:
        full, routed = f["runs/full/nll"][...], f["runs/w4/nll"][...]
        assert np.array_equal(full, routed, equal_nan=True), "routed global != plain forward"
        assert (f["runs/w4/kl"][...] == 0).all()
        a = f["runs/w4"].attrs
        assert a["flops_executed"] == a["flops_full"]
        # and the plain forward is HF's: NLL from the golden logits
        want = nll_from_logits(golden("llama_gqa")["logits"], np.array(ids))
        assert np.allclose(full[: len(ids) - 1], want, atol=1e-4), "full NLL differs from HF"


def test_local_is_hf_window():
    w_gold = GOLD["window"]
    ids = np.array(w_gold["ids"])
    data = tokfile(os.path.join(TMP, "win.tok"), [ids.tolist()])
    for w, logits in w_gold["logits"].items():
        out = os.path.join(TMP, f"local{w}.h5")
        aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--route", "local",
            "--window", w, "--force", "--batch", 7)
        with h5py.File(out, "r") as f:
            got = f[f"runs/w{w}/nll"][...][: len(ids) - 1]
            exec_, full = f[f"runs/w{w}"].attrs["flops_executed"], f[f"runs/w{w}"].attrs["flops_full"]
        want = nll_from_logits(logits, ids)
        err = np.abs(got - want).max()
        assert err < 1e-4, f"w={w}: max |NLL - HF sliding window| = {err:.3g}"
        assert exec_ < full, "a local run must execute fewer attention FLOPs"


def test_oracle_eps0_is_global():
    ids = golden("llama_gqa")["ids"]
    data = tokfile(os.path.join(TMP, "gqa1.tok"), [ids])
    out = os.path.join(TMP, "oracle0.h5")
    aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--route", "oracle",
        "--eps", "0", "--window", 4, "--force")
    with h5py.File(out, "r") as f:
        full, routed = f["runs/full/nll"][...], f["runs/w4/nll"][...]
        gate = f["runs/w4/gate"][...]
    assert np.allclose(full, routed, atol=1e-5, equal_nan=True), "oracle at eps 0 != global"
    assert gate[:, 4:, :].all(), "eps 0: every token past the window must be global"


def test_smollm2_deps():
    g = GOLD["smollm2"]
    data = tokfile(os.path.join(TMP, "smol.tok"), [g["ids"]])
    out = os.path.join(TMP, "smol.h5")
    aha("record", SMOL, data, "-o", out, "--force", "--eps", ",".join(map(str, g["eps"])),
        "--windows", "16,64", "--mass")
    with h5py.File(out, "r") as f:
        deps = [f["dependency/eps_%g" % e][...] for e in g["eps"]]
        far = {w: f[f"mass_far/w_{w}"][...].astype(np.float64) for w in (16, 64)}
        assert not f["mass_sinks"][...].any(), "no sinks: no sink mass"
    for tr in g["triples"]:
        # the far mass of HF's probabilities is above eps exactly where HF's d_eps > w
        # (float16 storage: away from eps by more than its rounding)
        for w in (16, 64):
            fw = far[w][tr["layer"], tr["token"], tr["head"]]
            for e, d in zip(g["eps"], tr["d"]):
                if abs(fw - e) > 2e-3 * max(e, fw):
                    assert (fw > e) == (d > w), f"{tr}: mass_far/w_{w} {fw} vs HF's d_eps {d} at eps {e}"
    check_deps(deps, g["triples"])


def test_sweep():
    # values, against what h5py reads back and independent figures: HF's NLL for the full run; per
    # run, the FLOPs that its decisions imply; layer 0's oracle decisions are d_eps > w of the full
    # run (its input is the same); a window past the longest document changes nothing
    ids = golden("llama_gqa")["ids"]
    data = tokfile(os.path.join(TMP, "sweep.tok"), [ids, ids[::-1]])
    out = os.path.join(TMP, "sweep.h5")
    windows = (2, 4, 8, 64)  # 64 > 24 tokens a document
    r = aha("sweep", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--windows", ",".join(map(str, windows)),
            "--route", "oracle", "--force")
    # the summary names what it counts (all decisions, the default; then t >= w), the eps, sinks and ctx
    # (the model's trained context, 128, by default), and that an oracle run's executed FLOPs leave out
    # the full pass it needs first
    lines = r.stdout.splitlines()
    head = "fraction global, oracle (eps 0.01, sinks 0, ctx 128), "
    got = {l[len(head):].split(":")[0]: l.split(":")[1].split() for l in lines if l.startswith(head)}
    assert set(got) == {"all decisions", "decisions with t >= w"}, r.stdout
    assert all("with the full pass the oracle needs first" in l for l in lines if l.startswith("routed ")), r.stdout
    with h5py.File(out, "r") as f:
        assert sorted(f["runs"].keys()) == ["full", "w2", "w4", "w64", "w8"]
        assert attr_str(f.attrs["mode"]) == "sweep"
        full = f["runs/full/nll"][...]
        d = f["dependency/eps_0.01"][...]  # the first eps drives the oracle
        keys = f["position"][...].astype(np.int64) + 1  # keys full attention reads per token
        L, T, H = d.shape
        per_key = 4 * int(f.attrs["head_dim"])  # QK and PV multiply-adds per key
        last = f["doc_offsets"][1:] - 1  # each document's last token: no next token
        want = nll_from_logits(golden("llama_gqa")["logits"], np.array(ids))
        assert np.allclose(full[: len(ids) - 1], want, atol=1e-4), "full NLL differs from HF"
        assert np.isnan(full[last]).all() and np.isfinite(np.delete(full, last)).all()
        flops_full = per_key * L * H * keys.sum()
        assert f["runs/full"].attrs["flops_full"] == f["runs/full"].attrs["flops_executed"] == flops_full
        # the summary's oracle fractions: "w2 0.9167 w4 ..." from the counters, not from the file
        oracle = dict(zip(got["all decisions"][::2], map(float, got["all decisions"][1::2])))
        past = dict(zip(got["decisions with t >= w"][::2], got["decisions with t >= w"][1::2]))
        pos = f["position"][...]
        frac = []
        for w in windows:
            run = f[f"runs/w{w}"]
            nll, kl, gate = run["nll"][...], run["kl"][...], run["gate"][...].astype(bool)
            assert attr_str(run.attrs["policy"]) == "oracle" and run.attrs["window"] == w
            assert gate.shape == (L, T, H) and nll.shape == kl.shape == (T,)
            assert np.array_equal(gate[0], d[0] > w), f"w{w}: layer 0 decisions != d_eps > w"
            assert abs(oracle[f"w{w}"] - (d > w).mean()) < 5.1e-5, (w, oracle, (d > w).mean())
            assert past[f"w{w}"] == ("%.4f" % (d[:, pos >= w] > w).mean() if (pos >= w).any() else "-"), (w, past)
            executed = per_key * np.where(gate, keys[None, :, None], np.minimum(w, keys)[None, :, None]).sum()
            assert run.attrs["flops_full"] == flops_full and run.attrs["flops_executed"] == executed, \
                (w, run.attrs["flops_executed"], executed)
            assert np.isnan(nll[last]).all() and (kl >= 0).all()
            # the summary line, to its printed digits, from what the file holds
            line = re.search(rf"routed w{w} +oracle: ppl (\S+) \(full (\S+),.*mean KL (\S+), global \(all decisions\) (\S+),",
                             r.stdout)
            assert line, r.stdout
            got = [float(x) for x in line.groups()]
            want = [np.exp(np.nanmean(nll.astype(np.float64))), np.exp(np.nanmean(full.astype(np.float64))),
                    kl.astype(np.float64).mean(), gate.mean()]
            assert np.allclose(got, want, rtol=0, atol=[5.1e-5, 5.1e-5, 5.1e-6, 5.1e-5]), (line.group(0), want)
            frac.append(gate.mean())
        assert frac == sorted(frac, reverse=True) and frac[0] > frac[-1], f"global fraction must fall with w: {frac}"
        # w = 64 covers every document: no decision global, every key read, the full run's numbers
        run = f["runs/w64"]
        assert not run["gate"][...].any() and run.attrs["flops_executed"] == flops_full
        assert np.allclose(run["nll"][...], full, atol=1e-5, equal_nan=True) and run["kl"][...].max() < 1e-6


def test_refuse_overwrite():
    ids = golden("llama_gqa")["ids"]
    data = tokfile(os.path.join(TMP, "ow.tok"), [ids])
    out = os.path.join(TMP, "ow.h5")
    aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--force")
    before = open(out, "rb").read()
    r = aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, ok=False)
    assert r.returncode == 1 and out in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert open(out, "rb").read() == before, "an existing trace was modified"


def test_bad_data():
    empty = os.path.join(TMP, "empty.jsonl")
    open(empty, "w").close()
    out = os.path.join(TMP, "never.h5")
    r = aha("record", SMOL, empty, "-o", out, ok=False)
    assert r.returncode == 1 and "empty.jsonl" in r.stderr, r.stderr
    assert not os.path.exists(out), "a failed start left a file"
    bad = os.path.join(TMP, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"text": "hello there"}\n{"text": \n{"text": "general kenobi"}\n')
    partial = os.path.join(TMP, "partial.h5")
    r = aha("record", SMOL, bad, "-o", partial, ok=False)
    assert r.returncode == 1 and "bad.jsonl:2" in r.stderr, r.stderr
    # the dataset is read whole (its fingerprint) before the trace exists: a bad line leaves no file
    assert not os.path.exists(partial) and not os.path.exists(partial + ".parts"), "a failed start left a file"
    r = aha("record", SMOL, bad, "-o", out, "--skip-bad", "--quiet")
    assert "bad.jsonl:2" in r.stderr
    with h5py.File(out, "r") as f:
        assert len(f["doc_offsets"]) == 3, "the two good documents are recorded"
        assert f.attrs["complete"] == 1
        assert list(f["doc_index"][...]) == [0, 1], "a line that does not parse is no document"
    # a document skipped for a bad token id is one: its number stays taken (doc_index)
    toks = tokfile(os.path.join(TMP, "bad_id.tok"), [[1, 2, 3], [99999], [4, 5, 6]])
    r = aha("record", os.path.join(TINY, "llama_gqa"), toks, "-o", out, "--skip-bad", "--quiet", "--force",
            "--windows", 4, "--ctx", 32)
    assert "out of range" in r.stderr, r.stderr
    with h5py.File(out, "r") as f:
        assert list(f["doc_index"][...]) == [0, 2], f["doc_index"][...]


def test_kill_and_resume():
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 128, size=int(rng.integers(20, 60))).tolist() for _ in range(3000)]
    data = tokfile(os.path.join(TMP, "many.tok"), docs)
    model = os.path.join(TINY, "llama_gqa")
    ref = os.path.join(TMP, "ref.h5")
    routed = ["--route", "random:0.3", "--window", "4"]  # decisions seeded by the document's index
    # the uninterrupted reference records meanwhile (its own file): it is needed only at the end
    ref_err = open(os.path.join(TMP, "ref.err"), "w+")
    ref_run = subprocess.Popen([AHA, "record", model, data, "-o", ref, "--force", "--max-docs", "600", "--quiet", *routed],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=ref_err)
    out = os.path.join(TMP, "killed.h5")
    n = 0
    for attempt, extra in enumerate((0.0, 0.13, 0.29)):
        args = ["record", model, data, "-o", out, "--max-docs", "600", "--quiet", *routed]
        args += ["--resume"] if attempt else ["--force"]
        # each run (a resume too) is killed mid-write, after it made documents durable
        n = kill_mid_write(args, out, past=n, total=600, extra=extra)
        with h5py.File(out, "r") as f:  # a plain open, as any user would
            offs = f["doc_offsets"][...]
            n = len(offs) - 1
            assert f["tokens"].shape[0] == offs[-1] == f["dependency/eps_0.01"].shape[1]
            assert n == f.attrs["n_docs"], (n, f.attrs["n_docs"])
            assert f["tokens"][...].tolist() == sum(docs[:n], []), "completed documents are intact"
    aha("record", model, data, "-o", out, "--max-docs", 600, "--resume", "--quiet", *routed)
    assert ref_run.wait() == 0, f"the reference record: exit {ref_run.returncode}: {open(ref_err.name).read()}"
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        for key in ("tokens", "doc_offsets", "dependency/eps_0.01", "runs/full/nll", "runs/w4/gate", "runs/w4/nll"):
            assert np.array_equal(f[key][...], g[key][...], equal_nan=True), key + " differs after resume"


def test_random_and_heads_routers():
    rng = np.random.default_rng(11)
    data = tokfile(os.path.join(TMP, "rand.tok"), [rng.integers(0, 128, 200).tolist()])
    model = os.path.join(TINY, "llama_gqa")
    gates = []
    for seed in (5, 5, 6):
        out = os.path.join(TMP, f"rand{len(gates)}.h5")
        aha("record", model, data, "-o", out, "--route", "random:0.3", "--seed", seed, "--force", "--window", 8)
        with h5py.File(out, "r") as f:
            gates.append(f["runs/w8/gate"][...])
    assert np.array_equal(gates[0], gates[1]), "the same seed must give the same decisions"
    assert not np.array_equal(gates[0], gates[2]), "another seed must give other decisions"
    assert abs(gates[0].mean() - 0.3) < 0.04, f"random:0.3 gave {gates[0].mean():.3f} global"
    heads = os.path.join(TMP, "heads.txt")
    with open(heads, "w") as f:
        f.write("# top heads\n0 1\n1 3\n")
    out = os.path.join(TMP, "heads.h5")
    aha("record", model, data, "-o", out, "--route", "heads:" + heads, "--force", "--window", 8)
    with h5py.File(out, "r") as f:
        g = f["runs/w8/gate"][...]
    want = np.zeros_like(g)
    want[0, :, 1] = want[1, :, 3] = 1
    assert np.array_equal(g, want), "heads:FILE must route exactly the listed heads globally"
    with open(heads, "a") as f:
        f.write("2 0\n")
    r = aha("record", model, data, "-o", out, "--route", "heads:" + heads, "--force", ok=False)
    assert r.returncode == 1 and "heads.txt:4: layer 2 head 0 out of range" in r.stderr, r.stderr
    r = aha("record", model, data, "-o", out, "--route", "learned", "--force", ok=False)
    assert r.returncode == 1 and "no AHA router" in r.stderr, r.stderr


def test_full_disk():
    ids = np.random.default_rng(2).integers(0, 128, 60).tolist()
    data = tokfile(os.path.join(TMP, "disk.tok"), [ids] * 400)
    out = os.path.join(TMP, "disk.h5")
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    r = subprocess.run([AHA, "record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--quiet"],
                       capture_output=True, text=True, cwd=ROOT, preexec_fn=limit)
    assert r.returncode == 1, f"exit {r.returncode}: {r.stderr}"
    assert len(r.stderr.strip().splitlines()) == 1 and "disk.h5" in r.stderr, r.stderr
    with h5py.File(out, "r") as f:  # what was written before the disk filled stays readable
        assert f.attrs["complete"] == 0
        n = f.attrs["n_docs"]
        assert f["tokens"].shape[0] == 60 * n and n < 400


def test_tokenizer_config():
    # an HF folder: tiny llama weights (vocab 512), the tiny qwen2 tokenizer, and
    # tokenizer_config.json naming the special tokens
    dst = os.path.join(TMP, "qwen_tok_model")
    tok = tok_model(dst, {"bos_token": "<|im_start|>", "add_bos_token": True, "eos_token": "<|im_end|>"})
    ids = {t["content"]: t["id"] for t in tok["added_tokens"]}
    info = aha("info", dst).stdout
    assert "bos %d, eos %d, add_bos yes" % (ids["<|im_start|>"], ids["<|im_end|>"]) in info, info
    # record puts the BOS first
    text = os.path.join(TMP, "hello.txt")
    open(text, "w").write("hello world")
    out = os.path.join(TMP, "bos.h5")
    aha("record", dst, text, "-o", out, "--force", "--quiet", "--data-format", "text", "--windows", "2")
    with h5py.File(out, "r") as f:
        assert f["tokens"][0] == ids["<|im_start|>"], f["tokens"][...]
        assert f.attrs["bos"] == ids["<|im_start|>"], f.attrs["bos"]  # the trace says a BOS was added
    # token files are read as given: no BOS, and the trace says so
    aha("record", dst, tokfile(os.path.join(TMP, "bos.tok"), [[5, 6, 7]]), "-o", out, "--force", "--quiet",
        "--windows", "2")
    with h5py.File(out, "r") as f:
        assert f.attrs["bos"] == -1 and list(f["tokens"][...]) == [5, 6, 7], (f.attrs["bos"], f["tokens"][...])
    # a bad one: the commands that need text say so, naming the file
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|nope|>"}, f)
    r = aha("generate", dst, "hi", ok=False)
    assert r.returncode != 0 and "tokenizer_config.json: eos_token '<|nope|>' is not in the vocabulary" in r.stderr, r.stderr


def test_shards():
    rng = np.random.default_rng(21)
    docs = [rng.integers(0, 128, size=n).tolist() for n in (70, 25, 90, 40, 33)]
    data = tokfile(os.path.join(TMP, "shard.tok"), docs)
    model = os.path.join(TINY, "llama_gqa")
    common = ["--route", "random:0.3", "--window", 4, "--ctx", 32, "--force", "--quiet", "--mass"]
    whole = os.path.join(TMP, "whole.h5")
    aha("record", model, data, "-o", whole, *common)
    parts = [os.path.join(TMP, f"shard{i}.h5") for i in range(2)]
    for i, p in enumerate(parts):
        aha("record", model, data, "-o", p, "--shard", f"{i}/2", *common)

    def contexts(path):  # (tokens, d_eps, decisions) per context, in order
        with h5py.File(path, "r") as f:
            o = f["doc_offsets"][...]
            dep, gate, tok = f["dependency/eps_0.01"][...], f["runs/w4/gate"][...], f["tokens"][...]
            return [(tok[a:b].tolist(), dep[:, a:b], gate[:, a:b]) for a, b in zip(o[:-1], o[1:])], attr_str(f.attrs["shard"])
    ctx, shard = contexts(whole)
    assert shard == ""
    per_doc = [-(-len(d) // 32) for d in docs]  # contexts of each document
    starts = np.concatenate([[0], np.cumsum(per_doc)])
    for i, p in enumerate(parts):
        got, shard = contexts(p)
        assert shard == f"{i}/2", shard
        want = [ctx[c] for d in range(i, len(docs), 2) for c in range(starts[d], starts[d + 1])]
        assert len(got) == len(want), (len(got), len(want))
        for (ta, da, ga), (tb, db, gb) in zip(got, want):
            assert ta == tb and np.array_equal(da, db), "a shard's document differs from the whole run's"
            assert np.array_equal(ga, gb), "random decisions depend on the shard"
    # the shards together report what the whole run does
    a = json.loads(aha("report", whole, "--out-format", "json").stdout)["traces"][0]
    b = json.loads(aha("report", *parts, "--out-format", "json").stdout)["traces"][0]
    assert a["routers"][0]["windows"][0]["all"] == b["routers"][0]["windows"][0]["all"]
    assert a["runs"][1]["global_all"] == b["runs"][1]["global_all"]
    r = aha("record", model, data, "-o", parts[0], "--shard", "2/2", "--force", ok=False)
    assert r.returncode == 1 and "--shard: '2/2' is not I/N with 0 <= I < N" in r.stderr, r.stderr
    for i, p in enumerate(parts):  # each context's document number in the dataset
        with h5py.File(p, "r") as f:
            want = [d for d in range(i, len(docs), 2) for _ in range(per_doc[d])]
            assert list(f["doc_index"][...]) == want, (i, f["doc_index"][...])
    with h5py.File(whole, "r") as f:
        assert list(f["doc_index"][...]) == [d for d in range(len(docs)) for _ in range(per_doc[d])]
    # aha merge: the whole run's trace itself, documents in the dataset's order, whatever the order given
    merged = os.path.join(TMP, "merged.h5")
    assert "merged 2 traces" in aha("merge", parts[1], parts[0], "-o", merged, "--force").stdout
    assert_same_trace(whole, merged)
    # a document in two traces is refused, naming both, though their shard attributes say otherwise
    relabelled = os.path.join(TMP, "relabelled.h5")
    shutil.copy(parts[0], relabelled)
    with h5py.File(relabelled, "r+") as f:
        f.attrs["shard"] = "1/2"
    r = aha("merge", parts[0], relabelled, "-o", os.path.join(TMP, "bad.h5"), ok=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and f"{parts[0]} and {relabelled} both hold document 0" in r.stderr, r.stderr
    # a whole trace without doc_index (an older aha's) reads as 0..n_docs-1: it merges as it is, silently
    old = without_doc_index(whole, os.path.join(TMP, "whole_old.h5"))
    r = aha("merge", old, "-o", os.path.join(TMP, "whole_old_merged.h5"), "--force")
    assert r.stderr == "", r.stderr
    with h5py.File(os.path.join(TMP, "whole_old_merged.h5"), "r") as f:
        assert list(f["doc_index"][...]) == list(range(int(f.attrs["n_docs"]))), f["doc_index"][...]
    c = json.loads(aha("report", merged, "--out-format", "json").stdout)["traces"][0]
    assert same_report(c["runs"], b["runs"]) and same_report(c["long_tail"], b["long_tail"])
    assert c["runs"] == a["runs"] and c["long_tail"] == a["long_tail"], "the merged trace reports other numbers than the whole"
    assert c["mass"]["recorded"] and same_report(c["mass"], b["mass"]) and c["mass"] == a["mass"], \
        "mass split: merged, shards and whole differ"
    nomass = os.path.join(TMP, "shard1_nomass.h5")  # --mass changes what is stored: not the same run
    aha("record", model, data, "-o", nomass, "--shard", "1/2", *[x for x in common if x != "--mass"])
    for cmd in (("report", parts[0], nomass), ("merge", parts[0], nomass, "-o", os.path.join(TMP, "bad.h5"))):
        r = aha(*cmd, ok=False)
        assert r.returncode == 1 and "mass" in r.stderr, (cmd, r.stderr)
    assert c["routers"][0]["windows"][0]["all"] == a["routers"][0]["windows"][0]["all"]
    other = os.path.join(TMP, "other_windows.h5")  # not a shard of the same run
    aha("record", model, data, "-o", other, "--windows", "2,4", *common)
    r = aha("merge", parts[0], other, "-o", os.path.join(TMP, "bad.h5"), ok=False)
    assert r.returncode == 1 and "windows" in r.stderr and not os.path.exists(os.path.join(TMP, "bad.h5")), r.stderr
    # shards combine only as distinct shards of one run; a part of a run says so
    r = aha("report", parts[0], parts[0], ok=False)
    assert r.returncode == 1 and "shard 0/2 is twice among the traces" in r.stderr, r.stderr
    r = aha("report", whole, parts[1], ok=False)
    assert r.returncode == 1 and "holds a whole run" in r.stderr, r.stderr
    r = aha("report", parts[0], "--out-format", "json")
    one = json.loads(r.stdout)["traces"][0]
    assert (one["shards"], one["shards_missing"]) == ("0/2", 1) and "shards 0/2 of a run, 1 missing" in r.stderr
    half = os.path.join(TMP, "half.h5")
    r = aha("merge", parts[0], "-o", half, "--force")
    assert "1 shards of the run missing" in r.stderr, r.stderr
    with h5py.File(half, "r") as f:
        assert attr_str(f.attrs["shard"]) == "0/2", f.attrs["shard"]  # not "": it is not the whole run
    with h5py.File(merged, "r") as f:
        assert attr_str(f.attrs["shard"]) == "", f.attrs["shard"]
    both = json.loads(aha("report", half, parts[1], "--out-format", "json").stdout)["traces"][0]
    assert both["shards"] == "" and both["shards_missing"] == 0 and same_report(both["runs"], b["runs"])
    aha("merge", parts[1], half, "-o", merged, "--force")  # a merge of a merge: still the whole trace
    assert_same_trace(whole, merged)
    # --max-tokens bounds the whole run: the shards record exactly its contexts (150 of 258 tokens)
    limit = ["--max-tokens", 150]
    aha("record", model, data, "-o", whole, *common, *limit)
    for i, p in enumerate(parts):
        aha("record", model, data, "-o", p, "--shard", f"{i}/2", *common, *limit)
    whole_ctx = contexts(whole)[0]
    assert sum(len(c[0]) for c in whole_ctx) == 150, sum(len(c[0]) for c in whole_ctx)
    shard_ctx = [c for p in parts for c in contexts(p)[0]]
    assert sorted(c[0] for c in shard_ctx) == sorted(c[0] for c in whole_ctx), "the shards are not the whole run"
    aha("merge", *parts, "-o", merged, "--force")
    assert_same_trace(whole, merged)


def test_resume_settings():
    # A run stopped by a bad document leaves an unfinished trace. A resume
    # that would record other numbers is refused, naming the setting; one with
    # the same settings finishes the run exactly as an uninterrupted run does,
    # --max-tokens counting what the first run recorded.
    rng = np.random.default_rng(8)
    docs = [rng.integers(0, 100, size=n).tolist() for n in (40, 40)] + [[5, 10**6, 7]] + \
           [rng.integers(0, 100, size=n).tolist() for n in (70, 30)]
    data = tokfile(os.path.join(TMP, "bad_mid.tok"), docs)
    model = os.path.join(TINY, "llama_gqa")
    base = ["--max-tokens", 100, "--ctx", 32, "--route", "random:0.5", "--window", 4, "--quiet"]
    out, ref = os.path.join(TMP, "stopped.h5"), os.path.join(TMP, "unstopped.h5")
    r = aha("record", model, data, "-o", out, "--force", *base, ok=False)
    assert r.returncode == 1 and "token id 1000000 out of range" in r.stderr, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] == 0 and f.attrs["n_tokens"] == 80, dict(f.attrs)
        assert (f.attrs["ctx"], f.attrs["max_tokens"], f.attrs["seed"]) == (32, 100, 0)
    for flag, value in (("--ctx", 64), ("--max-tokens", 200), ("--seed", 3), ("--batch", 16),
                        ("--max-docs", 4), ("--data-format", "tokens"), ("--weights", "f32"), ("--tau", 0.7)):
        args = [a for a in base]
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
        r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", *args, ok=False)
        # the flag by its name, both values as typed (--ctx 32 was stored as the run's ctx)
        was = {"--ctx": 32, "--max-tokens": 100, "--seed": 0, "--batch": 256, "--max-docs": 0, "--data-format": "auto",
               "--weights": "stored", "--tau": 0.5}[flag]
        want = f"cannot resume: {flag} differs (trace: {was}; now: {value})"
        assert r.returncode == 1 and want in r.stderr, (flag, r.stderr)
    r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", *base, "--mass", ok=False)
    assert r.returncode == 1 and "cannot resume: --mass differs (trace: no --mass; now: --mass)" in r.stderr, r.stderr
    # and a run stopped with --mass resumes only with it, to the unstopped run's mass split
    out_m, ref_m = os.path.join(TMP, "stopped_mass.h5"), os.path.join(TMP, "unstopped_mass.h5")
    aha("record", model, data, "-o", out_m, "--force", *base, "--mass", ok=False)
    r = aha("record", model, data, "-o", out_m, "--resume", "--skip-bad", *base, ok=False)
    assert r.returncode == 1 and "cannot resume: --mass differs (trace: --mass; now: no --mass)" in r.stderr, r.stderr
    aha("record", model, data, "-o", out_m, "--resume", "--skip-bad", *base, "--mass")
    aha("record", model, data, "-o", ref_m, "--force", "--skip-bad", *base, "--mass")
    with h5py.File(out_m, "r") as f, h5py.File(ref_m, "r") as g:
        assert f.attrs["complete"] == 1 and f.attrs["mass"] == 1
        for key in ("mass_sinks", "mass_far/w_16", "mass_far/w_1024"):
            assert np.array_equal(f[key][...], g[key][...]), key + " differs after resume"
    aha("record", model, data, "-o", out, "--resume", "--skip-bad", *base)
    aha("record", model, data, "-o", ref, "--force", "--skip-bad", *base)
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as g:
        assert f.attrs["complete"] == 1 and f.attrs["n_tokens"] == 100, f.attrs["n_tokens"]
        for key in ("tokens", "doc_offsets", "dependency/eps_0.01", "runs/w4/gate", "runs/w4/nll"):
            assert np.array_equal(f[key][...], g[key][...], equal_nan=True), key + " differs after resume"


def test_werr_wide_heads():
    # window errors take head_dim <= 512 (the CPU kernel's accumulators): a wider model gets one
    # clear line instead of a stack overflow, and records without --werr
    src, dst = os.path.join(TINY, "llama_gqa"), os.path.join(TMP, "wide_heads")
    os.makedirs(dst, exist_ok=True)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg.update(head_dim=520, num_attention_heads=1, num_key_value_heads=1)
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    rng = np.random.default_rng(5)
    shape = {"q_proj": [520, 64], "k_proj": [520, 64], "v_proj": [520, 64], "o_proj": [64, 520]}
    hdr = safetensors_header(os.path.join(src, "model.safetensors"))
    write_safetensors(os.path.join(dst, "model.safetensors"),
                      {k: rng.standard_normal(shape.get(k.split(".")[-2], v["shape"])).astype(np.float32) * 0.1
                       for k, v in hdr.items() if k != "__metadata__"})
    data = tokfile(os.path.join(TMP, "wide.tok"), [list(range(1, 30))])
    out = os.path.join(TMP, "wide.h5")
    r = aha("record", dst, data, "-o", out, "--werr", "--windows", "4,8", "--force", ok=False)
    assert r.returncode == 1 and "head_dim <= 512; this model's is 520" in r.stderr, r.stderr
    aha("record", dst, data, "-o", out, "--windows", "4,8", "--force", "--quiet")
    with h5py.File(out, "r") as f:
        assert f.attrs["head_dim"] == 520 and f["dependency/eps_0.01"].shape == (2, 29, 1)


def test_ctx_bounds():
    # --ctx past the model's trained context (128 in the tiny config): one line naming both, no file
    ids = golden("llama_gqa")["ids"]
    data = tokfile(os.path.join(TMP, "ctx.tok"), [list(ids) * 30])  # longer than 128 tokens
    out = os.path.join(TMP, "ctx.h5")
    model = os.path.join(TINY, "llama_gqa")
    r = aha("record", model, data, "-o", out, "--ctx", "10000000", ok=False)
    assert r.returncode == 1 and not os.path.exists(out), r
    assert r.stderr.strip() == f"aha: {model}: a context of 10000000 tokens exceeds the model's trained " \
                               "context (128 tokens); use --ctx 128 or less", r.stderr
    r = aha("ppl", SMOL, os.path.join(ROOT, "README.md"), "--ctx=9000", ok=False)
    assert r.returncode == 1 and "exceeds the model's trained context (8192 tokens)" in r.stderr, r.stderr
    # the default: the model's context (at most 2048), stored in the trace
    aha("record", model, data, "-o", out, "--quiet", "--windows", "4")
    with h5py.File(out, "r") as f:
        assert f.attrs["ctx"] == 128, f.attrs["ctx"]
        offs = f["doc_offsets"][...]
        assert (np.diff(offs) <= 128).all() and offs[-1] == len(ids) * 30, offs


def test_ppl_is_record():
    # one definition of perplexity: aha ppl of a file at a ctx is aha record's full-run perplexity of
    # that file at that ctx (every token but the first scored once, a context's last token predicting
    # the next context's first), over the whole file and cut by --max-tokens; printed to 4 decimals
    text = os.path.join(ROOT, "datasets/corpora/prose/kjv-philemon.txt")
    for extra in ([], ["--max-tokens", "150"]):
        out = os.path.join(TMP, "ppl_rec.h5")
        aha("record", SMOL, text, "-o", out, "--ctx", 64, "--windows", 16, "--quiet", "--force", *extra)
        with h5py.File(out, "r") as f:
            nll = f["runs/full/nll"][...].astype(np.float64)
            n = len(f["tokens"])
        m = re.match(r"ppl ([0-9.]+)  mean nll [0-9.]+ nats over (\d+) scored tokens \((\d+) tokens, ctx 64\)",
                     aha("ppl", SMOL, text, "--ctx", 64, *extra).stdout)
        assert m and int(m[3]) == n and n > 2 * 64, (m and m[0], n)
        assert int(m[2]) == np.count_nonzero(~np.isnan(nll)), (m[0], np.count_nonzero(~np.isnan(nll)))
        want = np.exp(np.nanmean(nll))
        assert abs(float(m[1]) - want) <= 1e-4 * want, f"{extra}: ppl {m[1]}, record's {want:.4f}"


def test_interrupt():
    # Ctrl-C: record dies of it as before (its completed contexts stay, as after kill -9) and says the command
    # that continues the trace (--force dropped, --resume added, quoted for the shell); that command completes it
    import shlex
    import signal
    rng = np.random.default_rng(5)
    docs = [rng.integers(0, 128, size=40).tolist() for _ in range(400)]
    data = tokfile(os.path.join(TMP, "ctrl_c.tok"), docs)
    out = os.path.join(TMP, "ctrl c.h5")  # a space: the printed command quotes it
    args = [AHA, "record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--force", "--windows", "4", "--quiet"]
    p = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline and not durable_docs(out):
        time.sleep(0.05)
    assert p.poll() is None, "record ended before Ctrl-C"
    p.send_signal(signal.SIGINT)
    err = p.communicate()[1]
    assert p.returncode == -signal.SIGINT, (p.returncode, err)
    lines = err.strip().splitlines()
    assert lines[-2] == f"aha: interrupted: {out} keeps every completed context; continue it with:", err
    again = shlex.split(lines[-1])
    assert again == [a for a in args if a != "--force"] + ["--resume"], again
    subprocess.run(again, cwd=ROOT, check=True, capture_output=True)
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] == 1 and f.attrs["n_docs"] == len(docs), dict(f.attrs)
        assert f["tokens"][...].tolist() == sum(docs, [])


def test_generate_newline():
    # aha generate's text ends with a newline, also when Ctrl-C stops it mid-text
    import signal
    prompt = "Once upon a time"
    p = subprocess.Popen([AHA, "generate", SMOL, prompt, "-n", "2000", "--ctx", "2100"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    got = p.stdout.read(len(prompt) + 8)  # the prompt and some generated text
    p.send_signal(signal.SIGINT)
    got += p.stdout.read()
    p.wait()
    assert p.returncode == -signal.SIGINT and got.startswith(prompt.encode()) and got.endswith(b"\n"), (p.returncode, got)
    got = aha("generate", SMOL, prompt, "-n", 4).stdout
    assert got.startswith(prompt) and got.endswith("\n") and got.count("\n") >= 1, got


def test_read_as():
    # a JSONL with text plus question/answer is GSM8K under auto: said on stderr, in the summary and the trace
    data = os.path.join(TMP, "qa.jsonl")
    with open(data, "w") as f:
        f.write(json.dumps({"text": "plain text here", "question": "What is 2+2?", "answer": "4"}) + "\n")
    out = os.path.join(TMP, "qa.h5")
    r = aha("record", SMOL, data, "-o", out, "--windows", "4", "--eps", "0.1")
    assert f"{data}: read as gsm8k, detected" in r.stderr, r.stderr
    assert f"dataset {data} read as gsm8k (--data-format auto)\n" in r.stdout, r.stdout
    assert "fraction global, oracle (eps 0.1, sinks 0, ctx 2048), all decisions: w4 " in r.stdout, r.stdout
    with h5py.File(out, "r") as f:
        assert attr_str(f.attrs["dataset_read_as"]) == "gsm8k" and attr_str(f.attrs["dataset_format"]) == "auto"
        assert f.attrs["bos"] == -1  # SmolLM2's tokenizer adds none
        assert "Question:" in "".join(t.decode() if isinstance(t, bytes) else t for t in f["token_text"][...])
    r = aha("record", SMOL, data, "-o", out, "--windows", "4", "--eps", "0.1", "--force", "--data-format", "jsonl")
    assert "detected" not in r.stderr and f"read as jsonl (--data-format jsonl)" in r.stdout, (r.stdout, r.stderr)
    with h5py.File(out, "r") as f:
        assert attr_str(f.attrs["dataset_read_as"]) == "jsonl"
    # a folder of two kinds: both named
    folder = os.path.join(TMP, "mixed")
    os.makedirs(folder, exist_ok=True)
    tokfile(os.path.join(folder, "a.tok"), [[1, 2, 3]])
    open(os.path.join(folder, "b.txt"), "w").write("some text")
    aha("record", SMOL, folder, "-o", out, "--windows", "4", "--eps", "0.1", "--force", "--quiet")
    with h5py.File(out, "r") as f:
        assert attr_str(f.attrs["dataset_read_as"]) == "text+tokens", f.attrs["dataset_read_as"]


def test_exists_and_resume_hints():
    ids = golden("llama_gqa")["ids"]
    model = os.path.join(TINY, "llama_gqa")
    data = tokfile(os.path.join(TMP, "hint.tok"), [ids, ids, ids])
    out = os.path.join(TMP, "hint.h5")
    # --resume on a trace that does not exist yet starts it, and says so
    r = aha("record", model, data, "-o", out, "--resume", "--windows", "4")
    assert f"{out} does not exist yet: starting it" in r.stderr, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] == 1 and f.attrs["n_docs"] == 3
    r = aha("record", model, data, "-o", out, ok=False)
    assert r.returncode == 1 and r.stderr.strip() == f"aha: {out}: exists and is complete (--force overwrites it)", r.stderr
    # an unfinished one (a bad token id stops the run after two documents): the hint names --resume
    bad = tokfile(os.path.join(TMP, "hint_bad.tok"), [ids, ids, [99999]])
    r = aha("record", model, bad, "-o", out, "--force", "--quiet", ok=False)
    assert r.returncode == 1 and "out of range" in r.stderr, r.stderr
    r = aha("record", model, bad, "-o", out, ok=False)
    assert r.stderr.strip() == f"aha: {out}: exists, unfinished after 2 contexts (--resume continues it, " \
                               "--force starts over)", r.stderr
    # a model without a tokenizer on text: refused before any file exists
    text = os.path.join(TMP, "notok.txt")
    open(text, "w").write("hello")
    out2 = os.path.join(TMP, "notok.h5")
    r = aha("record", model, text, "-o", out2, ok=False)
    assert r.returncode == 1 and "no tokenizer" in r.stderr and not os.path.exists(out2) \
        and not os.path.exists(out2 + ".parts"), (r.stderr, os.listdir(TMP))


def run_pty(cols, args):
    """stderr of a command run on a terminal of cols columns."""
    import fcntl, pty, termios
    m, s = pty.openpty()
    fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    p = subprocess.Popen([AHA, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=s, cwd=ROOT,
                         env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    os.close(s)
    out = b""
    while True:
        try:
            b = os.read(m, 4096)
        except OSError:
            break
        if not b:
            break
        out += b
    p.wait()
    os.close(m)
    return p.returncode, out.decode()


def test_progress_width():
    from concurrent.futures import ThreadPoolExecutor
    data = tokfile(os.path.join(TMP, "bar.tok"), [list(range(1, 100))] * 6)
    widths = (80, 50, 30)
    with ThreadPoolExecutor(len(widths)) as pool:  # at once: each its own terminal and trace
        runs = list(pool.map(lambda cols: run_pty(cols, ["record", SMOL, data, "-o", os.path.join(TMP, f"bar{cols}.h5"),
                                                         "--force", "--windows", "4", "--eps", "0.1", "--ctx", "32"]),
                             widths))
    for cols, (rc, err) in zip(widths, runs):
        lines = [x for x in err.replace("\r\n", "\n").replace("\n", "\r").split("\r") if x.strip()]
        assert rc == 0 and any(" tokens" in x for x in lines), (rc, err)
        assert max(len(x) for x in lines) <= cols - 1, (cols, [len(x) for x in lines], lines[-1])


def test_threads_bound():
    # --threads 1: the main thread and the writer, no OpenMP team anywhere (the
    # writer's compression used all cores before); OpenMP waits passively unless asked otherwise
    # 3 documents of 199 tokens: with the writer's team unbounded (no omp_set_num_threads in
    # record_ctx.c's write_main) this sees 3 threads, as with 12 documents, in a quarter of the time
    data = tokfile(os.path.join(TMP, "thr.tok"), [list(range(1, 200))] * 3)
    procs = {}
    for policy in (None, "active"):  # both at once: one thread each, each its own trace
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)
        if policy:
            env["OMP_WAIT_POLICY"] = policy
        procs[policy] = subprocess.Popen([AHA, "record", SMOL, data, "-o", os.path.join(TMP, f"thr_{policy}.h5"), "--force",
                                          "--quiet", "--threads", "1", "--ctx", "64", "--windows", "4", "--eps", "0.1"],
                                         stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    most, environ = dict.fromkeys(procs, 0), dict.fromkeys(procs, b"")
    while any(p.poll() is None for p in procs.values()):
        for policy, p in procs.items():
            if p.returncode is not None:  # reaped: its pid may be another process's now
                continue
            try:
                most[policy] = max(most[policy], len(os.listdir(f"/proc/{p.pid}/task")))
                environ[policy] = open(f"/proc/{p.pid}/environ", "rb").read() or environ[policy]
            except (FileNotFoundError, ProcessLookupError):
                pass
        time.sleep(0.002)
    for policy, p in procs.items():
        assert p.returncode == 0 and 1 <= most[policy] <= 2, (policy, p.returncode, most[policy])
        want = b"OMP_WAIT_POLICY=" + (policy or "passive").encode()
        assert want in environ[policy].split(b"\0"), environ[policy].split(b"\0")[-5:]


def test_blas_core():
    # OpenBLAS 0.3.21 falls back to Prescott's SSE3 kernels on CPUs it does not
    # know (Xeon Emerald Rapids: prefill 4x slower); ./aha asks for the kernels
    # this CPU runs and starts again (common/blas_core.h), unless the user chose.
    flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
    def core(**set_env):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        env.update(OPENBLAS_VERBOSE="2", **set_env)
        r = subprocess.run([AHA, "--version"], capture_output=True, text=True, env=env, cwd=ROOT)
        assert r.returncode == 0 and "Core: " in r.stderr, r.stderr
        return r.stderr.split("Core: ")[-1].split()[0]  # the last image's
    if "avx2" in flags and "fma" in flags:
        assert core().lower() in ("haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"), core()
    assert core(OPENBLAS_CORETYPE="Haswell") == "Haswell"


def test_layer_window():
    # Each layer's native window is recorded (layer_window, 0 = full causal:
    # every tiny model), and resume and merge refuse a trace whose windows
    # differ. Until a model with native windows is in the fixtures, the trace's
    # windows are set with h5py (make_native: the attribute, and d_eps / gates
    # as such a layer writes them).
    from ahatest import make_native
    rng = np.random.default_rng(4)
    docs = [rng.integers(0, 100, size=n).tolist() for n in (40, 40)] + [[5, 10**6, 7]] + [rng.integers(0, 100, size=30).tolist()]
    data = tokfile(os.path.join(TMP, "lw.tok"), docs)
    model = os.path.join(TINY, "llama_gqa")
    base = ["--ctx", 32, "--route", "oracle", "--window", 4, "--quiet"]
    whole = os.path.join(TMP, "lw_whole.h5")
    aha("record", model, data, "-o", whole, "--force", "--skip-bad", *base)
    with h5py.File(whole, "r") as f:
        L = int(f.attrs["n_layers"])
        assert list(f.attrs["layer_window"]) == [0] * L and f.attrs["layer_window"].dtype == np.int64, dict(f.attrs)
    assert f"layers         {L}, all global (full causal)" in aha("info", whole).stdout
    # a stopped run whose trace says layer 1 is natively local: the model's all-global windows differ
    out = os.path.join(TMP, "lw_stopped.h5")
    r = aha("record", model, data, "-o", out, "--force", *base, ok=False)
    assert r.returncode == 1 and "out of range" in r.stderr, r.stderr
    lw = [0] * L
    lw[1] = 4
    with h5py.File(out, "r+") as f:
        f.attrs["layer_window"] = np.array(lw, np.int64)
    r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", *base, ok=False)
    want = "cannot resume: layer_window differs (trace: %s; now: %s)" % (",".join(map(str, lw)), ",".join(["0"] * L))
    assert r.returncode == 1 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # a trace from before layer_window (no attribute) is all global: it resumes
    with h5py.File(out, "r+") as f:
        del f.attrs["layer_window"]
    aha("record", model, data, "-o", out, "--resume", "--skip-bad", *base)
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] == 1 and list(f.attrs["layer_window"]) == [0] * L
    # shards with different native windows neither merge nor report together
    parts = [os.path.join(TMP, f"lw_shard{i}.h5") for i in range(2)]
    for i, p in enumerate(parts):
        aha("record", model, data, "-o", p, "--shard", f"{i}/2", "--force", "--skip-bad", *base)
    make_native(parts[1], lw)
    for cmd in (("merge", *parts, "-o", os.path.join(TMP, "lw_merged.h5"), "--force"), ("report", *parts)):
        r = aha(*cmd, ok=False)
        assert r.returncode != 0 and "differ in layer_window" in r.stderr, (cmd[0], r.stderr)
    make_native(parts[0], lw)
    merged = os.path.join(TMP, "lw_merged.h5")
    aha("merge", *parts, "-o", merged, "--force")
    with h5py.File(merged, "r") as f:
        assert list(f.attrs["layer_window"]) == lw
    text = aha("info", merged).stdout
    assert f"layers         {L}, {L - 1} global; natively local (layer_window): 1; the report counts global layers " \
           f"only: {L - 1} of {L}; 1 natively local (window 4) shown apart" in text, text
    j = json.loads(aha("info", merged, "--json").stdout)
    assert j["layers"]["local"] == [1] and j["layers"]["n_global"] == L - 1 and j["attributes"]["layer_window"] == lw
    with h5py.File(merged, "r+") as f:
        f.attrs["layer_window"] = np.zeros(L + 1, np.int64)
    r = aha("report", merged, ok=False)
    assert r.returncode != 0 and f"root attribute layer_window holds {L + 1} values; n_layers is {L}" in r.stderr, r.stderr


GEMMA3 = os.path.join(TINY, "gemma3")  # a tiny Gemma-3 (layers 0-4 natively local, window 6; layer 5 global)


def test_native_windows():
    # A model whose layers run native sliding windows records them (layer_window), and those layers' data are
    # what the window makes them: d_eps at most the window, routed gates 0. The summary and the report count
    # the global layers only (numpy's fractions over them).
    rng = np.random.default_rng(12)
    data = tokfile(os.path.join(TMP, "native.tok"), [rng.integers(0, 128, size=n).tolist() for n in (60, 40, 50)])
    out = os.path.join(TMP, "native.h5")
    r = aha("sweep", GEMMA3, data, "-o", out, "--windows", "2,4,8,16", "--route", "oracle", "--force")
    with h5py.File(out, "r") as f:
        lw = f.attrs["layer_window"]
        d, pos = f["dependency/eps_0.01"][...], f["position"][...]
        gates = {w: f[f"runs/w{w}/gate"][...] for w in (2, 4, 8, 16)}
    g = lw == 0
    assert g.any() and (~g).any(), lw
    for l in np.flatnonzero(~g):
        assert d[l].max() <= lw[l], (l, lw[l], d[l].max())
        assert not any(gt[l].any() for gt in gates.values()), f"layer {l} routed global"
    assert f"fractions below: global layers only: {g.sum()} of {len(lw)}" in r.stdout, r.stdout
    line = [x for x in r.stdout.splitlines() if x.startswith("fraction global, oracle") and "all decisions" in x][0]
    assert line.endswith(" ".join("w%d %.4f" % (w, (d[g] > w).mean()) for w in (2, 4, 8, 16))), line
    rep = json.loads(aha("report", out, "--out-format", "json").stdout)["traces"][0]
    assert [w["all"]["global"] for w in rep["routers"][0]["windows"]] == [int((d[g] > w).sum()) for w in (2, 4, 8, 16)]
    assert [x["layer"] for x in rep["local_layers"]] == np.flatnonzero(~g).tolist()
    assert [rn["global_all"]["global"] for rn in rep["runs"][1:]] == [int(gates[w].sum()) for w in (2, 4, 8, 16)]


check("learned router gates equal HF router logits > 0 (llama + AHA rows)", lambda: test_learned_gates("llama_aha"))
check("learned router gates equal HF router logits > 0 (faolmo)", lambda: test_learned_gates("faolmo"))
check("trace schema, descriptions, d_eps bounds; h5dump reads it", test_observe_schema)
check("routed global equals the plain forward bit for bit", test_global_is_plain)
check("routed local equals HF sliding-window attention (w = 1, 3, 8)", test_local_is_hf_window)
check("oracle at eps 0 equals global", test_oracle_eps0_is_global)
check("SmolLM2 d_eps equal numpy on HF attention probabilities; mass_far (--mass) is above eps exactly where their d_eps > w", test_smollm2_deps)
check("sweep: one routed run per window, global fraction falls with w; the summary names all decisions / t >= w, eps, sinks, ctx and the oracle's full pass", test_sweep)
check("an existing trace is never overwritten without --force", test_refuse_overwrite)
check("bad datasets: clear error, no file; --skip-bad goes on (doc_index counts a document skipped for a bad id)", test_bad_data)
check("SIGKILL at any moment leaves a readable trace; --resume completes it", test_kill_and_resume)
check("--resume refuses other settings (ctx, max-tokens, seed, batch, max-docs, format, weights, tau, mass), naming "
      "each by its flag with both values as typed (--tau 0.7); --max-tokens counts the first run's tokens", test_resume_settings)
check("random:P is seeded and reproducible; heads:FILE routes exactly its heads", test_random_and_heads_routers)
check("a full disk stops the run with one clear error; the trace stays readable", test_full_disk)
check("tokenizer_config.json: its BOS/EOS are used (aha info, record); a bad one is a clear error", test_tokenizer_config)
check("--shard I/N: each shard records its documents exactly as the whole run; together they report the same (mass split "
      "too; with and without --mass refused); merged (any order, a merge of a merge, --max-tokens) they are the whole "
      "trace field by field; a document in two shards is refused; a whole trace without doc_index merges", test_shards)
check("layer_window: recorded per layer; resume and merge refuse a mismatch (one line); a trace without it is all global", test_layer_window)
if os.path.isdir(GEMMA3):
    check("a model with native sliding windows (tiny Gemma-3): layer_window recorded, local layers' d_eps within "
          "their window and gates 0; summary and report count the global layers (numpy)", test_native_windows)
else:
    print(f"SKIP native sliding-window layers end to end: {GEMMA3} is not here (it comes with gemma3 support)")
check("--werr on heads wider than 512: one clear error; without --werr it records", test_werr_wide_heads)
check("--ctx past the model's trained context is refused, naming both; the default is the model's (stored)", test_ctx_bounds)
check("aha ppl of a file at a ctx is aha record's full-run perplexity of it (one definition; whole and --max-tokens)",
      test_ppl_is_record)
check("Ctrl-C during record says the command that continues the trace (--resume), and that command completes it",
      test_interrupt)
check("aha generate ends its text with a newline, also when Ctrl-C stops it", test_generate_newline)
check("what the dataset was read as (a JSONL with question/answer is GSM8K) is said and stored; BOS stored", test_read_as)
check("an existing trace is refused saying complete or unfinished (--resume); --resume starts a missing one; no tokenizer: no file", test_exists_and_resume_hints)
check("the progress bar fits the terminal (80, 50, 30 columns)", test_progress_width)
check("--threads 1 bounds every team (the writer's too); OpenMP waits passively unless the user sets a policy", test_threads_bound)
check("OpenBLAS runs kernels of this CPU's class (AVX2 or better when it has AVX2+FMA), or the user's OPENBLAS_CORETYPE", test_blas_core)
finish()
