#!/usr/bin/env python3
"""Seed corpus for tests/fuzz/fuzz_trace.c: small real traces -- one the
trace writer's test driver writes with 16-token chunks (every dataset the
schema has, routed runs among them: small chunks keep the fuzzer fast), and
ones ./aha records from the tiny fixture models (observe with the learned
router, natively local layers, a merge of shards) -- and copies of the first
whose values break what the reader checks -- a position, a d_eps, a token
id, a gate, doc_offsets, doc_index, a string, a dataset's type -- rewritten
by h5py through the same filters (checksums valid), so that the fuzzer
starts at every check. Format 2 only: a format-1 trace keeps its strings in
HDF5's global heap, which has no checksum.

Regenerate (needs ./aha and build/tests/test_trace built, and the .venv that
`scripts/setup.sh test` creates; the traces' ids and times differ each run,
nothing else):

    .venv/bin/python tests/fuzz/make_corpus_trace.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ahatest import aha, tokfile  # noqa: E402

TINY = os.path.join(ROOT, "tests", "fixtures", "tiny")
SMALL = ["--ctx", "16", "--quiet", "--force"]


def rewrite(path, name, values, dtype=None):
    """Dataset name of trace path replaced by values (as dtype: its own when
    None), stored as aha stores it."""
    with h5py.File(path, "r+", libver=("v110", "v110")) as f:  # object headers checksummed, as aha writes them
        d = f[name]
        attrs, chunks, dtype = dict(d.attrs), d.chunks, dtype or d.dtype
        del f[name]
        n = f.create_dataset(name, data=np.asarray(values, dtype), chunks=chunks, shuffle=True, compression="gzip",
                             fletcher32=True, maxshape=tuple(None if k == (len(chunks) > 1) else s
                                                             for k, s in enumerate(d.shape)))
        n.attrs.update(attrs)


def broken(src, out, name, change):
    """A copy of src whose dataset name is change(its values)."""
    shutil.copy(src, out)
    with h5py.File(out, "r") as f:
        v = f[name][...]
    rewrite(out, name, change(v))


def main():
    out = os.path.join(HERE, "corpus_trace")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="aha_corpus_trace_")
    try:
        rng = np.random.default_rng(26)
        docs = [rng.integers(0, 128, n).tolist() for n in (21, 9, 14)]
        data = tokfile(os.path.join(tmp, "d.tok"), docs)
        syn = os.path.join(out, "synthetic.h5")
        if os.path.exists(syn):
            os.remove(syn)
        subprocess.run([os.path.join(ROOT, "build", "tests", "test_trace"), "write", syn, "3", "1", "16"], check=True)
        aha("record", os.path.join(TINY, "llama_aha"), data, "-o", os.path.join(out, "observe.h5"), "--windows", "2,4",
            "--eps", "0.01,0.1", "--mass", "--sinks", "1", *SMALL)
        aha("record", os.path.join(TINY, "gemma3"), data, "-o", os.path.join(out, "native_windows.h5"),
            "--windows", "2,4", *SMALL)
        shards = [os.path.join(tmp, f"s{i}.h5") for i in range(2)]
        for i, s in enumerate(shards):
            aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", s, "--shard", f"{i}/2", "--windows", "4", *SMALL)
        aha("merge", *shards, "-o", os.path.join(out, "merged.h5"), "--force")
        for name, ds, change in [
                ("bad_position.h5", "position", lambda v: np.where(np.arange(len(v)) == 5, 1 << 30, v)),
                ("bad_dep.h5", "dependency/eps_0.01", lambda v: np.where(v == v.max(), v + 7, v)),
                ("bad_token.h5", "tokens", lambda v: np.where(np.arange(len(v)) == 3, 1 << 20, v)),
                ("bad_gate.h5", "runs/w4/gate", lambda v: np.where(v == 1, 2, v)),
                ("bad_offsets.h5", "doc_offsets", lambda v: v[::-1]),
                ("bad_doc_index.h5", "doc_index", lambda v: v[::-1] - 2),
                ("bad_text.h5", "token_text", lambda v: np.array([b"a\x00b" for _ in v], v.dtype))]:
            broken(syn, os.path.join(out, name), ds, change)
        # another type than the schema's (a damaged type once made HDF5 write past its buffer)
        shutil.copy(syn, os.path.join(out, "bad_type.h5"))
        with h5py.File(syn, "r") as f:
            rewrite(os.path.join(out, "bad_type.h5"), "dependency/eps_0.01", f["dependency/eps_0.01"][...], np.uint64)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
