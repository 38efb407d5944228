#!/usr/bin/env python3
"""Merge vs an index of HDF5 virtual datasets, over N shard files (default 64):
how long each takes to write, how big it is, how long reading it all back
takes, and how many files a reader opens. A benchmark, not a test: it prints
figures (medians of --repeat runs) and the load average beside them.

    .venv/bin/python scripts/bench_shards.py [--shards 64] [--docs 128] [--tokens 64] [--repeat 3] [--keep DIR]
    .venv/bin/python scripts/bench_shards.py --clone SHARD.h5 [--shards 64]

The shards are recorded by ./aha record --shard I/N from the tiny random
llama_gqa checkpoint (tests/fixtures/tiny), two at a time. Its traces are
small per token (2 layers x 4 heads), so the writer's chunks are 32768 tokens
long and every appended document rewrites the unfinished one: that is the
merge's cost here, not a real model's. --clone copies one real shard (e.g.
SmolLM2's: chunks of 512 tokens) N times as shards 0..N-1 of N instead (the
same documents in each, renumbered in doc_index as shard i of N would number
them: merge and index do not look further)."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ahatest import tokfile  # noqa: E402

AHA = os.path.join(ROOT, "aha")
MODEL = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")


def load():
    return open("/proc/loadavg").read().split()[0]


def datasets(f):
    out = []
    f.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
    return [n for n in out if n != "doc_offsets" and not n.startswith("provenance")]


def vds_index(out, shards):
    """One file of virtual datasets over the shards, concatenated along tokens;
    doc_offsets, the attributes and the FLOP totals are real (they are small)."""
    fs = [h5py.File(p, "r") for p in shards]
    with h5py.File(out, "w") as o:
        for k, v in fs[0].attrs.items():
            o.attrs[k] = v
        o.attrs["shard"] = ""
        o.attrs["n_docs"] = sum(int(f.attrs["n_docs"]) for f in fs)
        o.attrs["n_tokens"] = sum(int(f.attrs["n_tokens"]) for f in fs)
        offs, base = [np.zeros(1, np.int64)], 0
        for f in fs:
            d = f["doc_offsets"][...]
            offs.append(d[1:] + base)
            base += int(d[-1])
        o.create_dataset("doc_offsets", data=np.concatenate(offs))
        o.copy(fs[0]["provenance"], "provenance")
        for name in datasets(fs[0]):
            srcs = [f[name] for f in fs]
            axis = 1 if srcs[0].ndim == 3 else 0
            shape = list(srcs[0].shape)
            shape[axis] = sum(s.shape[axis] for s in srcs)
            layout = h5py.VirtualLayout(shape=tuple(shape), dtype=srcs[0].dtype)
            at = 0
            for p, s in zip(shards, srcs):
                n = s.shape[axis]
                sel = (slice(None), slice(at, at + n)) if axis == 1 else (slice(at, at + n),)
                layout[sel] = h5py.VirtualSource(os.path.relpath(p, os.path.dirname(out)), name, shape=s.shape)
                at += n
            o.create_virtual_dataset(name, layout)
            for k, v in srcs[0].attrs.items():
                o[name].attrs[k] = v
        for r in fs[0]["runs"]:
            for k, v in fs[0]["runs"][r].attrs.items():
                o["runs"][r].attrs[k] = v
            for k in ("flops_executed", "flops_full"):
                o["runs"][r].attrs[k] = sum(float(f["runs"][r].attrs[k]) for f in fs)
    for f in fs:
        f.close()


def read_all(path):
    """Every dataset read whole, as a notebook would: seconds and bytes."""
    t0, n = time.perf_counter(), 0
    with h5py.File(path, "r") as f:
        for name in datasets(f) + ["doc_offsets"]:
            n += f[name][...].nbytes
    return time.perf_counter() - t0, n


def timed(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--docs", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=64, help="tokens per document (one context each)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clone", help="a recorded shard to copy N times instead of recording")
    ap.add_argument("--keep", help="folder for the files (default: a temporary one, removed)")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="aha_bench_shards_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.makedirs(tmp, exist_ok=True)
    rng = np.random.default_rng(0)
    data = tokfile(os.path.join(tmp, "docs.tok"), [rng.integers(0, 128, a.tokens).tolist() for _ in range(a.docs)])
    shards = [os.path.join(tmp, f"s-{i}.h5") for i in range(a.shards)]
    args = ["--windows", "16,64", "--ctx", a.tokens, "--quiet", "--threads", 1, "--force"]

    def record(i):
        if a.clone:
            shutil.copyfile(a.clone, shards[i])
            with h5py.File(shards[i], "r+") as f:
                f.attrs["shard"] = f"{i}/{a.shards}"
                if "doc_index" in f:  # distinct documents, as shard i of N numbers them (merge refuses repeats)
                    f["doc_index"][...] = f["doc_index"][...] * a.shards + i
            return
        subprocess.run([AHA, "record", MODEL, data, "-o", shards[i], "--shard", f"{i}/{a.shards}", *map(str, args)],
                       check=True, capture_output=True)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as ex:
        list(ex.map(record, range(a.shards)))
    rec = time.perf_counter() - t0
    size = sum(os.path.getsize(p) for p in shards)
    with h5py.File(shards[0], "r") as f:
        docs, toks, tc = int(f.attrs["n_docs"]), int(f.attrs["n_tokens"]), int(f.attrs["chunk_tokens"])
    print(f"{a.shards} shards ({'copies of ' + a.clone if a.clone else 'recorded, 2 at a time'}) of {docs} contexts, "
          f"{toks} tokens each (chunks of {tc} tokens): made in {rec:.1f} s, {size / 1e6:.1f} MB, "
          f"{size / a.shards / 1e3:.0f} kB per shard (load {load()})")

    merged, index = os.path.join(tmp, "merged.h5"), os.path.join(tmp, "index.h5")
    t_merge = timed(lambda: subprocess.run([AHA, "merge", *shards, "-o", merged, "--force"], check=True,
                                           capture_output=True), a.repeat)
    print(f"aha merge:  {t_merge:.3f} s (median of {a.repeat}), {os.path.getsize(merged) / 1e6:.2f} MB, "
          f"a reader opens 1 file (load {load()})")
    t_index = timed(lambda: vds_index(index, shards), a.repeat)
    print(f"VDS index:  {t_index:.3f} s (median of {a.repeat}, h5py), {os.path.getsize(index) / 1e3:.1f} kB, "
          f"a reader opens {a.shards + 1} files (load {load()})")
    for name, path in (("merged", merged), ("index", index)):
        ts = [read_all(path) for _ in range(a.repeat)]
        print(f"read all of {name}: {statistics.median(t for t, _ in ts):.3f} s for {ts[0][1] / 1e6:.1f} MB (load {load()})")
    r = subprocess.run([AHA, "report", index, "--out-format", "json"], capture_output=True, text=True)
    print("aha report on the index:", "reads it" if r.returncode == 0 else "refuses it: " + r.stderr.strip()[:200])
    if not a.keep:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
