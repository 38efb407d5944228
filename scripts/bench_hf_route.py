"""The route researchers take today to d_eps, timed beside `aha record` by
scripts/bench.sh (make bench): Hugging Face transformers with eager attention
and output_attentions=True (every layer's probabilities, layers x heads x N^2
floats), then d_eps with numpy, vectorised, for aha record's default eps
(0.01, 0.05, 0.1) and sinks 0, on the first N ids of a token file that aha
record reads as the very same ids, in one context of N.

usage: .venv/bin/python scripts/bench_hf_route.py TOKENS N [--threads T] [--check TRACE] [--find-oom]
       aha tokenize MODEL TEXT --ids | .venv/bin/python scripts/bench_hf_route.py --write-tokens TOKENS

  TOKENS          an AHATOK01 token file (docs/datasets.md); its first document's first N ids
  --threads T     PyTorch's threads (default 2)
  --check TRACE   compare d_eps with aha record's trace of the same N ids (--ctx N, sinks 0): the
                  fraction of equal (layer, token, head) triples per eps; exits 1 below 0.99
  --find-oom      run the route in child processes from N, doubling until one runs out of memory
                  (the kernel kills it, or an allocation fails), then bisecting down to 256 tokens:
                  the last length that ran and the first that did not
  --write-tokens  write the ids on stdin (aha tokenize --ids) as a one-document token file

Prints wall time from the start of the process (imports and model load
included, as aha record's wall time includes its load) and peak RSS
(getrusage). Needs torch and transformers (scripts/setup.sh fixtures).
"""
import time

T0 = time.time()  # before the imports: the route's wall time counts them, as aha's counts its start

import argparse  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
EPS = (0.01, 0.05, 0.1)
AGREE_MIN = 0.99


def write_tokens(path, ids):
    with open(path, "wb") as f:
        f.write(b"AHATOK01" + (1).to_bytes(8, "little") + len(ids).to_bytes(4, "little"))
        f.write(np.asarray(ids, "<i4").tobytes())


def read_tokens(path, n):
    b = open(path, "rb").read()
    if b[:8] != b"AHATOK01":
        sys.exit(f"{path}: not a token file (AHATOK01)")
    m = int.from_bytes(b[16:20], "little")  # the first document's length
    if m < n:
        sys.exit(f"{path}: its first document has {m} ids, fewer than {n}")
    return np.frombuffer(b, "<i4", count=n, offset=20)


def d_eps(p, eps):
    """d_eps of every row of p [H, N, N] (causal probabilities; keys past a row's
    position t are 0), per eps: [len(eps), H, N]. m_out(w) = C[t - w] with C the
    running sum from the first key, nondecreasing, in float64 as aha's pass sums
    it; so m_out(w) <= eps iff t - w < #{k : C[k] <= eps}, and d_eps = t + 1 -
    that count, at least 1. Keys past t hold C[t] (the row's whole mass, > eps)
    and add to the count only when every key fits under eps, where 1 is right."""
    c = np.cumsum(p, axis=-1, dtype=np.float64)
    t = np.arange(p.shape[-1])
    # aha_dep_threshold: eps as a float32; eps >= 1 is never exceeded, though a float sum may pass 1
    lim = [np.inf if e >= 1 else np.float32(e) for e in eps]
    return np.stack([np.maximum(1, t + 1 - np.count_nonzero(c <= x, axis=-1)) for x in lim])


def route(tokens, n, threads):
    """The first n ids of tokens through SmolLM2 with every attention kept, and
    d_eps from them: the ids, d [layers, eps, heads, n], and when the imports
    and the model load ended (time.time())."""
    import torch
    from transformers import AutoModelForCausalLM

    t_import = time.time()
    torch.set_num_threads(threads)
    ids = read_tokens(tokens, n)
    model = AutoModelForCausalLM.from_pretrained(os.path.join(ROOT, "models"), gguf_file=MODEL,
                                                 dtype=torch.float32, attn_implementation="eager").eval()
    t_load = time.time()
    with torch.inference_mode():
        att = model(torch.from_numpy(ids.astype(np.int64))[None], output_attentions=True).attentions
    return ids, np.stack([d_eps(a[0].numpy(), EPS) for a in att]), t_import, t_load


def check(trace, ids, d):
    """The fraction of (layer, token, head) triples where d equals the trace's d_eps, per eps."""
    import h5py

    with h5py.File(trace, "r") as f:
        if not np.array_equal(f["tokens"][:], ids):
            sys.exit(f"{trace}: its tokens are not the {len(ids)} ids of this run")
        worst = 1.0
        for i, e in enumerate(EPS):
            theirs = f[f"dependency/eps_{e:g}"][:].transpose(0, 2, 1)  # [L, T, H] -> [L, H, T]
            same = float(np.mean(theirs == d[:, i]))
            print(f"check      eps {e:g}: d_eps equal in {same:.6f} of {theirs.size} (layer, token, head) "
                  f"triples; largest difference {int(np.abs(theirs.astype(np.int64) - d[:, i]).max())}")
            worst = min(worst, same)
    if worst < AGREE_MIN:
        sys.exit(f"check      FAIL: agreement {worst:.6f} below {AGREE_MIN}")


def run_child(tokens, n, threads):
    """One route at n tokens in a child process, first in line for the OOM
    killer: its result line, or None where it ran out of memory."""
    def oom_first():
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")

    p = subprocess.run([sys.executable, __file__, tokens, str(n), "--threads", str(threads)],
                       capture_output=True, text=True, preexec_fn=oom_first)
    if p.returncode == 0:
        return p.stdout.strip().splitlines()[-1]
    if p.returncode == -9 or "MemoryError" in p.stderr or "can't allocate memory" in p.stderr:
        return None
    sys.exit(f"hf route at {n} tokens failed (exit {p.returncode}), not for memory:\n{p.stderr[-2000:]}")


def find_oom(tokens, n, threads):
    ok = bad = None
    while True:
        line = run_child(tokens, n, threads)
        print(f"oom search {n} tokens: {line or 'out of memory (killed, or an allocation failed)'}", flush=True)
        if line:
            ok = n
        else:
            bad = n
        if bad is None:
            n *= 2
            continue
        if ok is None:
            sys.exit(f"oom search: the first length, {bad}, already ran out of memory")
        if bad - ok <= 256:
            break
        n = (ok + bad) // 2 // 256 * 256
    print(f"oom        the HF route ran at {ok} tokens and ran out of memory at {bad} "
          f"(MemTotal {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') >> 20} MiB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokens")
    ap.add_argument("n", type=int, nargs="?")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check")
    ap.add_argument("--find-oom", action="store_true")
    ap.add_argument("--write-tokens", action="store_true")
    a = ap.parse_args()
    if a.write_tokens:
        write_tokens(a.tokens, [int(x) for x in sys.stdin.read().split()])
        return
    if a.n is None or a.n < 1:
        ap.error("N: the number of tokens, >= 1")
    if a.find_oom:
        find_oom(a.tokens, a.n, a.threads)
        return
    ids, d, t_import, t_load = route(a.tokens, a.n, a.threads)
    t_end = time.time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10  # KiB on Linux
    if a.check:
        check(a.check, ids, d)
    print(f"hf route   {a.n} tokens, {d.shape[0]} layers x {d.shape[2]} heads x {len(EPS)} eps, {a.threads} threads: "
          f"{t_end - T0:.2f} s wall (imports {t_import - T0:.2f} s, model load {t_load - t_import:.2f} s, forward and "
          f"d_eps {t_end - t_load:.2f} s), peak RSS {rss} MiB")


if __name__ == "__main__":
    main()
