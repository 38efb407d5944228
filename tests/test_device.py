"""--device cuda against --device cpu, end to end: the same command line on
both, the traces read back with h5py and compared field by field.

The device side runs twice where it can: through build/gpu/emu/aha (the CUDA
sources on the CPU emulator, tests/gpu/emu/cuda_emu.h: always) and through
./aha on a real GPU (where one is; else one SKIP line says why). The CPU is
the reference; it is itself checked against HF transformers in
test_record.py. Models: random checkpoints this test writes (the tiny
fixtures' architectures with head_dim 64, which the CUDA kernels need: llama,
qwen2/3, olmo2, AHA, gemma2/3, Mistral / Qwen2 with native sliding windows,
Qwen3 with YaRN, Phi-3 with LongRoPE (both its factor sets), SmolLM3's NoPE
layer; a mixture of experts is refused by name) and the real SmolLM2-135M (Q4_1 + Q8_0, kept in those types on the
device) and Gemma-3 270M (Q4_K_M; its 48 tokens take about 7 s of one core on
the emulator). AHA_DEVICE_SMOL / AHA_DEVICE_GEMMA name other files of those
models (scripts/gpu-check.sh: their shapes with random weights,
tests/gpu/gguf_shape.py, the GPU machine having no models).

Decisions may differ only where the input of the decision sits at its
threshold within float noise; such cases are counted, bounded and printed.
"""
import json
import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

from ahatest import AHA, ROOT, attr_str, check, finish, safetensors_header, tokfile, write_safetensors

TINY = os.path.join(ROOT, "tests/fixtures/tiny")
SMOL = os.environ.get("AHA_DEVICE_SMOL", os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
EMU = os.path.join(ROOT, "build/gpu/emu/aha")
TMP = tempfile.mkdtemp(prefix="aha_device_")
D = 64  # head_dim of the generated checkpoints
GEMMA = os.environ.get("AHA_DEVICE_GEMMA", os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
ARCHS = ["llama_gqa", "qwen2", "qwen3", "olmo2", "llama_aha", "faolmo", "gemma2", "gemma3", "mistral_swa", "qwen2_swa",
         "qwen3_yarn", "phi3_long", "smollm3"]


def run(binary, *args, ok=True):
    r = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, cwd=ROOT)
    if ok and r.returncode != 0:
        raise AssertionError(f"{os.path.basename(binary)} {' '.join(map(str, args))}: exit "
                             f"{r.returncode}: {r.stderr.strip()}")
    return r


def widen(name, seed):
    """The tiny fixture `name` with head_dim 64 and fresh random weights."""
    src = os.path.join(TINY, name)
    cfg = json.load(open(os.path.join(src, "config.json")))
    H, KV, dim = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    d0 = dim // H
    hdr = safetensors_header(os.path.join(src, "model.safetensors"))
    rng = np.random.default_rng(seed)
    out = {}
    for key, v in sorted(hdr.items()):
        if key == "__metadata__":
            continue
        shape = list(v["shape"])
        if key.endswith("q_proj.weight"):
            shape = [H * D + (H if shape[0] == H * d0 + H else 0), dim]
        elif key.endswith("qkv_proj.weight"):
            shape = [(H + 2 * KV) * D, dim]
        elif key.endswith(("k_proj.weight", "v_proj.weight")):
            shape = [KV * D, dim]
        elif key.endswith("q_proj.bias"):
            shape = [H * D]
        elif key.endswith(("k_proj.bias", "v_proj.bias")):
            shape = [KV * D]
        elif key.endswith("o_proj.weight"):
            shape = [dim, H * D]
        elif key.endswith("q_norm.weight"):
            shape = [D] if shape[0] == d0 else [H * D]
        elif key.endswith("k_norm.weight"):
            shape = [D] if shape[0] == d0 else [KV * D]
        if key.endswith("norm.weight") or key.endswith("layernorm.weight"):
            a = 1 + 0.2 * rng.standard_normal(shape)
        elif len(shape) == 1:
            a = 0.3 * rng.standard_normal(shape)
        else:  # peaked attention: d_eps spreads over many values
            a = rng.standard_normal(shape) * (2.5 if "q_proj" in key or "k_proj" in key else 1) / np.sqrt(shape[-1])
        out[key] = a.astype(np.float32)
    dst = os.path.join(TMP, name + "_d64")
    os.makedirs(dst, exist_ok=True)
    cfg["head_dim"] = D
    if (cfg.get("rope_scaling") or {}).get("type") == "longrope":
        # longrope's lists, one factor per pair of the wider head; an original context of 32, so the
        # first context (48 tokens) takes the long factors and the others (22, 31) the short ones
        cfg["rope_scaling"] = {**cfg["rope_scaling"], "short_factor": (1 + 0.5 * rng.random(D // 2)).tolist(),
                               "long_factor": (1 + 7 * rng.random(D // 2)).tolist()}
        cfg["original_max_position_embeddings"] = 32
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    write_safetensors(os.path.join(dst, "model.safetensors"), out)
    return dst, cfg["vocab_size"]


def record(binary, model, data, tag, *args):
    out = os.path.join(TMP, tag + ".h5")
    r = run(binary, "record", model, data, "-o", out, "--force", "--quiet", *args)
    return out, r.stdout


def near(a, b, tol, rel):
    return np.abs(a.astype(np.float64) - b) <= tol + rel * np.abs(b.astype(np.float64))


def compare(cpu, dev, label, nll_tol=1e-4):
    """Trace dev equals trace cpu; returns (differing d_eps, decisions) counts."""
    with h5py.File(cpu, "r") as f, h5py.File(dev, "r") as g:
        assert attr_str(f.attrs["device"]) == "cpu", f.attrs["device"]
        assert attr_str(g.attrs["device"]).startswith("cuda:"), g.attrs["device"]
        for k in ("tokens", "position", "doc_offsets"):
            assert np.array_equal(f[k][...], g[k][...]), k
        n_dep = n_dep_all = 0
        for e in f["dependency"]:
            a, b = f["dependency"][e][...], g["dependency"][e][...]
            n_dep += int((a != b).sum())
            n_dep_all += a.size
        # d_eps moves only where a cumulative mass sits at eps within noise
        assert n_dep * 200 <= n_dep_all, f"{label}: {n_dep} of {n_dep_all} d_eps differ (> 0.5%)"
        if "mass_far" in f:  # float16 in the file: at most an ulp apart (values <= 1)
            for name in [f"mass_far/{w}" for w in f["mass_far"]] + ["mass_sinks"]:
                assert near(g[name][...], f[name][...], 1e-3, 0).all(), f"{label}: {name} differs"
        if "window_error" in f:
            for w in f["window_error"]:  # float16 in the file
                a, b = g["window_error"][w][...], f["window_error"][w][...]
                assert near(a, b, 2e-3, 2e-2).all(), f"{label}: window_error/{w} differs"
        n_gate = n_gate_all = 0
        if "gate" in f:  # learned router: differs only at logit ~ 0
            a, b, lg = f["gate"][...], g["gate"][...], f["router_logit"][...].astype(np.float64)
            bad = (a != b) & (np.abs(lg) > 2e-3)
            assert not bad.any(), f"{label}: {int(bad.sum())} learned gates differ away from logit 0"
            assert near(g["router_logit"][...], f["router_logit"][...], 2e-3, 2e-3).all(), "router logits"
            n_gate += int((a != b).sum())
            n_gate_all += a.size
        for run_name in f["runs"]:
            fr, gr = f["runs"][run_name], g["runs"][run_name]
            if "gate" in fr:
                a, b = fr["gate"][...], gr["gate"][...]
                n_gate += int((a != b).sum())
                n_gate_all += a.size
                same = np.array_equal(a, b)
            else:
                same = True
            if same:  # same decisions: same attention, same numbers
                assert np.allclose(fr["nll"][...], gr["nll"][...], atol=nll_tol, rtol=0, equal_nan=True), \
                    f"{label}: runs/{run_name}/nll differs"
                assert np.allclose(fr["kl"][...], gr["kl"][...], atol=nll_tol, rtol=1e-2), \
                    f"{label}: runs/{run_name}/kl differs"
                for k in ("flops_executed", "flops_full"):
                    assert fr.attrs[k] == gr.attrs[k], f"{label}: runs/{run_name} {k}"
        assert n_gate * 200 <= max(n_gate_all, 1), f"{label}: {n_gate} of {n_gate_all} decisions differ"
        return n_dep, n_dep_all, n_gate, n_gate_all


def docs(vocab, seed):
    rng = np.random.default_rng(seed)
    return tokfile(os.path.join(TMP, f"docs{seed}.tok"),
                   [rng.integers(0, vocab, 70).tolist(), rng.integers(0, vocab, 31).tolist()])


def case_arch(binary, name, seed):
    """Returns its comparison counts, a row per run compared."""
    STATS = []
    model, vocab = widen(name, seed)
    data = docs(vocab, seed)
    # two contexts per long document, three chunks per context (20 + 20 + 8)
    common = ["--ctx", 48, "--batch", 20, "--eps", "0.01,0.1,0.5", "--windows", "4,8,16", "--sinks", 2]
    cpu, _ = record(AHA, model, data, name + "_cpu", *common, "--werr", "--mass")
    dev, out = record(binary, model, data, name + "_dev", *common, "--werr", "--mass", "--device", "cuda")
    assert "f32 products; weights resident on the device" in out, out  # the summary names the device
    STATS.append((name + " observe",) + compare(cpu, dev, name))
    rep = json.loads(run(AHA, "report", dev, "--out-format", "json").stdout)
    assert rep["traces"][0]["device"] == "cuda:f32", rep["traces"][0]["device"]
    for route in (["--route", "random:0.3", "--window", 8], ["sweep", "--route", "oracle"]):
        sweep = route[0] == "sweep"
        args = common + (route[1:] if sweep else route)
        tag = name + ("_sweep" if sweep else "_random")
        if sweep:
            for b, t in ((AHA, "_cpu"), (binary, "_dev")):
                run(b, "sweep", model, data, "-o", os.path.join(TMP, tag + t + ".h5"), "--force", "--quiet",
                    *args, *(["--device", "cuda"] if t == "_dev" else []))
            cpu, dev = os.path.join(TMP, tag + "_cpu.h5"), os.path.join(TMP, tag + "_dev.h5")
        else:
            cpu, _ = record(AHA, model, data, tag + "_cpu", *args)
            dev, _ = record(binary, model, data, tag + "_dev", *args, "--device", "cuda")
        STATS.append((tag.replace("_", " "),) + compare(cpu, dev, tag))
    if name in ("llama_aha", "faolmo"):
        args = common + ["--route", "learned", "--window", 8]
        cpu, _ = record(AHA, model, data, name + "_learned_cpu", *args)
        dev, _ = record(binary, model, data, name + "_learned_dev", *args, "--device", "cuda")
        STATS.append((name + " learned",) + compare(cpu, dev, name + " learned"))
    return STATS


def case_smollm2(binary):
    STATS = []
    text = os.path.join(TMP, "smol.txt")
    with open(text, "w") as f:
        f.write(open(os.path.join(ROOT, "README.md")).read()[:1500])
    common = ["--ctx", 40, "--batch", 16, "--eps", "0.01,0.1", "--windows", "8,16", "--sinks", 4,
              "--max-tokens", 40, "--data-format", "text"]
    cpu, _ = record(AHA, SMOL, text, "smol_cpu", *common)
    dev, out = record(binary, SMOL, text, "smol_dev", *common, "--device", "cuda")
    STATS.append(("SmolLM2 observe",) + compare(cpu, dev, "SmolLM2"))
    resident(out, SMOL, "SmolLM2")
    p_cpu = run(AHA, "ppl", SMOL, text, "--ctx", 32, "--batch", 12, "--max-tokens", 48).stdout
    p_dev = run(binary, "ppl", SMOL, text, "--ctx", 32, "--batch", 12, "--max-tokens", 48,
                "--device", "cuda").stdout
    a, b = float(p_cpu.split()[4]), float(p_dev.split()[4])
    assert abs(a - b) <= 1e-4, f"ppl mean nll cpu {a} vs cuda {b}"
    g_cpu = run(AHA, "generate", SMOL, "The capital of France is", "-n", 4).stdout
    g_dev = run(binary, "generate", SMOL, "The capital of France is", "-n", 4, "--device", "cuda").stdout
    assert g_cpu == g_dev, f"greedy text differs: {g_cpu!r} vs {g_dev!r}"
    return STATS


def resident(out, model, label):
    """The record summary's weights on the device (kernels/cuda/weight.cu keeps them as stored) against
    what the CPU holds of the same model (aha info --json: the stored tensors in place, plus the norms it
    converts at load): equal within 1% (the device adds the RoPE tables), and the products' decode tile
    at most 32 MiB (AHA_GPU_TILE f32 values). Prints both against the file's size."""
    m = re.search(r"weights resident on the device: ([\d.]+) MiB \(([A-Z0-9_+]+)\) \+ ([\d.]+) MiB decode tile", out)
    assert m, f"{label}: no resident weights in the summary: {out!r}"
    info = json.loads(run(AHA, "info", model, "--json").stdout)["resident"]
    host = (info["mapped_bytes"] + info["f32_bytes"]) / 2**20
    dev, tile, size = float(m.group(1)), float(m.group(3)), os.path.getsize(model) / 2**20
    assert abs(dev - host) <= 0.01 * host + 0.1 and tile <= 32, f"{label}: {dev} MiB on the device, CPU {host}"
    print(f"  {label}: {dev:.1f} MiB of weights on the device ({m.group(2)}) + {tile:.1f} MiB decode tile; "
          f"the CPU holds {host:.1f} MiB; the file is {size:.1f} MiB")


def case_gemma(binary):
    """Gemma-3 270M (Q4_K_M: head_dim 256, 5 local layers of 6 with a window of 512 and their own RoPE
    base, (1 + w) norms, GeGLU, scaled tied embeddings, query_pre_attn_scalar): the trace of --device
    cuda equals the CPU's, its weights stay as stored. On a GPU over 1000 tokens in contexts of 768 (the
    windows drop keys); on the emulator one context of 48 (about 7 s of one core there)."""
    text = os.path.join(TMP, "gemma.txt")
    with open(text, "w") as f:
        f.write(open(os.path.join(ROOT, "README.md")).read())
    n = 48 if binary == EMU else 1000
    common = ["--ctx", min(n, 768), "--batch", min(n, 256), "--eps", "0.01,0.1", "--windows", "16,64,256",
              "--sinks", 4, "--max-tokens", n, "--data-format", "text"]
    cpu, _ = record(AHA, GEMMA, text, "gemma_cpu", *common)
    dev, out = record(binary, GEMMA, text, "gemma_dev", *common, "--device", "cuda")
    resident(out, GEMMA, "Gemma-3 270M")
    return [("Gemma-3 270M observe",) + compare(cpu, dev, "Gemma-3 270M")]


def case_errors(binary):
    model, vocab = widen("llama_gqa", 5)
    data = docs(vocab, 1)
    out = os.path.join(TMP, "x.h5")
    # What the CUDA backend lacks is refused by name, before a device is looked for (every architecture
    # runs: ARCHS; only a head_dim without attention kernels is refused)
    lacks = ("--device cuda: the CUDA backend lacks attention kernels for head_dim 16 (64, 96, 128, 256), which "
             "this model needs; use --device cpu")
    moe, _ = widen("olmoe", 6)
    lacks_moe = "--device cuda: the CUDA backend lacks mixture-of-experts MLP blocks, which this model needs; use --device cpu"
    for args, want in (([os.path.join(TINY, "llama_gqa"), "--device", "cuda"], lacks), ([moe, "--device", "cuda"], lacks_moe),
                       ([model, "--device", "cpu", "--dtype", "f16"], "f16 is for --device cuda"),
                       ([model, "--device", "tpu"], "unknown device 'tpu'"),
                       ([model, "--device", "cuda", "--dtype", "f8"], "unknown type 'f8'")):
        r = run(binary, "record", args[0], data, "-o", out, *args[1:], ok=False)
        assert r.returncode == 1 and want in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert not os.path.exists(out), "a trace was left behind"


def case_failures(binary):
    """The emulator's injected failures (AHA_EMU_FAIL, tests/gpu/emu/cuda_emu.h):
    a launch failing mid-run, and allocations failing in turn from the model
    upload to the first call, each end `aha record --device cuda` with exit 1
    and one line, never a crash; the trace keeps every completed context,
    equal to the CPU's."""
    model, vocab = widen("llama_gqa", 5)
    data = docs(vocab, 1)  # 70 + 31 tokens: three contexts of at most 48
    args = ["--ctx", 48, "--batch", 20, "--eps", "0.01,0.1", "--quiet"]
    cpu, _ = record(AHA, model, data, "fail_cpu", *args)
    out = os.path.join(TMP, "fail_dev.h5")

    def failing(spec):
        env = {**os.environ, "AHA_EMU_FAIL": spec, "AHA_EMU_STATS": "1"}
        r = subprocess.run([binary, "record", model, data, "-o", out, "--force", *map(str, args), "--device", "cuda"],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        lines = [x for x in r.stderr.splitlines() if not x.startswith("emu: ")]
        stats = [x for x in r.stderr.splitlines() if x.startswith("emu: ")]
        return r.returncode, lines, stats

    rc, lines, stats = failing("launch:0")  # nothing fails: how many launches and allocations a run makes
    assert rc == 0 and not lines, (rc, lines)
    n_launch, n_alloc = (int(w) for w in stats[0].split()[1::2])
    rc, lines, _ = failing(f"launch:{n_launch // 2}")
    assert rc == 1 and len(lines) == 1, (rc, lines)
    assert "CUDA error cudaErrorLaunchOutOfResources" in lines[0] and ".cu:" in lines[0], lines[0]
    with h5py.File(cpu, "r") as f, h5py.File(out, "r") as g:
        n, offs = g["tokens"].shape[0], g["doc_offsets"][...]
        assert 1 <= len(offs) - 1 < len(f["doc_offsets"]) - 1, f"{len(offs) - 1} contexts kept"
        assert np.array_equal(offs, f["doc_offsets"][: len(offs)]), (offs, f["doc_offsets"][...])
        assert np.array_equal(g["tokens"][...], f["tokens"][:n]), "tokens"
        for e in f["dependency"]:
            a, b = f["dependency"][e][:, :n], g["dependency"][e][...]
            assert a.shape == b.shape and (a != b).sum() * 200 <= a.size, f"dependency/{e}"
    print(f"  launch {n_launch // 2} of {n_launch} failed: exit 1, {lines[0]!r}; "
          f"the trace keeps {len(offs) - 1} completed contexts ({n} tokens), equal to the cpu's")
    for k in range(1, n_alloc + 1, 3):  # the upload, the state, the first call's buffers
        rc, lines, _ = failing(f"alloc:{k}")
        assert rc == 1 and len(lines) == 1 and lines[0].startswith("aha: "), (k, rc, lines)
    print(f"  allocations 1, 4, .. of {n_alloc} failed in turn: exit 1 and one line each")


# Bounds on |nll(cuda) - nll(cpu)| per token, mean and max: bf16 keeps 8
# mantissa bits, f16 11, in the weights, the GEMM inputs and (tensor-core
# attention) Q, K, V and the probabilities.
HALF_NLL = {"bf16": (0.04, 0.3), "f16": (0.005, 0.05)}


def case_half(binary, dtype):
    """f16 / bf16 weights: near the CPU, not equal. Routed global equals the
    full run bit for bit: both attend with the same tensor-core kernel."""
    model, vocab = widen("llama_gqa", 3)
    data = docs(vocab, 3)
    common = ["--ctx", 48, "--batch", 20, "--eps", "0.01,0.1", "--windows", "4,8,16", "--sinks", 2]
    cpu, _ = record(AHA, model, data, "half_cpu", *common)
    dev, _ = record(binary, model, data, "half_dev_" + dtype, *common, "--device", "cuda", "--dtype", dtype)
    with h5py.File(cpu, "r") as f, h5py.File(dev, "r") as g:
        assert attr_str(g.attrs["device"]) == "cuda:" + dtype, g.attrs["device"]
        a, b = f["runs/full/nll"][...], g["runs/full/nll"][...]
        ok = np.isfinite(a)
        d = np.abs(a[ok] - b[ok])
        mean, most = HALF_NLL[dtype]
        assert d.mean() <= mean and d.max() <= most, f"nll: mean |diff| {d.mean():.3g}, max {d.max():.3g}"
        far = total = 0
        for e in f["dependency"]:
            x, y = f["dependency"][e][...].astype(int), g["dependency"][e][...].astype(int)
            far += int((np.abs(x - y) > np.maximum(2, x // 10)).sum())
            total += x.size
        assert far * 10 <= total, f"{far} of {total} d_eps moved by more than max(2, 10%)"
        print(f"  {dtype}: nll mean |diff| {d.mean():.3g} max {d.max():.3g}; "
              f"d_eps moved by more than max(2, 10%): {far}/{total}")
    glob, _ = record(binary, model, data, "half_global_" + dtype, "--ctx", 48, "--batch", 20, "--route", "global",
                     "--window", 4, "--device", "cuda", "--dtype", dtype)
    with h5py.File(glob, "r") as g:
        assert np.array_equal(g["runs/full/nll"][...], g["runs/w4/nll"][...], equal_nan=True), "global != full"
        assert (g["runs/w4/kl"][...] == 0).all(), "KL of routed global vs full is not 0"


def real_device():
    """None when ./aha runs on a CUDA device; else the reason it cannot."""
    model, vocab = widen("llama_gqa", 2)
    r = run(AHA, "record", model, docs(vocab, 2), "-o", os.path.join(TMP, "probe.h5"), "--force",
            "--quiet", "--max-tokens", 8, "--device", "cuda", ok=False)
    return None if r.returncode == 0 else r.stderr.strip().removeprefix("aha: ")


def reported(future):
    """For check(): the case's result (re-raising what it raised), its counts printed."""
    def fn():
        for row in future.result():
            print("  %-22s d_eps differing %d/%d; decisions differing %d/%d" % row)
    return fn


# A build without nvcc has no emulator binary: say so (make test builds it
# wherever nvcc exists, and CI has nvcc).
backends = [("cpu emulator", EMU)] if os.access(EMU, os.X_OK) else []
if not backends:
    print("SKIP cuda emulator: build/gpu/emu/aha was not built (kernels/cuda/cuda.mk)")
why = real_device()
if why is None:
    backends.append(("gpu", AHA))
else:
    print(f"SKIP --device cuda on a real GPU: {why}")

    def no_device_error():
        assert "no CUDA device" in why or "has no CUDA backend" in why, why
        assert "\n" not in why, why

    check("--device cuda without a device: one clear error, exit 1", no_device_error)
# The cases of one backend run at once, three at a time: each (architecture,
# SmolLM2) writes its own files, and the emulator's single thread overlaps
# with the CPU's runs. Results are checked in order.
pool = ThreadPoolExecutor(3)
for label, binary in backends:
    smol = pool.submit(case_smollm2, binary) if os.path.exists(SMOL) else None  # the longest: first
    gemma = pool.submit(case_gemma, binary) if os.path.exists(GEMMA) else None
    cases = [(f"[{label}] {name} (head_dim 64): cuda trace equals cpu (observe with --werr and --mass, random, oracle sweep"
              f"{', learned' if name in ('llama_aha', 'faolmo') else ''})", pool.submit(case_arch, binary, name, i + 11))
             for i, name in enumerate(ARCHS)]
    if smol:
        cases.append((f"[{label}] SmolLM2: cuda trace, ppl and greedy text equal cpu; weights resident as stored", smol))
    if gemma:
        cases.append((f"[{label}] Gemma-3 270M: cuda trace equals cpu; weights resident as stored", gemma))
    for name, future in cases:
        check(name, reported(future))
    if not smol:  # the GPU machine has no model hub and no copy of the model
        print(f"SKIP [{label}] SmolLM2: {SMOL} is not on this machine (make test fetches it)")
    if not gemma:
        print(f"SKIP [{label}] Gemma-3 270M: {GEMMA} is not on this machine (make test fetches it)")
    check(f"[{label}] bad --device / --dtype / head_dim: one-line errors, no trace", lambda b=binary: case_errors(b))
    if binary == EMU:
        check(f"[{label}] injected launch / allocation failures: exit 1, one line, completed contexts kept",
              lambda b=binary: case_failures(b))
    for dt in os.environ.get("AHA_DEVICE_DTYPES", "bf16,f16").split(","):
        if dt != "f32":
            check(f"[{label}] --dtype {dt}: trace near the cpu's", lambda b=binary, d=dt: case_half(b, d))
finish()
