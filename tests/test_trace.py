"""The trace file as h5py (the reader most users have) and h5dump see it.

- The schema of docs/trace-format.md: attributes, datasets, dtypes, shapes,
  a description on every dataset and group; values equal to what was
  written; the same for an unfinished trace (an index over part files).
- Nothing lost: a writer killed with SIGKILL at random moments (appending,
  merging parts, closing) leaves a file that a plain h5py.File(path, "r")
  opens and that holds every completed document and nothing else; h5dump
  reads it; resuming finishes it.
- A full disk (a 1 MiB tmpfs, when this runs as root): a clear error, the
  trace keeps every committed document, and it resumes once there is room.

The writer is build/tests/test_trace in its driver mode; the synthetic
documents are computed here exactly as tests/test_trace.c makes them.
"""
import functools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

from ahatest import attr_str, attrs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.environ.get("TRACE_DRIVER", os.path.join(ROOT, "build", "tests", "test_trace"))
L, H = 3, 4
EPS = ["0.1", "0.01"]
WIN = [4, 16]
failed = 0


def report(name, fn):
    global failed
    try:
        extra = fn()
        print(f"PASS {name}{' (' + extra + ')' if extra else ''}", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is reported, the rest go on
        failed += 1
        print(f"  {type(e).__name__}: {e}\nFAIL {name}", flush=True)


def drive(path, n_docs, seed, chunk, close=True, **kw):
    args = [DRIVER, "write", path, str(n_docs), str(seed), str(chunk)] + ([] if close else ["open"])
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def run_driver(*args, **kw):
    p = drive(*args, **kw)
    out, err = p.communicate(timeout=600)
    return p.returncode, err


# ---- the synthetic documents of tests/test_trace.c ----

def synth_len(k, seed):
    return 1 + (k * 37 + seed * 11) % 97 + (150 if k % 13 == 5 else 0)


@functools.lru_cache(maxsize=None)
def synth(k, seed):
    n = synth_len(k, seed)
    t = np.arange(n, dtype=np.int64)
    l, tt, h = np.meshgrid(np.arange(L), t, np.arange(H), indexing="ij")  # [L, n, H]
    f16 = lambda x: x.astype(np.float32).astype(np.float16)  # noqa: E731 - C: double -> float -> half
    return {
        "n": n,
        "tokens": ((k * 1000 + t * 7) % 50000).astype(np.int32),
        "position": t.astype(np.int32),
        "token_text": [f"k{k}\u00b7{i}" for i in range(n)],
        "gate": ((k + l + 2 * tt + 3 * h) % 3 == 0).astype(np.uint8),
        "router_logit": f16(((k * 31 + l * 7 + tt * 3 + h) % 1000) * 0.0137 - 6.5),
        "dependency/eps_0.1": (1 + (k + 3 * l + 5 * h + 7 * tt) % (tt + 1)).astype(np.uint32),
        "dependency/eps_0.01": (1 + (k + 3 * l + 5 * h + 7 * tt + 11) % (tt + 1)).astype(np.uint32),
        "window_error/w_4": f16(((k + l * tt + h) % 9) * 0.1),
        "window_error/w_16": f16(((k + l * tt + h + 5) % 9) * 0.1),
        "mass_far/w_4": f16(((k + l * tt + 2 * h) % 7) * 0.125),
        "mass_far/w_16": f16(((k + l * tt + 2 * h + 3) % 7) * 0.125),
        "mass_sinks": f16(((k + tt + h) % 5) * 0.2),
        "runs/full/nll": np.where(t == n - 1, np.nan, (k % 7) + t * 0.5).astype(np.float32),
        "runs/full/kl": np.zeros(n, np.float32),
        "runs/w4/nll": np.where(t == n - 1, np.nan, (k % 7) + t * 0.5 + 1).astype(np.float32),
        "runs/w4/kl": ((t % 4) * 0.25).astype(np.float32),
        "runs/w4/gate": ((k + l + tt + h) % 2).astype(np.uint8),
    }


TOKEN_AXIS = {  # dataset -> (dtype, rank)
    "tokens": (np.int32, 1), "position": (np.int32, 1), "token_text": (object, 1),
    "gate": (np.uint8, 3), "router_logit": (np.float16, 3),
    "dependency/eps_0.1": (np.uint32, 3), "dependency/eps_0.01": (np.uint32, 3),
    "window_error/w_4": (np.float16, 3), "window_error/w_16": (np.float16, 3),
    "mass_far/w_4": (np.float16, 3), "mass_far/w_16": (np.float16, 3), "mass_sinks": (np.float16, 3),
    "runs/full/nll": (np.float32, 1), "runs/full/kl": (np.float32, 1),
    "runs/w4/nll": (np.float32, 1), "runs/w4/kl": (np.float32, 1), "runs/w4/gate": (np.uint8, 3),
}
COORDS = {"token", "doc", "layer", "head", "eps", "window"}  # a complete trace's dimension scales
GROUPS = {"provenance", "dependency", "window_error", "mass_far", "runs", "runs/full", "runs/w4"}
ROOT_ATTRS = {
    "description", "format", "format_version", "tool_version", "git_revision", "model", "architecture",
    "n_layers", "n_heads", "n_kv_heads", "head_dim", "vocab", "aha", "router", "tau", "eps", "windows",
    "sinks", "werr", "mass", "mode", "dataset", "command_line", "created", "complete", "n_docs", "n_tokens",
    "chunk_tokens", "device", "weights", "shard", "ctx", "batch", "seed", "dataset_format", "text_field", "max_docs",
    "max_tokens", "trace_id", "dataset_read_as", "bos", "router_file", "layer_window", "model_sha256",
    "router_sha256", "dataset_sha256", "dataset_docs", "text_width"}


def same(a, b):
    if a.dtype == np.float16:
        return np.array_equal(a.view(np.uint16), b.view(np.uint16))
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def check_trace(path, seed, complete=None, n_docs=None):
    """Open path with a plain h5py.File and check schema and every value;
    returns the number of documents."""
    with h5py.File(path, "r") as f:
        a = attrs(f)
        assert set(a) == ROOT_ATTRS, f"root attributes {sorted(set(a) ^ ROOT_ATTRS)}"
        assert a["format"] == "aha-trace" and a["format_version"] == 2
        assert (a["n_layers"], a["n_heads"], a["aha"], a["werr"], a["sinks"]) == (L, H, 1, 1, 1)
        assert a["model"] == "synthetic" and a["mode"] == "sweep" and a["router"] == "learned"
        assert a["device"] == "cpu", a["device"]  # the writer's default: test_trace.c passes none
        assert a["weights"] == "f32", a["weights"]  # none given: the default of traces before --weights
        assert list(a["layer_window"]) == [0] * L, a["layer_window"]  # none given: every layer full causal
        assert list(a["eps"]) == [0.1, 0.01] and list(a["windows"]) == WIN and a["tau"] == 0.5
        if complete is not None:
            assert a["complete"] == complete, f"complete = {a['complete']}"
        n = int(a["n_docs"])
        assert f["doc_offsets"].shape == (n + 1,) and f["tokens"].shape[0] == a["n_tokens"]
        if n_docs is not None:
            assert n == n_docs, f"n_docs {n}, want {n_docs}"
        seen = set()
        f.visititems(lambda name, o: seen.add(name))
        want = set(TOKEN_AXIS) | GROUPS | {"doc_offsets", "doc_index", "doc_source", "doc_sha256"}
        want |= COORDS if a["complete"] == 1 else set()
        runs = ["full", "w4"]
        if n == 0:  # killed between create and declaring the runs: some may be missing
            runs = runs[:len(f["runs"])]
            want = {x for x in want if not x.startswith("runs/") or x.split("/")[1] in runs}
        assert seen == want, f"objects differ: {sorted(seen ^ want)}"
        for name in sorted(seen) + ["/"]:
            assert isinstance(attr_str(f[name].attrs.get("description")), str), f"{name}: no description"
        assert list(f["runs"]) == runs, "runs in declaration order"
        if n == 0:
            for name in set(TOKEN_AXIS) & seen:
                assert f[name].dtype == TOKEN_AXIS[name][0] or name == "token_text", name
                assert 0 in f[name].shape and f[name].ndim == TOKEN_AXIS[name][1], f"{name}: not empty"
            return 0
        assert attr_str(f["runs/w4"].attrs["policy"]) == "oracle" and f["runs/w4"].attrs["window"] == 4
        assert f["dependency/eps_0.01"].attrs["eps"] == 0.01 and list(f.attrs["eps"]) == [0.1, 0.01], "eps as typed"
        assert f["window_error/w_16"].attrs["window"] == 16 and f["mass_far/w_16"].attrs["window"] == 16
        assert a["mass"] == 1
        for k in ("version", "git_revision", "compiler", "cflags", "host", "hdf5_version"):
            assert isinstance(attr_str(f["provenance"].attrs[k]), str), f"provenance/{k}"
        offs = f["doc_offsets"][:]
        assert offs.dtype == np.int64 and offs.shape == (n + 1,) and offs[0] == 0
        T = int(offs[-1])
        assert T == a["n_tokens"], f"doc_offsets end at {T}, n_tokens = {a['n_tokens']}"
        index = f["doc_index"][:]  # test_trace.c: documents 2j, 2j+1 are contexts of dataset document 3j
        assert index.dtype == np.int64 and list(index) == [k // 2 * 3 for k in range(n)], f"doc_index {index[:8]}"
        # test_trace.c's synth_strings: each document's source and digest, through pieces, blocks and kills
        source, sha = f["doc_source"].asstr()[:], f["doc_sha256"].asstr()[:]
        assert list(source) == [f"dir/{'abcdefghijklmnopq'[:1 + k % 17]}.tok#{k}" for k in range(n)], source[:4]
        assert list(sha) == ["".join("0123456789abcdef"[(k * 7 + i) % 16] for i in range(64)) for k in range(n)]
        data = {}
        for name, (dtype, rank) in TOKEN_AXIS.items():
            d = f[name]
            assert d.dtype == dtype or (dtype is object and h5py.check_string_dtype(d.dtype)), f"{name}: {d.dtype}"
            assert d.shape == ((T,) if rank == 1 else (L, T, H)), f"{name}: shape {d.shape}, T = {T}"
            data[name] = d[()]
        exe = full = 0.0
        for k in range(n):
            s, o, e = synth(k, seed), int(offs[k]), int(offs[k + 1])
            assert e - o == s["n"], f"document {k}: {e - o} tokens, want {s['n']}"
            exe, full = exe + 100.0 * k + 1, full + 200.0 * k
            for name, (dtype, rank) in TOKEN_AXIS.items():
                got = data[name][o:e] if rank == 1 else data[name][:, o:e, :]
                if name == "token_text":
                    assert [x.decode() for x in got] == s[name], f"document {k}: token_text"
                else:
                    assert same(got, s[name]), f"document {k}: {name}"
        assert f["runs/w4"].attrs["flops_executed"] == exe and f["runs/w4"].attrs["flops_full"] == full
        if a["complete"] == 1:
            assert not f["tokens"].is_virtual, "a complete trace is one plain file"
            scales_ok(f, n, T)
    return n


def scales_ok(f, n, T):
    """A complete trace's axes: each coordinate a dimension scale holding its
    axis's values, and every dataset's axes attached to the coordinates they
    index (netCDF-4's shared dimensions, which xarray aligns on)."""
    want = {"token": np.arange(T), "doc": np.arange(n), "layer": np.arange(L), "head": np.arange(H),
            "eps": np.array([0.1, 0.01]), "window": np.array(WIN)}
    for name, v in want.items():
        d = f[name]
        assert d.is_scale and same(d[()], v.astype(d.dtype)), f"{name}: {d[()][:8]}, a scale: {d.is_scale}"
        assert d.dtype == (np.float64 if name == "eps" else np.int64), f"{name}: {d.dtype}"
    axes = {name: ["token"] if rank == 1 else ["layer", "token", "head"] for name, (_, rank) in TOKEN_AXIS.items()}
    axes.update({x: ["doc"] for x in ("doc_index", "doc_source", "doc_sha256")})
    for name, dims in axes.items():
        got = [[s.name for s in f[name].dims[k].values()] for k in range(f[name].ndim)]
        assert got == [["/" + x] for x in dims], f"{name}: axes attached to {got}"
        assert "_FillValue" not in f[name].attrs, f"{name}: a _FillValue (xarray would read it as float)"
    assert f["doc_offsets"].is_scale, "doc_offsets: its own axis's coordinate"


def storage_ok(path, complete):
    """What is stored can be checked (issue 26): the trace and each of its
    part files in HDF5 1.10's format (superblock version 3: every metadata
    block checksummed); every dataset chunked through shuffle, deflate and
    Fletcher-32, so that h5py verifies every chunk it reads; in a complete
    trace every chunk compressed too, the last one included (filter mask 0),
    in a part file at least checksummed (the unfinished chunk is stored
    uncompressed); and no variable-length string, dataset or attribute,
    anywhere: those live in HDF5's global heap, which has no checksum (a
    flipped byte there crashed the readers)."""
    parts = path + ".parts"
    files = [path] + ([os.path.join(parts, x) for x in sorted(os.listdir(parts)) if x.endswith(".h5")]
                      if not complete and os.path.isdir(parts) else [])
    for p in files:
        with open(p, "rb") as fh:
            head = fh.read(9)
        assert head[:8] == b"\x89HDF\r\n\x1a\n" and head[8] >= 3, f"{p}: superblock version {head[8]}"
        with h5py.File(p, "r") as f:
            objs = [("/", f)]
            f.visititems(lambda n, o: objs.append((n, o)))
            for name, o in objs:
                for k in o.attrs:
                    info = h5py.check_string_dtype(o.attrs.get_id(k).dtype)
                    assert info is None or info.length is not None, f"{p}: {name} attribute {k} is variable-length"
                if not isinstance(o, h5py.Dataset) or o.is_virtual:
                    continue
                info = h5py.check_string_dtype(o.dtype)
                assert info is None or info.length is not None, f"{p}: {name} is variable-length strings"
                assert o.chunks and o.fletcher32 and o.shuffle and o.compression == "gzip", f"{p}: {name} filters"
                masks = {o.id.get_chunk_info(i).filter_mask for i in range(o.id.get_num_chunks())}
                assert masks <= ({0} if p == path else {0, 3}), f"{p}: {name}: chunks stored with filter masks {masks}"


def h5dump_ok(path):
    r = subprocess.run(["h5dump", "-H", path], capture_output=True, text=True)
    assert r.returncode == 0 and 'DATASET "tokens"' in r.stdout, f"h5dump -H: {r.stderr[-300:]}"
    with h5py.File(path, "r") as f:
        last = int(f.attrs["n_tokens"]) - 1
    if last >= 0:  # the first and the last token's distances, through the HDF5 C library
        for start in (0, last):
            r = subprocess.run(["h5dump", "-d", "/dependency/eps_0.01", "-s", f"0,{start},0", "-c",
                                "1,1,4", path], capture_output=True, text=True)
            assert r.returncode == 0 and "DATA" in r.stdout, f"h5dump -d: {r.stderr[-300:]}"


# ---- tests ----

def test_schema(tmp):
    path = os.path.join(tmp, "schema.h5")
    rc, err = run_driver(path, 150, 5, 16, close=False)
    assert rc == 0, err
    check_trace(path, 5, complete=0, n_docs=150)
    with h5py.File(path, "r") as f:
        assert f["dependency/eps_0.1"].is_virtual, "an unfinished trace is an index over parts"
    storage_ok(path, complete=False)
    h5dump_ok(path)
    rc, err = run_driver(path, 200, 5, 16)
    assert rc == 0, err
    check_trace(path, 5, complete=1, n_docs=200)
    storage_ok(path, complete=True)
    h5dump_ok(path)
    assert sorted(os.listdir(tmp)) == ["schema.h5"], f"left behind: {os.listdir(tmp)}"


def test_sigkill(tmp):
    """Kill the writer at random moments; after each kill the file must hold
    exactly the documents it had committed, readable by a plain open."""
    path, seed, rng = os.path.join(tmp, "kill.h5"), 9, random.Random(1234)
    kills, torn, last = 0, 0, 0
    for i in range(36):
        closing = i >= 28  # the last rounds kill while closing (merging the parts into one file)
        p = drive(path, last + 2 if closing else 10**6, seed, 16)
        time.sleep(rng.uniform(0.0, 0.25) if closing else rng.uniform(0.02, 0.6))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        if p.returncode == -signal.SIGKILL:
            kills += 1
        parts = path + ".parts"
        tmps = [x for x in os.listdir(parts) if x.endswith(".tmp")] if os.path.isdir(parts) else []
        torn += bool(tmps) or os.path.exists(path + ".tmp")  # killed while writing a file
        if not os.path.exists(path):  # killed before the first index was in place
            continue
        n = check_trace(path, seed)
        assert n >= last, f"documents went from {last} to {n}"
        last = n
        with h5py.File(path, "r") as f:
            storage_ok(path, complete=f.attrs["complete"] == 1)
        h5dump_ok(path)
        with h5py.File(path, "r") as f:
            if f.attrs["complete"] == 1:
                break
    with h5py.File(path, "r") as f:
        done = f.attrs["complete"] == 1
    if not done:
        rc, err = run_driver(path, last + 5, seed, 16)
        assert rc == 0, err
        last += 5
    check_trace(path, seed, complete=1, n_docs=last)
    storage_ok(path, complete=True)
    return f"{kills} kills, {torn} of them while a file was half-written; {last} documents"


def test_full_disk(mnt):
    try:
        path = os.path.join(mnt, "t.h5")
        rc, full = run_driver(path, 400, 3, 16)
        assert rc == 1 and "No space left on device" in full and path in full, f"rc {rc}: {full}"
        n = check_trace(path, 3, complete=0)
        assert n > 0, "no document committed"
        subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
        rc, err = run_driver(path, 400, 3, 16)
        assert rc == 0, err
        check_trace(path, 3, complete=1, n_docs=400)
        return f"after {n} documents: {full.strip()}"
    finally:
        subprocess.run(["umount", mnt])


def main():
    if not os.access(DRIVER, os.X_OK):
        print(f"FAIL test_trace.py: {DRIVER} not built (make check builds it)")
        return 1
    tmp = tempfile.mkdtemp(prefix="aha_trace_py_")
    try:
        for name, fn in [("trace.py: schema, dtypes, descriptions and values via h5py and h5dump; checksummed storage, "
                          "no global heap", test_schema),
                         ("trace.py: SIGKILL at random moments loses nothing; resume finishes", test_sigkill)]:
            sub = os.path.join(tmp, fn.__name__)
            os.mkdir(sub)
            report(name, lambda: fn(sub))
        mnt = os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        name = "trace.py: a full disk (1 MiB tmpfs) stops with a clear error; resume finishes"
        if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                                                capture_output=True).returncode == 0:
            report(name, lambda: test_full_disk(mnt))
        else:
            print(f"SKIP {name}: cannot mount a tmpfs here (needs root and mount permission); the RLIMIT_FSIZE full-disk test in test_trace.c still runs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
