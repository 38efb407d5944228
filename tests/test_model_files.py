"""Model files read exactly, or refused (docs/bad-input.md, "Model files"): every
tensor used or refused by name, every key and config field read or refused, the
GGUF tensor table checked as ggml checks it, llama.cpp's Llama-3 rope_freqs
applied, Gemma's GGUF keys read, and a NaN or Inf stopping the run.

The references: HF transformers' goldens under tests/fixtures/tiny (llama3_long:
logits, NLL and d_eps past position 8192; gemma3_legacy), gguf-py to write and
edit the files, h5py to read the traces. Each bad file is one line naming the
file and the problem, and a non-zero exit."""
import json
import os
import shutil
import struct
import tempfile

import h5py
import numpy as np

import gguf
from ahatest import ROOT, aha, check, check_deps, finish, safetensors_header, tokfile, write_safetensors

TINY = os.path.join(ROOT, "tests/fixtures/tiny")
SMOL = os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
TMP = tempfile.mkdtemp(prefix="aha_model_files_")
LONG = json.load(open(os.path.join(TINY, "llama3_long/golden.json")))


def tmp(name):
    return os.path.join(TMP, name)


def refused(args, *phrases):
    """aha ARGS exits non-zero with one line holding every phrase."""
    r = aha(*args, ok=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0, f"exit 0: {r.stdout}"
    assert len(lines) == 1, f"want one line, got {lines}"
    for p in phrases:
        assert p in lines[0], f"{lines[0]!r} lacks {p!r}"
    return lines[0]


# ---- GGUF copies, written or edited -------------------------------------------------

def rewrite(src, dst, drop=(), add_tensors=None, add_kv=None, edit=None, arch=None, drop_kv=()):
    """src's keys and tensors written again by gguf-py's GGUFWriter (the converter's own
    writer) into dst: without the tensors in drop and the keys in drop_kv, plus add_tensors
    {name: array}, plus add_kv {key: (GGUFValueType, value)}; edit(name, array) may return a new
    array; arch: another general.architecture (the keys renamed to it)."""
    r = gguf.GGUFReader(src)
    was = r.fields["general.architecture"].contents()
    arch = arch or was
    w = gguf.GGUFWriter(dst, arch)
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture" or k in (add_kv or {}) or k in drop_kv:
            continue
        if k.startswith(was + "."):
            k = arch + k[len(was):]
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_key_value(k, f.contents(), t, sub_type=f.types[-1])
        else:
            w.add_key_value(k, f.contents(), t)
    for k, (t, v) in (add_kv or {}).items():
        w.add_key_value(k, v, t, sub_type=gguf.GGUFValueType.BOOL if t == gguf.GGUFValueType.ARRAY else None)
    for t in r.tensors:
        if t.name in drop:
            continue
        a = np.array(t.data)
        if edit:
            a = edit(t.name, a)
        if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor(t.name, a.reshape([int(x) for x in reversed(t.shape)]))
        else:
            w.add_tensor(t.name, a, raw_dtype=t.tensor_type)
    for name, a in (add_tensors or {}).items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def info_offsets(path):
    """{tensor name: (byte offset of its ggml type field, of its data offset field, data offset)}."""
    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        name_len = len(t.name.encode())
        at = t.field.offset + 8 + name_len + 4 + 8 * len(t.shape)
        out[t.name] = (at, at + 4, int(t.field.parts[-1][0]))
    return out


def patched(src, dst, at, fmt, value):
    shutil.copy(src, dst)
    with open(dst, "r+b") as f:
        f.seek(at)
        f.write(struct.pack(fmt, value))
    return dst


# ---- Llama-3 rope scaling at long positions ---------------------------------------

def long_trace(model, name, ids=None, eps=None, extra=()):
    """aha record over the golden's ids as one context: the trace's nll and d_eps (and the
    routed runs' nll, by run name, with extra)."""
    ids = ids or LONG["ids"]
    eps = eps or LONG["eps"]
    data = tokfile(tmp(name + ".tok"), [ids])
    out = tmp(name + ".h5")
    aha("record", model, data, "-o", out, "--ctx", len(ids), "--eps", ",".join(map(str, eps)),
        "--windows", "16", "--quiet", "--force", *extra)
    with h5py.File(out, "r") as f:
        deps = [f[f"dependency/eps_{e:g}"][...] for e in eps]
        if extra:
            return {r: f[f"runs/{r}/nll"][...] for r in f["runs"]}, deps
        return f["runs/full/nll"][...], deps


def check_long(model, name):
    nll, deps = long_trace(model, name)
    want = np.asarray(LONG["nll"], np.float64)
    err = np.abs(nll[:-1] - want)
    assert err.max() < 2e-5, f"max |nll - HF| = {err.max():.3g} at token {int(err.argmax())}"  # measured 4.3e-6
    assert np.isnan(nll[-1]), "the last token has no target"
    check_deps(deps, LONG["triples"])
    return nll, deps


def test_llama3_safetensors():
    check_long(os.path.join(TINY, "llama3_long"), "st")


def test_llama3_gguf():
    """llama.cpp's form of the same scaling (rope_freqs.weight, no key) gives HF's numbers
    past 8192, and the safetensors' numbers."""
    g_nll, g_deps = check_long(os.path.join(TINY, "llama3_long_gguf/model.gguf"), "gguf")
    s_nll, s_deps = long_trace(os.path.join(TINY, "llama3_long"), "st2")
    assert np.nanmax(np.abs(g_nll - s_nll)) < 2e-5, np.nanmax(np.abs(g_nll - s_nll))
    same = np.mean([np.mean(a == b) for a, b in zip(g_deps, s_deps)])
    assert same > 0.999, f"only {same:.4f} of the d_eps agree between the two files"


def test_llama3_info():
    j = json.loads(aha("info", "--json", os.path.join(TINY, "llama3_long_gguf/model.gguf")).stdout)
    want = json.load(open(os.path.join(TINY, "llama3_long_gguf/golden.json")))["factors"]
    assert j["rope"]["freq_factors"] == want, j["rope"]
    text = aha("info", os.path.join(TINY, "llama3_long_gguf/model.gguf")).stdout
    assert "scaling llama3 (per-pair divisors from rope_freqs.weight: 4 x1, 3 x8, 1 between)" in text, text


def test_rope_freqs_ones_and_absent():
    """rope_freqs of all 1.0 computes exactly what the file without it does; the real
    table computes something else past 8192 (and HF's numbers, test_llama3_gguf)."""
    src = os.path.join(TINY, "llama3_long_gguf/model.gguf")
    ones = rewrite(src, tmp("ones.gguf"), edit=lambda n, a: np.ones_like(a) if n == "rope_freqs.weight" else a)
    none = rewrite(src, tmp("none.gguf"), drop=("rope_freqs.weight",))
    ids = LONG["ids"][:8400]
    a, _ = long_trace(ones, "ones", ids)
    b, _ = long_trace(none, "none", ids)
    real, _ = long_trace(src, "real", ids)
    assert np.array_equal(a, b, equal_nan=True), "rope_freqs of ones changed the numbers"
    assert np.nanmax(np.abs(real[8192:] - b[8192:])) > 1e-2, "the real factors changed nothing past 8192"


def test_rope_freqs_bad():
    src = os.path.join(TINY, "llama3_long_gguf/model.gguf")
    bad = rewrite(src, tmp("neg.gguf"), edit=lambda n, a: -a if n == "rope_freqs.weight" else a)
    refused(["info", bad], bad, "rope_freqs.weight", "finite and positive")
    short = rewrite(src, tmp("short.gguf"), drop=("rope_freqs.weight",),
                    add_tensors={"rope_freqs.weight": np.ones(4, np.float32)})
    refused(["info", short], short, "rope_freqs.weight", "8 f32 factors")
    # llama.cpp reads rope_freqs for llama only: in another architecture it is an unused tensor
    g3 = rewrite(os.path.join(TINY, "gemma3_gguf/model.gguf"), tmp("g3_freqs.gguf"),
                 add_tensors={"rope_freqs.weight": np.ones(8, np.float32)})
    refused(["info", g3], g3, "tensor 'rope_freqs.weight' is not used by aha's gemma3")


# ---- YaRN, LongRoPE, NoPE layers, mixtures of experts: HF's numbers past the switch ----

SCHEMES = ["qwen3_yarn", "phi3_long", "smollm3", "olmoe", "qwen2_moe", "qwen3_moe", "qwen3_moe_dense", "mixtral"]
MEASURED = {}  # the largest |nll - HF| of each, printed at the end


def scheme_path(name):
    return os.path.join(TINY, name, "model.gguf") if name.endswith("_gguf") else os.path.join(TINY, name)


def check_scheme(name):
    """aha record over long.json's ids (HF's sequence, one context): the NLL of every token and the
    d_eps of the sampled triples equal HF's, past the scheme's switch point (yarn and longrope: the
    original context, 64; NoPE: deep into the context; MoE: the whole sequence); longrope's short
    factors over its first 64 tokens too (a context that short takes them, as HF's rule has it)."""
    folder = name.removesuffix("_gguf")
    g = json.load(open(os.path.join(TINY, folder, "long.json")))
    nll, deps = long_trace(scheme_path(name), name, g["ids"], g["eps"])
    err = float(np.abs(nll[:-1] - np.asarray(g["nll"])).max())
    assert err < 2e-5, f"{name}: max |nll - HF| = {err:.3g}"
    assert np.isnan(nll[-1])
    check_deps(deps, g["triples"])
    if "short" in g:
        sh = g["short"]
        nll, deps = long_trace(scheme_path(name), name + "_short", g["ids"][:sh["n"]], g["eps"])
        e2 = float(np.abs(nll[:-1] - np.asarray(sh["nll"])).max())
        assert e2 < 2e-5, f"{name} (short factors): max |nll - HF| = {e2:.3g}"
        check_deps(deps, sh["triples"])
        err = max(err, e2)
    MEASURED[name] = err


def test_schemes():
    for name in SCHEMES:
        check_scheme(name)
        if os.path.exists(os.path.join(TINY, name + "_gguf")):
            check_scheme(name + "_gguf")
    print("  max |nll - HF|: " + ", ".join(f"{k} {v:.2g}" for k, v in MEASURED.items()))


def test_scheme_routed():
    """Routed runs on each family: every decision global equals full attention bit for bit, and an
    oracle run's NLL stays finite."""
    for name in ("qwen3_yarn", "phi3_long", "smollm3", "qwen2_moe", "mixtral_gguf"):
        g = json.load(open(os.path.join(TINY, name.removesuffix("_gguf"), "long.json")))
        ids = g["ids"][:96]
        runs, _ = long_trace(scheme_path(name), name + "_glob", ids, g["eps"], ("--route", "global", "--window", "8"))
        routed = [r for r in runs if r != "full"]
        assert len(routed) == 1 and np.array_equal(runs[routed[0]], runs["full"], equal_nan=True), (name, list(runs))
        runs, _ = long_trace(scheme_path(name), name + "_orac", ids, g["eps"], ("--route", "oracle", "--window", "8"))
        assert all(np.isfinite(v[:-1]).all() for v in runs.values()), name


def test_longrope_generate():
    """aha generate across longrope's switch point gives HF generate's greedy text: the prompt (60
    tokens) takes the short factors, and once the sequence reaches 65 tokens the whole of it is
    recomputed with the long ones (Phi3ForCausalLM.prepare_inputs_for_generation)."""
    gr = json.load(open(os.path.join(TINY, "phi3_long", "long.json")))["greedy"]
    r = aha("generate", os.path.join(TINY, "phi3_long"), gr["prompt"], "-n", len(gr["new_ids"]))
    assert r.stdout == gr["text"] + "\n", (r.stdout, gr["text"])


def test_scheme_fit():
    """aha fit on contexts past longrope's switch (its fit passes declare each context's length) and
    on a mixture of experts; the router file then routes a record of each."""
    rng = np.random.default_rng(5)
    data = tokfile(tmp("fit_docs.tok"), [rng.integers(0, 128, 200).tolist() for _ in range(4)])
    for name in ("phi3_long", "qwen3_moe_gguf"):
        out = tmp(name + "_fit.safetensors")
        aha("fit", scheme_path(name), data, "-o", out, "--ctx", 100, "--window", 8, "--holdout", 0.5, "--quiet")
        runs, _ = long_trace(scheme_path(name), name + "_fitted", rng.integers(0, 128, 100).tolist(), [0.1],
                             ("--router", out, "--route", "learned", "--window", 8))
        assert all(np.isfinite(v[:-1]).all() for v in runs.values()) and len(runs) == 2, (name, list(runs))


def test_scheme_info():
    """aha info names each scheme with its parameters, as the files state them."""
    j = json.loads(aha("info", "--json", os.path.join(TINY, "qwen3_yarn_gguf/model.gguf")).stdout)
    g = json.load(open(os.path.join(TINY, "qwen3_yarn/long.json")))
    r = j["rope"]
    assert (r["scaling"], r["factor"], r["original_context"], r["beta_fast"], r["beta_slow"], r["truncate"]) == \
        ("yarn", 4, 64, 16, 2, True), r
    assert abs(r["attention_factor"] - g["attention_factor"]) < 1e-6, (r, g["attention_factor"])
    text = aha("info", os.path.join(TINY, "qwen3_yarn")).stdout
    assert "scaling yarn (factor 4, original context 64, beta_fast 16, beta_slow 2; attention factor 1.13863" in text, text
    cfg = json.load(open(os.path.join(TINY, "phi3_long/config.json")))
    for path in ("phi3_long", "phi3_long_gguf/model.gguf"):
        r = json.loads(aha("info", "--json", os.path.join(TINY, path)).stdout)["rope"]
        assert r["scaling"] == "longrope" and r["original_context"] == 64, r
        assert np.array_equal(np.float32(r["short_factors"]), np.float32(cfg["rope_scaling"]["short_factor"])), r
        assert np.array_equal(np.float32(r["long_factors"]), np.float32(cfg["rope_scaling"]["long_factor"])), r
        assert abs(r["attention_factor"] - (1 + np.log(4) / np.log(64)) ** 0.5) < 1e-6, r
    for path, notes in (("smollm3", []), ("smollm3_gguf/model.gguf",
                                          ["NoPE layers by llama.cpp's rule for smollm3: every 4th (no key says)"])):
        j = json.loads(aha("info", "--json", os.path.join(TINY, path)).stdout)
        assert j["rope"]["nope_layers"] == [3] and j["defaults"] == notes, j
    assert "no RoPE (NoPE) on layers 3" in aha("info", os.path.join(TINY, "smollm3")).stdout
    for path, want in (("olmoe", (4, 2, 32, 0, False, [0, 1])), ("qwen2_moe_gguf/model.gguf", (4, 2, 32, 48, False, [0, 1])),
                       ("qwen3_moe_dense", (4, 2, 32, 0, True, [0, 2])), ("mixtral_gguf/model.gguf", (4, 2, 32, 0, True, [0, 1]))):
        m = json.loads(aha("info", "--json", os.path.join(TINY, path)).stdout)["moe"]
        got = (m["experts"], m["experts_used"], m["expert_ffn"], m["shared_ffn"], m["renormalised"], m["layers"])
        assert got == want, (path, got, want)
    text = aha("info", os.path.join(TINY, "qwen2_moe")).stdout
    assert "experts       4, top 2 by softmax probability, expert ffn 32, shared expert 48 (sigmoid gate); layers 0-1" \
        in text, text


def test_moe_stored():
    """The experts stay in the mapping in their stored type: a GGUF's stacked tensors are mapped,
    not converted (aha info's resident bytes are the file's tensors)."""
    for path in ("olmoe_gguf/model.gguf", "qwen2_moe_gguf/model.gguf"):
        r = gguf.GGUFReader(os.path.join(TINY, path))
        res = json.loads(aha("info", "--json", os.path.join(TINY, path)).stdout)["resident"]
        assert res["mapped_bytes"] == sum(int(t.n_bytes) for t in r.tensors) and res["f32_bytes"] == 0, res


def test_moe_bf16():
    """--dtype bf16 runs the experts as bf16 products too: the NLL near the f32 run's."""
    g = json.load(open(os.path.join(TINY, "qwen2_moe/long.json")))
    data = tokfile(tmp("bf.tok"), [g["ids"]])
    got = {}
    for dt in ("f32", "bf16"):
        out = tmp(f"bf_{dt}.h5")
        aha("record", os.path.join(TINY, "qwen2_moe"), data, "-o", out, "--quiet", "--force", "--dtype", dt)
        with h5py.File(out, "r") as f:
            got[dt] = f["runs/full/nll"][:-1]
    d = np.abs(got["bf16"] - got["f32"])
    # bf16 operands: not the same numbers, near them (median 0.008 measured); a few tokens whose
    # routing flips between near-equal experts move further (up to 1.0)
    assert 0 < np.median(d) < 0.03 and np.mean(d) < 0.06, (np.median(d), np.mean(d))


def test_scheme_refusals():
    """What is not built is refused by name."""
    d = st_copy("olmoe", tmp("cf_clip"), config={"clip_qkv": 8.0})
    refused(["info", d], "config.json", '"clip_qkv" is 8: not implemented (only null)')
    d = st_copy("qwen2_moe", tmp("cf_swa"), config={"use_sliding_window": True})
    refused(["info", d], "config.json", '"use_sliding_window" is true: not implemented (only false)')
    d = st_copy("smollm3", tmp("cf_nope"), config={"no_rope_layers": [1, 1]})
    refused(["info", d], "config.json", "no_rope_layers has 2 entries for 4 layers")
    d = st_copy("phi3_long", tmp("cf_lr"), config={"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 3,
                                                                     "long_factor": [1.0] * 8}})
    refused(["info", d], "config.json", "longrope needs short_factor: 8 numbers (head_dim / 2)")
    d = st_copy("qwen3_yarn", tmp("cf_dyn"), config={"rope_scaling": {"type": "dynamic", "factor": 2.0}})
    refused(["info", d], "config.json", "rope scaling 'dynamic' is not implemented")
    p = rewrite(os.path.join(TINY, "phi3_long_gguf/model.gguf"), tmp("lr_drop.gguf"), drop=("rope_factors_short.weight",))
    refused(["info", p], p, "longrope needs tensor 'rope_factors_short.weight': 8 f32 factors")
    data = tokfile(tmp("fit.tok"), [list(range(3, 100))])
    for name, what in (("phi3_long", "fused projections"), ("olmoe", "mixture-of-experts MLPs")):
        out = tmp(name + "_router.safetensors")
        refused(["fit", os.path.join(TINY, name), data, "-o", out, "--export", tmp(name + "_export"), "--ctx", "48",
                 "--window", "8"], f"which --export does not write", what)


# ---- every tensor used or refused ---------------------------------------------------

def test_unused_tensor_gguf():
    p = rewrite(os.path.join(TINY, "llama_gguf/model.gguf"), tmp("extra.gguf"),
                add_tensors={"blk.0.attn_output.bias": np.zeros(64, np.float32)})
    refused(["info", p], p, "tensor 'blk.0.attn_output.bias' is not used by aha's llama")


def st_copy(name, dst, tensors=None, config=None, drop=()):
    """A copy of fixture folder name at dst, with tensors added or replaced and config fields set
    (None: deleted)."""
    src = os.path.join(TINY, name)
    shutil.copytree(src, dst, dirs_exist_ok=True)
    hdr = safetensors_header(os.path.join(src, "model.safetensors"))
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + n)
        blob = f.read()
    t = {}
    for k, v in hdr.items():
        if k == "__metadata__" or k in drop:
            continue
        a, b = v["data_offsets"]
        assert v["dtype"] == "F32", v
        t[k] = np.frombuffer(blob[a:b], "<f4").reshape(v["shape"])
    t.update(tensors or {})
    write_safetensors(os.path.join(dst, "model.safetensors"), t)
    cfg = json.load(open(os.path.join(src, "config.json")))
    for k, v in (config or {}).items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    return dst


def test_unused_tensor_safetensors():
    d = st_copy("llama_gqa", tmp("st_extra"), {"model.layers.0.mlp.extra.weight": np.zeros((2, 2), np.float32)})
    refused(["info", d], "model.safetensors", "tensor 'model.layers.0.mlp.extra.weight' is not used by aha's llama")


def test_stray_bias_safetensors():
    """HF's Llama has no q/k/v biases unless attention_bias says so (and ignores such tensors):
    a stray one is refused, not applied."""
    d = st_copy("llama_gqa", tmp("st_bias"), {"model.layers.0.self_attn.q_proj.bias": np.ones(64, np.float32)})
    refused(["info", d], "tensor 'model.layers.0.self_attn.q_proj.bias' is not used by aha's llama")


def test_tied_head():
    """A tied model whose file holds an lm_head: HF ties it to the embeddings, so it must be them."""
    hdr = safetensors_header(os.path.join(TINY, "llama_gqa/model.safetensors"))
    emb_shape = hdr["model.embed_tokens.weight"]["shape"]
    rng = np.random.default_rng(1)
    d = st_copy("llama_gqa", tmp("st_tied"), {"lm_head.weight": rng.standard_normal(emb_shape).astype(np.float32)},
                {"tie_word_embeddings": True})
    refused(["info", d], "lm_head.weight' differs from the embeddings")


def test_inv_freq_buffer():
    """An older checkpoint's saved rotary_emb.inv_freq: checked against the config's RoPE."""
    inv = (1.0 / (10000.0 ** (np.arange(0, 16, 2, dtype=np.float32) / 16))).astype(np.float32)
    ok = st_copy("llama_gqa", tmp("st_inv_ok"), {f"model.layers.{l}.self_attn.rotary_emb.inv_freq": inv for l in (0, 1)})
    aha("info", ok)
    bad = st_copy("llama_gqa", tmp("st_inv_bad"), {"model.layers.1.self_attn.rotary_emb.inv_freq": inv / 2})
    refused(["info", bad], "rotary_emb.inv_freq' [0] is 0.5, but the config's RoPE gives 1")


def test_vision_tower_ignored():
    """A multimodal Gemma-3's vision tower is the one deliberate omission: aha runs on text."""
    d = st_copy("gemma3_mm", tmp("mm_vision"), {"model.vision_tower.vision_model.post_layernorm.weight":
                                                np.ones(8, np.float32)})
    aha("info", d)


# ---- every key and field read or refused -------------------------------------------

def test_gguf_keys():
    src = os.path.join(TINY, "llama_gguf/model.gguf")
    T = gguf.GGUFValueType
    p = rewrite(src, tmp("yarn_key.gguf"), add_kv={"llama.rope.scaling.yarn_log_multiplier": (T.FLOAT32, 0.1)})
    refused(["info", p], p, "key 'llama.rope.scaling.yarn_log_multiplier' is not implemented for llama")
    p = rewrite(src, tmp("dyn.gguf"), add_kv={"llama.rope.scaling.type": (T.STRING, "dynamic")})
    refused(["info", p], p, "'llama.rope.scaling.type' is 'dynamic': not implemented (none, linear, yarn, longrope)")
    p = rewrite(src, tmp("yarn.gguf"), add_kv={"llama.rope.scaling.type": (T.STRING, "yarn")})
    refused(["info", p], p, "yarn rope scaling without rope.scaling.factor")
    p = rewrite(src, tmp("beta.gguf"), add_kv={"llama.rope.scaling.yarn_beta_fast": (T.FLOAT32, 16.0)})
    refused(["info", p], p, "key 'llama.rope.scaling.yarn_beta_fast' with rope scaling 'none': not implemented")
    p = rewrite(src, tmp("lr.gguf"), add_kv={"llama.rope.scaling.type": (T.STRING, "longrope")})
    refused(["info", p], p, "longrope scaling needs phi3's rope_factors_long.weight and rope_factors_short.weight")
    p = patched_kv(src, tmp("rot.gguf"), "llama.rope.dimension_count", 8)
    refused(["info", p], p, "rope.dimension_count is 8, the head dimension 16: not implemented")
    p = rewrite(src, tmp("moe.gguf"), add_kv={"qwen2.expert_count": (T.UINT32, 8)},
                arch="qwen2")
    refused(["info", p], p, "key 'qwen2.expert_count' is 8: not implemented (only 0)")
    p = rewrite(src, tmp("desc.gguf"), add_kv={"general.description": (T.STRING, "a note")})
    aha("info", p)  # general.*: names and notes, no number depends on them
    p = rewrite(src, tmp("softcap.gguf"), add_kv={"llama.final_logit_softcapping": (T.FLOAT32, 30.0)})
    refused(["info", p], p, "key 'llama.final_logit_softcapping' is not implemented for llama")


def patched_kv(src, dst, key, value):
    """src with the u32 key set to value, in place (same size)."""
    r = gguf.GGUFReader(src)
    f = r.fields[key]
    at = f.offset + 8 + len(key.encode()) + 4
    return patched(src, dst, at, "<I", value)


def test_tokenizer_keys():
    """A tokenizer key aha does not implement: the tokenizer is refused by name, so the
    commands that need text fail, while the weights still load."""
    T = gguf.GGUFValueType
    p = rewrite(SMOL, tmp("tok.gguf"), add_kv={"tokenizer.ggml.add_eos_token": (T.BOOL, True)})
    refused(["tokenize", p, "ab"], p, "tokenizer.ggml.add_eos_token is true: not implemented")
    p = rewrite(SMOL, tmp("tok.gguf"), add_kv={"tokenizer.ggml.precompiled_charsmap": (T.STRING, "x")})
    refused(["tokenize", p, "ab"], p, "key 'tokenizer.ggml.precompiled_charsmap' is not implemented")
    assert "tokenizer     none" in aha("info", p).stdout
    p = rewrite(SMOL, tmp("tok.gguf"), add_kv={"tokenizer.ggml.fim_pre_token_id": (T.UINT32, 4)})
    aha("tokenize", p, "ab")  # fill-in-the-middle ids: aha builds no such prompt
    os.unlink(p)


def test_config_fields():
    d = st_copy("llama_gqa", tmp("cf_unknown"), config={"num_experts": 8})
    refused(["info", d], "config.json", 'field "num_experts" (8) is not implemented for llama')
    d = st_copy("llama_gqa", tmp("cf_act"), config={"hidden_act": "gelu"})
    refused(["info", d], "config.json", '"hidden_act" is gelu: not implemented (only silu)')
    d = st_copy("llama_gqa", tmp("cf_bias"), config={"attention_bias": True})
    refused(["info", d], "config.json", '"attention_bias" is true: not implemented (only false)')
    d = st_copy("llama_gqa", tmp("cf_rope"), config={"rope_parameters": {"rope_type": "dynamic", "factor": 4.0,
                                                                          "rope_theta": 10000.0}})
    refused(["info", d], "config.json", "rope_parameters: rope scaling 'dynamic' is not implemented "
            "(default, linear, llama3, yarn, longrope)")
    d = st_copy("llama_gqa", tmp("cf_prf"), config={"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                                                         "partial_rotary_factor": 0.5}})
    refused(["info", d], "config.json", "partial_rotary_factor other than 1 (partial RoPE) is not implemented")
    d = st_copy("llama_gqa", tmp("cf_rope2"), config={"rope_parameters": {"rope_type": "linear", "factor": 4.0,
                                                                           "beta_fast": 32, "rope_theta": 1e4}})
    refused(["info", d], "config.json", 'field "beta_fast" is not implemented for rope scaling \'linear\'')
    d = st_copy("llama_gqa", tmp("cf_window"), config={"sliding_window": 4096})
    refused(["info", d], "config.json", 'field "sliding_window" (4096) is not implemented for llama')
    d = st_copy("llama_gqa", tmp("cf_info"), config={"use_cache": False, "initializer_range": 0.5})
    aha("info", d)  # informational fields change no number


# ---- the GGUF tensor table, as ggml checks it ----------------------------------------

def test_type_bit_flipped():
    """SmolLM2's Q4_1 weights (ggml type 3) with one bit of one type flipped to Q4_0 (2): the
    tensors would overlap; the table check refuses the file before anything runs."""
    offs = info_offsets(SMOL)
    name = "blk.3.ffn_up.weight"
    at_type, _, _ = offs[name]
    with open(SMOL, "rb") as f:
        f.seek(at_type)
        assert struct.unpack("<I", f.read(4))[0] == 3, "not Q4_1"
    p = patched(SMOL, tmp("flip.gguf"), at_type, "<I", 2)
    refused(["ppl", p, os.path.join(ROOT, "README.md")], p, "expected", "a type, shape or offset in the tensor table is wrong")


def test_offset_aliased():
    src = os.path.join(TINY, "llama_gguf/model.gguf")
    offs = info_offsets(src)
    _, at_off, _ = offs["blk.1.ffn_down.weight"]
    p = patched(src, tmp("alias.gguf"), at_off, "<Q", offs["blk.1.ffn_up.weight"][2])
    refused(["info", p], p, "tensor 'blk.1.ffn_down.weight': offset", "expected")


def test_last_tensor_short():
    """The last tensor's type made smaller than its data: the bytes after it are named."""
    src = os.path.join(TINY, "llama_gguf_q8/model.gguf")
    r = gguf.GGUFReader(src)
    last = r.tensors[-1]
    assert last.tensor_type == gguf.GGMLQuantizationType.Q8_0, last.tensor_type
    at_type, _, _ = info_offsets(src)[last.name]
    p = patched(src, tmp("short_last.gguf"), at_type, "<I", 2)  # Q4_0: 18 bytes a block, not 34
    refused(["info", p], p, f"bytes after the last tensor '{last.name}'")


# ---- a NaN or Inf stops the run --------------------------------------------------

def nan_model(name, tensor, value, index=0):
    def edit(n, a):
        if n == tensor:
            a = a.copy()
            a.flat[index] = value
        return a
    return rewrite(os.path.join(TINY, "llama_gguf/model.gguf"), tmp(name), edit=edit)


def test_nan_weight_stops():
    """SmolLM2 with one Q4_1 block's scale made NaN in layer 3's down projection: ppl stops,
    naming where (never "ppl -nan ... over 0 scored tokens", exit 0); so does record, on a
    tiny model with one NaN weight, leaving no complete trace."""
    def nan_scale(name, a):
        if name == "blk.3.ffn_down.weight":
            a = a.copy()
            a.reshape(-1)[0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # block 0's d
        return a
    smol = rewrite(SMOL, tmp("smol_nan.gguf"), edit=nan_scale)
    line = refused(["ppl", smol, os.path.join(ROOT, "README.md"), "--max-tokens", "64"], smol,
                   "NaN in layer 3's MLP block output at position 0")
    assert "scored tokens" not in line
    os.unlink(smol)
    p = nan_model("nan_ffn.gguf", "blk.1.ffn_down.weight", np.nan)
    data = tokfile(tmp("nan.tok"), [list(range(3, 40))])
    out = tmp("nan.h5")
    refused(["record", p, data, "-o", out, "--quiet"], "NaN in layer 1's MLP block output")
    if os.path.exists(out):  # an unfinished trace, never a complete one
        with h5py.File(out, "r") as f:
            assert int(f.attrs["complete"]) == 0 and int(f.attrs["n_docs"]) == 0


def test_inf_attention_names_head():
    """An Inf in head 2's query rows of layer 0 (permuted rows stay in their head)."""
    p = nan_model("inf_q.gguf", "blk.0.attn_q.weight", np.inf, index=2 * 16 * 64 + 5)
    data = tokfile(tmp("inf.tok"), [list(range(3, 40))])
    refused(["record", p, data, "-o", tmp("inf.h5"), "--quiet", "--force"],
            "in layer 0's attention output, head 2, at position 0")


def test_nan_embedding():
    p = nan_model("nan_emb.gguf", "token_embd.weight", np.nan, index=5 * 64)
    data = tokfile(tmp("emb.tok"), [[1, 2, 3, 4, 5, 6]])
    refused(["record", p, data, "-o", tmp("emb.h5"), "--quiet", "--force"],
            "NaN in the token embeddings at position 4")


def test_nan_router_moe():
    """A NaN in a mixture of experts' router: the MoE block is the layer's MLP block stage."""
    def edit(n, a):
        if n == "blk.1.ffn_gate_inp.weight":
            a = a.copy()
            a.flat[3] = np.nan
        return a
    p = rewrite(os.path.join(TINY, "olmoe_gguf/model.gguf"), tmp("nan_router.gguf"), edit=edit)
    data = tokfile(tmp("nan_moe.tok"), [list(range(3, 40))])
    refused(["record", p, data, "-o", tmp("nan_moe.h5"), "--quiet", "--force"],
            "NaN in layer 1's MLP block output at position 0")


def test_report_refuses_nan_nll():
    data = tokfile(tmp("ok.tok"), [list(range(3, 30)), list(range(40, 60))])
    out = tmp("ok.h5")
    aha("record", os.path.join(TINY, "llama_gqa"), data, "-o", out, "--quiet", "--force")
    aha("verify", out)
    aha("report", out, "-o", tmp("rep_ok"))
    with h5py.File(out, "r+") as f:
        assert np.isnan(f["runs/full/nll"][26]) and np.isnan(f["runs/full/nll"][46]), "each document's last"
        f["runs/full/nll"][5] = np.nan
    refused(["report", out, "-o", tmp("rep_bad")], out, "runs/full/nll: NaN at token 5, not its document's last")
    refused(["verify", out], out, "NaN at token 5")


def test_gemma_gguf_keys():
    """gemma3_legacy's weights as a GGUF whose keys say its settings (pattern 3, linear 8 on the
    global layers, local base 1e4, the score scale) give HF's golden; a pattern as one bool per
    layer too; another local base changes the numbers."""
    src = os.path.join(TINY, "gemma3_legacy")
    gold = json.load(open(os.path.join(src, "golden.json")))
    ids, logits = gold["ids"], np.asarray(gold["logits"], np.float64)
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    want = lse[:-1] - logits[np.arange(len(ids) - 1), ids[1:]]
    base = gemma3_gguf_from(src, tmp("g3l.gguf"))
    T = gguf.GGUFValueType
    pattern_int = rewrite(base, tmp("g3l_int.gguf"), add_kv={"gemma3.attention.sliding_window_pattern": (T.UINT32, 3)})
    pattern_arr = rewrite(base, tmp("g3l_arr.gguf"), add_kv={
        "gemma3.attention.sliding_window_pattern": (T.ARRAY, [True, True, False, True, True, False])})
    other_base = rewrite(base, tmp("g3l_base.gguf"), add_kv={"gemma3.attention.sliding_window_pattern": (T.UINT32, 3),
                                                             "gemma3.rope.freq_base_swa": (T.FLOAT32, 3000.0)})
    data = tokfile(tmp("g3l.tok"), [ids])
    got = {}
    for name, p in (("int", pattern_int), ("arr", pattern_arr), ("base", other_base), ("none", base)):
        out = tmp(f"g3l_{name}.h5")
        aha("record", p, data, "-o", out, "--quiet", "--force", "--windows", "4")
        with h5py.File(out, "r") as f:
            got[name] = f["runs/full/nll"][:-1].astype(np.float64)
    for name in ("int", "arr"):
        assert np.abs(got[name] - want).max() < 1e-4, (name, np.abs(got[name] - want).max())
    assert np.abs(got["base"] - want).max() > 1e-3, "rope.freq_base_swa changed nothing"
    assert np.abs(got["none"] - want).max() > 1e-3, "the default pattern (6) gave pattern 3's numbers"
    j = json.loads(aha("info", "--json", pattern_int).stdout)
    assert j["defaults"] == [], j["defaults"]
    assert j["layer_types"] == ["sliding_attention", "sliding_attention", "full_attention"] * 2, j["layer_types"]
    j = json.loads(aha("info", "--json", base).stdout)
    assert j["defaults"] == ["layer pattern from gemma3 defaults (no attention.sliding_window_pattern key)"], j


def gemma3_gguf_from(folder, dst):
    """A Gemma-3 HF folder (f32) as llama.cpp's converter writes it: its tensor names, norms
    stored + 1, the gemma3.* keys with the rope scaling, local base and score scale stated."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    hdr = safetensors_header(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + n)
        blob = f.read()
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "post_attention_norm",
             "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    w = gguf.GGUFWriter(dst, "gemma3")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_freq_base(float(cfg["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_sliding_window(cfg["sliding_window"])
    w.add_rope_freq_base_swa(float(cfg["rope_local_base_freq"]))
    w.add_attention_scale(float(cfg["query_pre_attn_scalar"]) ** -0.5)
    if cfg.get("rope_scaling"):
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(cfg["rope_scaling"]["factor"])
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        a0, b0 = v["data_offsets"]
        a = np.frombuffer(blob[a0:b0], "<f4").reshape(v["shape"]).astype(np.float32)
        if k == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif k == "model.norm.weight":
            g = "output_norm.weight"
        else:
            parts = k.split(".")
            g = f"blk.{parts[2]}." + names[".".join(parts[3:-1])] + ".weight"
        if k.endswith("norm.weight"):
            a = (a + np.float32(1)).astype(np.float32)
        w.add_tensor(g, np.ascontiguousarray(a))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def gemma3_random(dst, layers, hidden=64, heads=2, kv=1, head_dim=16, ffn=32, vocab=128):
    """A Gemma-3 GGUF of random weights of the given shape, without attention.scale."""
    rng = np.random.default_rng(3)
    w = gguf.GGUFWriter(dst, "gemma3")
    w.add_block_count(layers)
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(8)

    def t(name, *shape):
        w.add_tensor(name, (0.1 * rng.standard_normal(shape)).astype(np.float32))
    t("token_embd.weight", vocab, hidden)
    t("output_norm.weight", hidden)
    for l in range(layers):
        for name, shape in (("attn_norm", (hidden,)), ("attn_q", (heads * head_dim, hidden)),
                            ("attn_k", (kv * head_dim, hidden)), ("attn_v", (kv * head_dim, hidden)),
                            ("attn_output", (hidden, heads * head_dim)), ("attn_q_norm", (head_dim,)),
                            ("attn_k_norm", (head_dim,)), ("post_attention_norm", (hidden,)),
                            ("ffn_norm", (hidden,)), ("post_ffw_norm", (hidden,)), ("ffn_gate", (ffn, hidden)),
                            ("ffn_up", (ffn, hidden)), ("ffn_down", (hidden, ffn))):
            t(f"blk.{l}.{name}.weight", *shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def test_gemma_27b_scale_rule():
    """Without attention.scale, llama.cpp's rule: a 62-layer Gemma-3 (the 27B) scales scores by
    (hidden / heads)^-1/2, any other by head_dim^-1/2 (hidden 64, 2 heads of 16)."""
    for layers, want in ((6, 16 ** -0.5), (62, 32 ** -0.5)):
        p = gemma3_random(tmp(f"g3_{layers}.gguf"), layers)
        j = json.loads(aha("info", "--json", p).stdout)
        assert abs(j["attention"]["scale"] - want) < 1e-7, (layers, j["attention"])
        assert "score scale by llama.cpp's rule for the architecture (no attention.scale key)" in j["defaults"], j


def main():
    check("llama3 rope scaling (safetensors): HF's nll and d_eps past 8192", test_llama3_safetensors)
    check("llama3 rope scaling (GGUF rope_freqs.weight): HF's nll and d_eps past 8192, the safetensors'", test_llama3_gguf)
    check("aha info shows a GGUF's rope_freqs factors", test_llama3_info)
    check("rope_freqs of ones equals none; the real table differs past 8192", test_rope_freqs_ones_and_absent)
    check("bad rope_freqs tables refused, and rope_freqs outside llama", test_rope_freqs_bad)
    check("GGUF: an unused tensor is refused by name", test_unused_tensor_gguf)
    check("safetensors: an unused tensor is refused by name", test_unused_tensor_safetensors)
    check("safetensors: a stray q_proj bias is refused, not applied", test_stray_bias_safetensors)
    check("tied model: an lm_head unlike the embeddings is refused", test_tied_head)
    check("rotary_emb.inv_freq buffers checked against the config", test_inv_freq_buffer)
    check("a multimodal Gemma-3's vision tower is ignored, by name", test_vision_tower_ignored)
    check("GGUF keys read or refused by name", test_gguf_keys)
    check("GGUF tokenizer keys read or refused by name", test_tokenizer_keys)
    check("config.json fields read or refused by name", test_config_fields)
    check("GGUF: a type bit flipped (Q4_1 -> Q4_0) is refused by the table check", test_type_bit_flipped)
    check("GGUF: an offset aliased onto another tensor is refused", test_offset_aliased)
    check("GGUF: a last tensor smaller than its data is refused", test_last_tensor_short)
    check("a NaN weight stops ppl and record, naming the layer", test_nan_weight_stops)
    check("an Inf in the queries stops the run, naming layer, head and position", test_inf_attention_names_head)
    check("a NaN embedding stops the run, naming the position", test_nan_embedding)
    check("report and verify refuse an edited NaN nll", test_report_refuses_nan_nll)
    check("a NaN in a mixture of experts' router stops the run at that layer's MLP block", test_nan_router_moe)
    check("Gemma-3 GGUF: pattern (int, bools), local base and scale keys read", test_gemma_gguf_keys)
    check("Gemma-3 GGUF: llama.cpp's score-scale rule where the key is absent (27B)", test_gemma_27b_scale_rule)
    check("yarn, longrope, NoPE, MoE (safetensors and GGUF): HF's nll and d_eps past each switch point", test_schemes)
    check("yarn, longrope, NoPE, MoE: routed runs (global equals full; oracle)", test_scheme_routed)
    check("longrope: aha generate across the switch equals HF generate", test_longrope_generate)
    check("aha fit past longrope's switch and on a mixture of experts; its router routes them", test_scheme_fit)
    check("aha info shows yarn, longrope, NoPE layers and the experts with their parameters", test_scheme_info)
    check("MoE: a GGUF's stacked experts are mapped in their stored type", test_moe_stored)
    check("MoE: --dtype bf16 runs the experts, near f32", test_moe_bf16)
    check("what is not implemented of these schemes is refused by name", test_scheme_refusals)
    shutil.rmtree(TMP, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
