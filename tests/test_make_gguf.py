"""scripts/make_7b_gguf.py, the benchmark's 7B-class GGUF writer, at small
dims: the file loads in aha info with the shapes asked for, a record runs on
it with finite numbers, the same seed writes the same bytes, an existing file
is kept, and bad dims are one line. Its --arch olmoe file (stacked Q4_0
experts) is mapped by aha in its stored type: every byte of every tensor
gguf-py reads from it, none converted. The tiny fixture's tokenizer (128 tokens)
keeps it fast (so the record reads token ids); the bench uses SmolLM2's."""
import json
import os
import subprocess
import sys
import tempfile

from ahatest import ROOT, aha, check, finish, tokfile

PY = sys.executable
TOK = os.path.join(ROOT, "tests/fixtures/tiny/llama_gguf/model.gguf")
DIMS = ["--layers", "2", "--dim", "128", "--heads", "4", "--kv-heads", "2", "--ffn", "256", "--ctx", "512"]
tmp = tempfile.mkdtemp(prefix="aha_make_gguf_")


def make(out, *extra):
    return subprocess.run([PY, os.path.join(ROOT, "scripts/make_7b_gguf.py"), "--out", out, "--tokenizer", TOK,
                           *DIMS, *extra], capture_output=True, text=True, cwd=ROOT)


def info_shapes():
    out = os.path.join(tmp, "a.gguf")
    r = make(out)
    assert r.returncode == 0, r.stderr
    info = aha("info", out).stdout
    for want in ["architecture  llama", "layers        2", "hidden        128",
                 "heads         4 query, 2 key/value (GQA 2:1), head_dim 32", "ffn           256 (SwiGLU)",
                 "vocab         128", "context       512", "embeddings    untied", "stored F32+Q4_0"]:
        assert want in info, f"aha info lacks {want!r}:\n{info}"


def record_runs():
    # token ids: the fixture's tokenizer has no pre-tokenizer aha reads text with
    out, text, trace = os.path.join(tmp, "a.gguf"), os.path.join(tmp, "t.tok"), os.path.join(tmp, "t.h5")
    tokfile(text, [[(7 * i + 3) % 128 for i in range(128)]])
    r = aha("record", out, text, "-o", trace, "--ctx", "64", "--max-tokens", "128", "--windows", "8,16")
    assert "recorded 128 tokens in 2 contexts" in r.stdout, r.stdout
    import h5py
    import numpy as np
    with h5py.File(trace, "r") as f:
        nll = f["runs/full/nll"][...]
    nll = nll[~np.isnan(nll)]
    assert len(nll) > 100 and np.isfinite(nll).all() and nll.max() < 50, f"nll {nll.min()}..{nll.max()}"


def same_seed_same_bytes():
    b, c = os.path.join(tmp, "b.gguf"), os.path.join(tmp, "c.gguf")
    for p in (b, c):
        assert make(p, "--type", "Q8_0").returncode == 0
    with open(b, "rb") as f1, open(c, "rb") as f2:
        assert f1.read() == f2.read(), "seed 7 wrote two different files"
    d = os.path.join(tmp, "d.gguf")
    assert make(d, "--type", "Q8_0", "--seed", "8").returncode == 0
    with open(b, "rb") as f1, open(d, "rb") as f2:
        assert f1.read() != f2.read(), "seeds 7 and 8 wrote the same file"
    assert "stored F32+Q8_0" in aha("info", b).stdout


def kept_when_there():
    out = os.path.join(tmp, "a.gguf")
    st = os.stat(out)
    r = make(out, "--seed", "9")
    assert r.returncode == 0 and "exists, kept" in r.stdout, r.stdout + r.stderr
    assert os.stat(out).st_mtime_ns == st.st_mtime_ns and not os.path.exists(out + ".tmp")


def bad_dims():
    r = make(os.path.join(tmp, "e.gguf"), "--heads", "5")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "heads must divide" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(tmp, "e.gguf"))
    for extra in (["--experts", "4"], ["--arch", "olmoe", "--experts", "4", "--top-k", "5"]):
        r = make(os.path.join(tmp, "e.gguf"), *extra)
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "olmoe needs experts" in r.stderr, \
            f"{extra}: {r.stderr}"
        assert not os.path.exists(os.path.join(tmp, "e.gguf"))


def moe_mapped_stored():
    out = os.path.join(tmp, "moe.gguf")
    r = make(out, "--arch", "olmoe", "--experts", "4", "--top-k", "2")
    assert r.returncode == 0, r.stderr
    import gguf
    tensors = gguf.GGUFReader(out).tensors
    experts = [t for t in tensors if "_exps." in t.name]
    assert len(experts) == 6 and {t.tensor_type.name for t in experts} == {"Q4_0"}, [t.name for t in experts]
    total, exp_bytes = sum(int(t.n_bytes) for t in tensors), sum(int(t.n_bytes) for t in experts)
    assert exp_bytes > total / 2, (exp_bytes, total)  # a converted expert tensor cannot hide in the total
    j = json.loads(aha("info", "--json", out).stdout)
    assert j["architecture"] == "olmoe" and j["moe"]["experts"] == 4 and j["moe"]["experts_used"] == 2, j["moe"]
    res = j["resident"]
    assert res == {"weights": "stored", "mapped_bytes": total, "f32_bytes": 0}, f"{res}, gguf-py: {total} bytes"
    # and it runs: a record's NLL finite
    text, trace = os.path.join(tmp, "m.tok"), os.path.join(tmp, "m.h5")
    tokfile(text, [[(5 * i + 1) % 128 for i in range(64)]])
    r = aha("record", out, text, "-o", trace, "--ctx", "64", "--max-tokens", "64", "--windows", "8")
    import h5py
    import numpy as np
    with h5py.File(trace, "r") as f:
        nll = f["runs/full/nll"][...]
    nll = nll[~np.isnan(nll)]
    assert len(nll) > 50 and np.isfinite(nll).all(), f"nll {nll}"


def bench_7b_decides():
    # scripts/bench-7b.sh stops after its probe (DRY_RUN): the decision follows
    # what aha info says it converts, and a converting aha never gets the 7B file.
    if not os.path.exists(os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")):
        print("SKIP make_7b_gguf: bench-7b.sh: models/SmolLM2-135M-Instruct.Q4_1.gguf missing")
        return
    out = os.path.join(tmp, "7b", "big.gguf")
    env = dict(os.environ, DRY_RUN="1", OUT_7B=out)
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts/bench-7b.sh")], capture_output=True, text=True, cwd=ROOT,
                       env=env)
    info = aha("info", os.path.join(tmp, "7b", "probe.Q4_0.gguf")).stdout
    converts = " MiB converted to f32 at load" in info and "(0.0 MiB" not in info
    if converts:
        assert r.returncode == 1 and "not run: this aha converts every weight to f32" in r.stdout, r.stdout + r.stderr
    else:
        assert r.returncode == 0 and "would run" in r.stdout, r.stdout + r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 and not os.path.exists(out), r.stdout


check("make_7b_gguf: small dims load in aha info with their shapes", info_shapes)
check("make_7b_gguf: aha record runs on it, NLL finite", record_runs)
check("make_7b_gguf: the same seed writes the same bytes, another seed others (Q8_0)", same_seed_same_bytes)
check("make_7b_gguf: an existing file is kept", kept_when_there)
check("make_7b_gguf: bad dims (or experts where the arch has none) are one line, no file", bad_dims)
check("make_7b_gguf --arch olmoe: aha maps its Q4_0 expert tensors as stored, 0 bytes converted", moe_mapped_stored)
check("bench-7b.sh: refuses with one line when aha converts to f32 at load, never writing the 7B file", bench_7b_decides)
finish()
