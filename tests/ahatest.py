"""Shared by the Python tests: run ./aha, write token files, and report each
check as a PASS/FAIL line (tests/run.sh counts them)."""
import json
import os
import signal
import struct
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AHA = os.path.join(ROOT, "aha")
_failed = 0


def check(name, fn):
    """Run fn; an assertion or a crash fails the check."""
    global _failed
    try:
        fn()
        print("PASS", name)
    except Exception as e:
        _failed += 1
        print(f"  {type(e).__name__}: {e}")
        print("FAIL", name)
    sys.stdout.flush()


def finish():
    """Exit non-zero when any check failed."""
    sys.exit(1 if _failed else 0)


def aha(*args, ok=True):
    """Run ./aha from the repository root; with ok, a non-zero exit fails."""
    r = subprocess.run([AHA, *map(str, args)], capture_output=True, text=True, cwd=ROOT)
    if ok and r.returncode != 0:
        raise AssertionError(f"aha {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def attr_str(v):
    """A trace's string attribute as str: aha writes fixed-length UTF-8
    strings, which h5py returns as numpy bytes (a format-1 trace's, and those
    h5py wrote, come back as str already). Anything else as it is."""
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else v


def attrs(obj):
    """obj.attrs (a file, group or dataset of a trace) as a dict, strings as str."""
    return {k: attr_str(v) for k, v in obj.attrs.items()}


def durable_docs(trace):
    """Documents an unfinished trace holds now (its committed index), or None
    while there is no index yet."""
    import h5py
    try:
        with h5py.File(trace, "r") as f:
            return int(f.attrs["n_docs"])
    except (OSError, KeyError):
        return None


def make_native(trace, layer_window):
    """Turn a complete trace into one whose layers l with layer_window[l] > 0
    are natively local (what a Gemma-3 / Mistral sliding-window layer
    records), until a model with native windows is in the fixtures: set the
    root attribute layer_window, and make those layers' data what such a layer
    writes -- d_eps at most its window (the keys before it get no attention,
    so no mass lies beyond the window), the learned gate 0 (router logit -1)
    and every routed run's gate 0 (the router decides nothing there)."""
    import h5py
    lw = np.asarray(layer_window, np.int64)
    with h5py.File(trace, "r+") as f:
        assert len(lw) == int(f.attrs["n_layers"]), "one window per layer"
        f.attrs["layer_window"] = lw
        for l in np.flatnonzero(lw):
            for name in f["dependency"]:
                d = f["dependency/" + name]
                d[l] = np.minimum(d[l], lw[l])
            if "gate" in f:
                f["gate"][l] = 0
                f["router_logit"][l] = -1
            for r in f.get("runs", {}):
                if "gate" in f["runs"][r]:
                    f["runs"][r]["gate"][l] = 0
    return trace


def kill_mid_write(args, trace, past, total, extra=0.0, timeout=120):
    """Start ./aha with args (a record writing trace), SIGKILL it once more
    than `past` documents are durable and `extra` seconds more have passed
    (the kill lands wherever the writer is then), and assert that it landed
    mid-write: the process was still running, died of that SIGKILL, and left
    an unfinished trace holding some but not all of its `total` documents.
    Returns how many it holds."""
    import h5py
    p = subprocess.Popen([AHA, *map(str, args)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while p.poll() is None and time.time() < deadline and (durable_docs(trace) or 0) <= past:
        time.sleep(0.05)
    time.sleep(extra)
    running = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert running, f"aha record ended (exit {p.returncode}) before the kill: the kill proved nothing"
    assert p.returncode == -signal.SIGKILL, f"exit {p.returncode}, not the SIGKILL"
    with h5py.File(trace, "r") as f:
        n, complete = int(f.attrs["n_docs"]), int(f.attrs["complete"])
    assert complete == 0, "the killed trace says it is complete"
    assert past < n < total, f"killed with {n} documents durable: want more than {past}, fewer than {total}"
    return n


def tokfile(path, docs):
    """A pre-tokenized dataset (datasets/dataset.h: AHATOK01)."""
    with open(path, "wb") as f:
        f.write(b"AHATOK01" + struct.pack("<Q", len(docs)))
        for d in docs:
            f.write(struct.pack("<I", len(d)) + np.asarray(d, "<i4").tobytes())
    return path


def safetensors_header(path):
    """{name: {dtype, shape, data_offsets}} of a safetensors file (with __metadata__ if any)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def write_safetensors(path, tensors, metadata=None):
    """{name: float32 array} (and {key: string} __metadata__) as a safetensors file."""
    header, blobs, off = ({"__metadata__": metadata} if metadata else {}), [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, "<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def tok_model(dst, tokenizer_config):
    """An HF folder with a tokenizer at dst: the tiny llama's shapes with vocab 512 (random weights), the
    tiny qwen2 tokenizer (480 BPE + added tokens) as tokenizer.json, and tokenizer_config.json holding
    tokenizer_config (a dict). Returns the tokenizer's JSON."""
    src = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
    os.makedirs(dst, exist_ok=True)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["vocab_size"] = 512
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    hdr = safetensors_header(os.path.join(src, "model.safetensors"))
    rng = np.random.default_rng(0)
    write_safetensors(os.path.join(dst, "model.safetensors"),
                      {k: rng.standard_normal([512 if d == 128 else d for d in v["shape"]]).astype(np.float32) * 0.1
                       for k, v in hdr.items() if k != "__metadata__"})
    tok = json.load(open(os.path.join(ROOT, "tests/fixtures/tok_tiny/qwen2.json")))
    json.dump(tok, open(os.path.join(dst, "tokenizer.json"), "w"))
    json.dump(tokenizer_config, open(os.path.join(dst, "tokenizer_config.json"), "w"))
    return tok


def check_deps(deps, triples, max_noisy=5, noise=1e-4):
    """aha's d_eps (deps: one [L, T, H] array per eps) equal the golden triples' (numpy on HF's
    attention probabilities: {"layer", "token", "head", "d": [per eps], "margin"}); a triple
    whose boundary mass is within `noise` of eps sits inside float noise, and at most max_noisy
    of those may differ. Returns how many differed."""
    noisy = 0
    for tr in triples:
        got = [int(d[tr["layer"], tr["token"], tr["head"]]) for d in deps]
        if tr["margin"] < noise:
            noisy += got != tr["d"]
            continue
        assert got == tr["d"], f"{tr}: aha {got}"
    assert noisy <= max_noisy, f"{noisy} near-boundary triples differ"
    return noisy


# What differs between two recordings of one run by nature, not by content.
RUN_ONLY_ATTRS = {"command_line", "created", "trace_id"}


def assert_same_trace(want, got):
    """got holds exactly the trace want, field by field, with no reordering:
    every dataset (tokens, doc_offsets, doc_index, each dependency/eps_*,
    mass_*, runs' nll/kl/gate, ...) equal, every root and run attribute
    (n_docs, the shard, FLOP counters, ...) equal but those of RUN_ONLY_ATTRS;
    the provenance group aside. An AssertionError names the first field that
    differs."""
    import h5py

    def datasets(f):
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        return sorted(names)

    def attrs(obj):
        return {k: v for k, v in obj.attrs.items() if k not in RUN_ONLY_ATTRS}

    def same(a, b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            a, b = np.asarray(a), np.asarray(b)
            return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        return a == b or (isinstance(a, float) and a != a and b != b)

    with h5py.File(want, "r") as w, h5py.File(got, "r") as g:
        assert datasets(w) == datasets(g), f"datasets differ: {sorted(set(datasets(w)) ^ set(datasets(g)))}"
        for name in datasets(w):
            assert same(w[name][...], g[name][...]), f"dataset {name} differs"
        for where in ["/"] + [f"runs/{r}" for r in w["runs"]]:
            a, b = attrs(w[where]), attrs(g[where])
            assert sorted(a) == sorted(b), f"{where}: attributes differ: {sorted(set(a) ^ set(b))}"
            for k in a:
                assert same(a[k], b[k]), f"{where}: attribute {k} differs: {a[k]!r} vs {b[k]!r}"


def same_report(a, b, rel=1e-12):
    """Two report JSON values equal, floats to rel: a report over several shards
    sums each mean in another order than one over their merge (last-digit
    differences, seen: 0.5597886678336189 vs 0.559788667833619)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_report(a[k], b[k], rel) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_report(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= rel * max(abs(a), abs(b))
    return a == b


def without_doc_index(src, dst):
    """A copy of trace src as an aha before doc_index wrote it."""
    import shutil
    import h5py
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        del f["doc_index"]
    return dst
