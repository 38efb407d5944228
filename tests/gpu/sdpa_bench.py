#!/usr/bin/env python3
"""PyTorch scaled-dot-product attention (dense causal) on the shapes of
tests/gpu/bench_attention_cuda.cu, for the issue-5 comparison:
aha's dense kernel should reach >= 50% of SDPA's TFLOP/s.

Prints one line per (dtype, backend, T): time and TFLOP/s counted as the
kernel counts them (4 * D per visible key per query and head). fp32 runs the
math/efficient backends (FlashAttention has no fp32), bf16 the flash backend.
Exits 0 with a SKIP line when torch or a CUDA device is missing.

  sdpa_bench.py [--quick] [--aha BENCH_OUTPUT]

With --aha (the output of build/gpu/bench_attention_cuda from the same run),
each of aha's dense kernels is also printed as a ratio to every SDPA figure
of the same T (the issue's target: >= 50% of the FlashAttention backend's).
"""
import re
import sys
import time


def aha_dense(path):
    """{T: [(kernel, TFLOP/s)]} from bench_attention_cuda's 'dense' lines."""
    out = {}
    pat = re.compile(r"^dense\s+T\s+(\d+):\s+[\d.]+ ms\s+([\d.]+) TFLOP/s\s+\((.+)\)")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = pat.match(line)
            if m:
                out.setdefault(int(m.group(1)), []).append((m.group(3), float(m.group(2))))
    return out


def main():
    quick = "--quick" in sys.argv
    aha = aha_dense(sys.argv[sys.argv.index("--aha") + 1]) if "--aha" in sys.argv else {}
    sdpa = {}  # T -> [(name, TFLOP/s)]
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(f"SKIP sdpa_bench: no torch ({e})")
        return 0
    if not torch.cuda.is_available():
        print("SKIP sdpa_bench: no CUDA device (torch.cuda.is_available() is False)")
        return 0
    from torch.nn.attention import SDPBackend, sdpa_kernel

    H, KV, D = 32, 8, 128
    Ts = [4096] if quick else [4096, 16384, 32768]
    print(f"== torch {torch.__version__} SDPA on {torch.cuda.get_device_name()}: H {H}, KV {KV}, D {D}, causal")
    for dtype, backends in ((torch.bfloat16, [SDPBackend.FLASH_ATTENTION]),
                            (torch.float32, [SDPBackend.EFFICIENT_ATTENTION])):
        for T in Ts:
            q = torch.randn(1, H, T, D, device="cuda", dtype=dtype)
            k = torch.randn(1, KV, T, D, device="cuda", dtype=dtype)
            v = torch.randn(1, KV, T, D, device="cuda", dtype=dtype)
            # GQA: expand KV heads (enable_gqa where this torch has it).
            ke = k.repeat_interleave(H // KV, dim=1)
            ve = v.repeat_interleave(H // KV, dim=1)
            flops = 4.0 * D * H * T * (T + 1) / 2
            for be in backends:
                try:
                    with sdpa_kernel(be):
                        F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
                        torch.cuda.synchronize()
                        reps = 3 if T >= 16384 else 10
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        s.record()
                        for _ in range(reps):
                            F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
                        e.record()
                        torch.cuda.synchronize()
                        ms = s.elapsed_time(e) / reps
                    name = f"{str(dtype).split('.')[-1]} {be.name}"
                    sdpa.setdefault(T, []).append((name, flops / ms * 1e-9))
                    print(f"sdpa {name:29s} T {T:5d}: {ms:8.2f} ms {flops / ms * 1e-9:7.2f} TFLOP/s")
                except Exception as ex:  # noqa: BLE001
                    print(f"sdpa {str(dtype).split('.')[-1]:8s} {be.name:20s} T {T:5d}: unavailable ({ex})")
            del q, k, v, ke, ve
            torch.cuda.empty_cache()
    for T in sorted(aha):
        for kernel, tf in aha[T]:
            for name, ref in sdpa.get(T, []):
                print(f"ratio T {T:5d}: aha {kernel:12s} {tf:7.2f} / sdpa {name:29s} {ref:7.2f} TFLOP/s "
                      f"= {100 * tf / ref:5.1f}%")
    return 0


if __name__ == "__main__":
    t0 = time.time()
    rc = main()
    print(f"sdpa_bench: {time.time() - t0:.1f} s")
    sys.exit(rc)
