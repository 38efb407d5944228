"""Shared by the Python tests: run ./aha, write token files, and report each
check as a PASS/FAIL line (tests/run.sh counts them)."""
import json
import os
import struct
import subprocess
import sys

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


def write_safetensors(path, tensors):
    """{name: float32 array} as a safetensors file."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, "<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
