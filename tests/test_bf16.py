"""--dtype bf16 on the CPU, against independent references.

- The product (kernels/matmul_bf16.c, through build/tests/test_matmul_bf16's
  --io mode) against numpy: both operands rounded to bf16 here (frexp and
  numpy's round-half-even on the 8-bit significand, not the kernel's bit
  trick), the sum in f64. The kernel's f32 sums are the only difference; the
  bound is just above what was measured. The plain f32 product misses that
  bound, so a kernel that skipped the rounding fails.
"""
import os
import subprocess
import tempfile

import h5py
import numpy as np

from ahatest import ROOT, aha, attr_str, check, finish, tokfile

DRIVER = os.path.join(ROOT, "build", "tests", "test_matmul_bf16")
# max |y - ref| / sum_k |x_k w_k| measured on the shapes below: 5.4e-8
# (f32 sums of up to 1536 terms); the f32 product without rounding: 1.6e-3.
PRODUCT_BOUND = 2e-7


def bf16_round(a):
    """Round f32 values to bf16 (8 significant bits), nearest, ties to even."""
    m, e = np.frexp(a.astype(np.float64))        # a = m * 2^e, 0.5 <= |m| < 1
    return np.ldexp(np.round(m * 256.0) / 256.0, e).astype(np.float32)


def product(x, w, impl="auto"):
    n, k = x.shape
    out = w.shape[0]
    with tempfile.TemporaryDirectory() as d:
        fx, fw, fy = (os.path.join(d, f) for f in ("x", "w", "y"))
        x.astype(np.float32).tofile(fx)
        w.astype(np.float32).tofile(fw)
        r = subprocess.run([DRIVER, "--io", impl, str(n), str(k), str(out), fx, fw, fy],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.fromfile(fy, dtype=np.float32).reshape(n, out), r.stdout.strip()


def product_vs_numpy():
    rng = np.random.default_rng(13)
    worst = worst_f32 = 0.0
    # SmolLM2's projection shapes (576 -> 576/192/1536, 1536 -> 576), a decode
    # row and a few (weight.h's fused path), and a small shape.
    for n, k, out in [(1, 576, 1536), (3, 576, 200), (64, 576, 576), (37, 1536, 576), (5, 32, 7)]:
        x = rng.standard_normal((n, k)).astype(np.float32)
        w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
        y, impl = product(x, w)
        xr, wr = bf16_round(x).astype(np.float64), bf16_round(w).astype(np.float64)
        ref = xr @ wr.T
        scale = np.abs(xr) @ np.abs(wr).T
        worst = max(worst, float(np.max(np.abs(y - ref) / scale)))
        y32 = x.astype(np.float64) @ w.astype(np.float64).T
        worst_f32 = max(worst_f32, float(np.max(np.abs(y32 - ref) / scale)))
    print(f"  {impl}: max |y - ref| / sum|x w| = {worst:.3g}; unrounded f32 product: {worst_f32:.3g}")
    assert worst <= PRODUCT_BOUND, f"bf16 product deviates {worst:.3g} > {PRODUCT_BOUND}"
    assert worst_f32 > 10 * PRODUCT_BOUND, "the bound would not catch a product without bf16 rounding"


def rounding_vs_numpy():
    rng = np.random.default_rng(7)
    a = np.concatenate([rng.standard_normal(100000).astype(np.float32),
                        # ties: exactly half way between two bf16 values (normal numbers:
                        # frexp's 8 bits are not bf16's for subnormals)
                        ((np.arange(2000, dtype=np.uint32) + 0x3e00) << 16 | 0x8000).view(np.float32)])
    # y[i, 0] = a[i] * 1: the kernel's rounding of x, read back exactly
    y, _ = product(a.reshape(-1, 1), np.ones((1, 1), np.float32))
    bad = np.flatnonzero(y[:, 0] != bf16_round(a))
    assert bad.size == 0, f"{bad.size} values rounded differently, e.g. {a[bad[0]]!r} -> {y[bad[0], 0]!r}"


def resume_refuses_other_dtype():
    # A run stopped by a bad document leaves an unfinished trace (as in test_record.py).
    rng = np.random.default_rng(13)
    docs = [rng.integers(0, 100, size=40).tolist(), [5, 10**6, 7], rng.integers(0, 100, size=30).tolist()]
    model = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
    base = ["--ctx", 32, "--quiet"]
    with tempfile.TemporaryDirectory() as d:
        data = tokfile(os.path.join(d, "docs.tok"), docs)
        for first, other in (("f32", "bf16"), ("bf16", "f32")):
            name = {"f32": "cpu", "bf16": "cpu:bf16"}
            out = os.path.join(d, f"{first}.h5")
            r = aha("record", model, data, "-o", out, "--dtype", first, *base, ok=False)
            assert r.returncode == 1 and "token id 1000000 out of range" in r.stderr, r.stderr
            with h5py.File(out, "r") as f:
                assert f.attrs["complete"] == 0 and attr_str(f.attrs["device"]) == name[first], dict(f.attrs)
            r = aha("record", model, data, "-o", out, "--resume", "--skip-bad", "--dtype", other, *base, ok=False)
            want = f"cannot resume: --device differs (trace: {name[first]}; now: {name[other]})"
            assert r.returncode == 1 and want in r.stderr, r.stderr
            aha("record", model, data, "-o", out, "--resume", "--skip-bad", "--dtype", first, *base)
            with h5py.File(out, "r") as f:
                assert f.attrs["complete"] == 1 and attr_str(f.attrs["device"]) == name[first], dict(f.attrs)
        r = aha("record", model, data, "-o", os.path.join(d, "f16.h5"), "--dtype", "f16", *base, ok=False)
        assert r.returncode == 1 and "--dtype f16: the CPU computes in f32 or bf16" in r.stderr, r.stderr


def merge_refuses_other_dtype():
    # Shards of one run recorded with different --dtype hold different numbers:
    # merge and report refuse to combine them.
    rng = np.random.default_rng(14)
    model = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
    with tempfile.TemporaryDirectory() as d:
        data = tokfile(os.path.join(d, "docs.tok"), [rng.integers(0, 100, size=40).tolist() for _ in range(4)])
        s0, s1 = os.path.join(d, "s0.h5"), os.path.join(d, "s1.h5")
        aha("record", model, data, "-o", s0, "--ctx", 32, "--shard", "0/2", "--quiet")
        aha("record", model, data, "-o", s1, "--ctx", 32, "--shard", "1/2", "--dtype", "bf16", "--quiet")
        for args in (["merge", s0, s1, "-o", os.path.join(d, "m.h5")], ["report", s0, s1]):
            r = aha(*args, ok=False)
            assert r.returncode == 1 and "differ in --device (cpu vs cpu:bf16)" in r.stderr, (args, r.stderr)


def usage_names_cpu_dtypes():
    for cmd in ("record", "ppl", "generate"):
        r = aha(cmd, "--help", ok=False)
        assert "matrix products: CPU f32 | bf16; CUDA f32 | f16 | bf16" in r.stdout + r.stderr, cmd


check("bf16 product against numpy (bf16-rounded operands, f64 sums)", product_vs_numpy)
check("bf16 rounding of activations: nearest, ties to even, as numpy's round", rounding_vs_numpy)
check("--dtype bf16: traces say cpu:bf16, and resume refuses the other dtype", resume_refuses_other_dtype)
check("--dtype bf16: shards of another dtype are not merged or reported together", merge_refuses_other_dtype)
check("--dtype usage text: CPU f32 | bf16; CUDA f32 | f16 | bf16", usage_names_cpu_dtypes)
finish()
