"""aha info TRACE / aha inspect, and aha info MODEL --json, against independent readers.

A trace's --json is compared with h5py reading the same file (every root and
provenance attribute, every dataset's shape and dtype, the runs, the document
and token counts), for complete, unfinished (a stopped run, and its index
without the parts), empty and sharded traces; a model's --json with its
config.json and safetensors headers, or gguf-py's reading of the GGUF.
Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import glob
import json
import os
import shutil
import tempfile

import gguf
import h5py
import numpy as np

from ahatest import ROOT, aha, check, finish, safetensors_header, tokfile

TINY = os.path.join(ROOT, "tests/fixtures/tiny")
SMOL = os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
TMP = tempfile.mkdtemp(prefix="aha_info_")
DOCS = [list(range(5, 45)), list(range(60, 90))]


def info(path, *flags):
    return json.loads(aha("info", path, "--json", *flags).stdout)


def plain(v):
    """An h5py attribute value as JSON would hold it."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v != v:  # NaN (a run's param without a number): JSON's null
        return None
    return v


def dtype_name(d):
    return "str" if h5py.check_string_dtype(d.dtype) else d.dtype.name


def same_as_h5py(j, path):
    """Every attribute, dataset and run of the file, as h5py reads it, is in j and equal."""
    with h5py.File(path, "r") as f:
        want = {k: plain(v) for k, v in f.attrs.items() if k != "description"}
        assert want == j["attributes"], {k: (want.get(k), j["attributes"].get(k))
                                         for k in set(want) | set(j["attributes"]) if want.get(k) != j["attributes"].get(k)}
        prov = {k: plain(v) for k, v in f["provenance"].attrs.items() if k != "description"}
        assert prov == j["provenance"], (prov, j["provenance"])
        assert j["documents"] == len(f["doc_offsets"]) - 1 == f.attrs["n_docs"]
        assert j["tokens"] == len(f["tokens"]) == f.attrs["n_tokens"]
        ds = {}
        f.visititems(lambda n, o: ds.__setitem__(n, o) if isinstance(o, h5py.Dataset) else None)
        assert sorted(ds) == sorted(j["datasets"]), (sorted(ds), sorted(j["datasets"]))
        for name, d in ds.items():
            got = j["datasets"][name]
            assert got["shape"] == list(d.shape) and got["dtype"] == dtype_name(d), (name, got, d.shape, d.dtype)
            assert got["layout"] == ("virtual" if d.is_virtual else "chunked" if d.chunks else "contiguous"), name
        runs = {r["name"]: r for r in j["runs"]}
        assert sorted(runs) == sorted(f["runs"]), (sorted(runs), list(f["runs"]))
        for name, r in runs.items():
            g = f["runs"][name]
            for k, v in g.attrs.items():
                if k != "description":
                    assert r[k] == plain(v), (name, k, r[k], v)
            assert r["gate"] == ("gate" in g), name
        assert j["completeness"]["complete"] == bool(f.attrs["complete"])
        assert j["completeness"]["documents_durable"] == j["documents"]


def record(name, *args, ok=True, docs=DOCS, model="llama_aha"):
    out = os.path.join(TMP, name + ".h5")
    data = tokfile(os.path.join(TMP, name + ".tok"), docs)
    aha(*(args or ("record",)), os.path.join(TINY, model), data, "-o", out, "--force", "--quiet",
        "--windows", "2,4,8", "--ctx", 32, ok=ok)
    return out


def test_complete_json():
    out = record("sweep", "sweep", "--route", "oracle", "--werr", "--sinks", "1", "--seed", "7")
    j = info(out)
    same_as_h5py(j, out)
    a, c = j["attributes"], j["completeness"]
    assert a["mode"] == "sweep" and a["router"] == "oracle" and a["eps"] == [0.01, 0.05, 0.1], a
    assert a["windows"] == [2, 4, 8] and a["sinks"] == 1 and a["seed"] == 7 and a["ctx"] == 32, a
    assert [r["name"] for r in j["runs"]] == ["full", "w2", "w4", "w8"], j["runs"]
    assert "window_error/w_4" in j["datasets"] and "gate" in j["datasets"]
    assert c["complete"] and c["parts"] == 0 and c["shards_of"] == 0 and c["shard"] == "", c
    assert aha("inspect", out, "--json").stdout == aha("info", out, "--json").stdout


def test_text():
    out = os.path.join(TMP, "sweep.h5")  # written by the JSON test
    text = aha("info", out).stdout
    with h5py.File(out, "r") as f:
        T = len(f["tokens"])
        want = [f"trace          {out}", "status         complete", f"documents      3 ({T} tokens)",
                f"model            {TINY}/llama_aha", "eps              0.01,0.05,0.1",
                "windows          2,4,8", "router           oracle", "mode             sweep", "sinks            1",
                "ctx              32", "seed             7", "dataset_format   auto", 'shard            ""',
                f"trace_id         {f.attrs['trace_id']}", f"hdf5_version     {plain(f['provenance'].attrs['hdf5_version'])}",
                "  w4               policy oracle, window 4,", f"  dependency/eps_0.05          uint32   [2,{T},4] chunked"]
    for w in want:
        assert w in text, f"{w!r} not in:\n{text}"


def test_unfinished():
    # a token out of the vocabulary stops the run after 2 documents (3 contexts): an index over parts
    out = record("stopped", ok=False, docs=DOCS + [[10**6]], model="llama_gqa")
    assert os.path.isdir(out + ".parts")
    j = info(out)
    same_as_h5py(j, out)
    c = j["completeness"]
    assert not c["complete"] and c["documents_durable"] == 3 and c["parts"] >= 1 and c["parts_missing"] == 0, c
    assert all(d["layout"] == "virtual" for d in j["datasets"].values())
    text = aha("info", out).stdout
    assert "status         unfinished" in text and "3 documents durable" in text and "all present" in text, text
    os.makedirs(os.path.join(TMP, "alone"), exist_ok=True)
    alone = shutil.copy(out, os.path.join(TMP, "alone"))  # the index without its parts
    c = info(alone)["completeness"]
    assert c["parts_missing"] == c["parts"] >= 1, c
    assert f"{c['parts']} of them missing (the index goes with stopped.h5.parts/)" in aha("info", alone).stdout


def test_empty_unfinished():
    # the first document fails: an index that holds no documents still says what run it is
    out = record("empty", ok=False, docs=[[10**6]], model="llama_gqa")
    assert "unfinished trace without documents" in aha("report", out, ok=False).stderr
    j = info(out)
    same_as_h5py(j, out)
    assert j["documents"] == 0 and not j["completeness"]["complete"] and j["completeness"]["parts"] == 0
    assert "0 documents durable, no part files yet" in aha("info", out).stdout


def test_shards():
    docs = [list(range(5 + k, 25 + k)) for k in range(8)]
    shards = [record(f"shard{i}", "record", "--shard", f"{i}/4", docs=docs, model="llama_gqa") for i in (0, 2)]
    c = info(shards[1])["completeness"]
    assert c["shard"] == "2/4" and c["shards_of"] == 4 and c["shards_present"] == [2], c
    assert c["shards_missing"] == [0, 1, 3], c
    merged = os.path.join(TMP, "merged.h5")
    aha("merge", *shards, "-o", merged, "--force")
    j = info(merged)
    same_as_h5py(j, merged)
    c = j["completeness"]
    assert c["shard"] == "0,2/4" and c["shards_present"] == [0, 2] and c["shards_missing"] == [1, 3], c
    assert "shard          0,2/4: shards 0,2 of 4; the run's others, in other traces: 1,3" in aha("info", merged).stdout


def one_error(args, want):
    for flags in ((), ("--json",)):
        r = aha("info", *args, *flags, ok=False)
        assert r.returncode == 1 and r.stdout == "", (r.returncode, r.stdout)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and want in lines[0], r.stderr


def test_errors():
    other = os.path.join(TMP, "other.h5")
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    one_error([other], "other.h5: not an aha trace")
    full = open(os.path.join(TMP, "sweep.h5"), "rb").read()
    cut = os.path.join(TMP, "cut.h5")
    open(cut, "wb").write(full[:3000])
    one_error([cut], "cut.h5: cannot open as HDF5")
    junk = os.path.join(TMP, "junk.h5")
    open(junk, "wb").write(b"not hdf5 at all")
    one_error([junk], "junk.h5: not an HDF5 file")
    noname = os.path.join(TMP, "trace_without_suffix")  # found by its HDF5 signature, not its name
    open(noname, "wb").write(full)
    assert info(noname)["kind"] == "trace"
    one_error([os.path.join(TMP, "absent.h5")], "absent.h5: No such file")


def test_usage():
    r = aha("info", "--help")  # asked for: on stdout
    assert r.returncode == 0 and "MODEL|TRACE" in r.stdout and "--json" in r.stdout and "(default: off)" in r.stdout, r.stdout
    assert "inspect" in aha("--help").stdout


def test_model_safetensors():
    for d in sorted(glob.glob(os.path.join(TINY, "*", "config.json"))):
        d = os.path.dirname(d)
        c = json.load(open(os.path.join(d, "config.json")))
        if "text_config" in c:  # a multimodal gemma3: its language model's config, the top's tie
            c = {**c["text_config"], **{k: v for k, v in c.items() if k != "text_config"}}
        j = info(d)
        headers = [safetensors_header(p) for p in sorted(glob.glob(os.path.join(d, "*.safetensors")))]
        tensors = {k.replace("model.language_model.", "model."): v
                   for h in headers for k, v in h.items() if k != "__metadata__"}
        H, D = c["num_attention_heads"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        rope = c.get("rope_parameters") or {}
        rope = rope.get("full_attention", rope)  # gemma3: per layer type; the global layers' here
        scaling = c.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else {})
        want = {"format": "safetensors", "layers": c["num_hidden_layers"], "hidden": c["hidden_size"], "heads": H,
                "kv_heads": c["num_key_value_heads"], "head_dim": D, "ffn": c["intermediate_size"],
                "vocab": c["vocab_size"], "context": c["max_position_embeddings"],
                "norm_eps": c["rms_norm_eps"], "tied": c.get("tie_word_embeddings", False),
                "architecture": {"faolmo": "olmo2", "mistral": "llama", "gemma3_text": "gemma3", "qwen2_moe": "qwen2moe",
                                 "qwen3_moe": "qwen3moe"}.get(c["model_type"], c["model_type"]),
                "aha": tensors.get("model.layers.0.self_attn.q_proj.weight", {"shape": [0]})["shape"][0] == H * D + H,
                "parameters": sum(int(np.prod(t["shape"])) for t in tensors.values())}
        got = {k: j[k] for k in want}
        assert got == want, (d, got, want)
        assert j["rope"]["theta"] == c.get("rope_theta", rope.get("rope_theta")), (d, j["rope"])
        kind = scaling.get("rope_type", scaling.get("type", "none"))
        assert j["rope"]["scaling"] == kind, (d, j["rope"])
        if scaling:  # longrope's by HF's default: the context over the original one
            orig = c.get("original_max_position_embeddings", scaling.get("original_max_position_embeddings"))
            assert j["rope"]["factor"] == scaling.get("factor", c["max_position_embeddings"] / (orig or 1)), j["rope"]
        if kind in ("yarn", "longrope"):
            assert j["rope"]["original_context"] == orig, j["rope"]
        if scaling.get("rope_type") == "llama3":
            assert j["rope"]["low_freq_factor"] == scaling["low_freq_factor"], j["rope"]
            assert j["rope"]["original_context"] == scaling["original_max_position_embeddings"], j["rope"]
        if os.path.exists(os.path.join(d, "tokenizer.json")):  # phi3_long's byte-level one (aha generate)
            assert j["tokenizer"]["kind"] is not None and j["tokenizer"]["vocab"] == c["vocab_size"], j["tokenizer"]
        else:
            assert j["tokenizer"]["kind"] is None and "no tokenizer" in j["tokenizer"]["error"], j["tokenizer"]


def gguf_fields(path):
    r = gguf.GGUFReader(path)
    f = {k: v.contents() for k, v in r.fields.items() if not k.startswith("tokenizer.ggml.t") and not k.startswith("tokenizer.ggml.merges")}
    f["n_tokens"] = len(r.fields["tokenizer.ggml.tokens"].data) if "tokenizer.ggml.tokens" in r.fields else None
    return f, r.tensors


def test_model_gguf():
    for path in (os.path.join(TINY, "llama_gguf/model.gguf"), SMOL):
        f, tensors = gguf_fields(path)
        a = f["general.architecture"]
        j = info(path)
        names = {t.name for t in tensors}
        want = {"format": "gguf", "architecture": a, "layers": f[a + ".block_count"],
                "hidden": f[a + ".embedding_length"], "heads": f[a + ".attention.head_count"],
                "kv_heads": f[a + ".attention.head_count_kv"], "ffn": f[a + ".feed_forward_length"],
                "context": f[a + ".context_length"], "tied": "output.weight" not in names,
                "parameters": sum(int(t.n_elements) for t in tensors)}
        got = {k: j[k] for k in want}
        assert got == want, (path, got, want)
        assert np.float32(j["norm_eps"]) == np.float32(f[a + ".attention.layer_norm_rms_epsilon"]), j["norm_eps"]
        assert j["rope"]["theta"] == f[a + ".rope.freq_base"] and j["rope"]["pairing"] == "adjacent", j["rope"]
        if j["tokenizer"]["kind"] is not None:  # the real model's; the tiny one's pre-tokenizer is unknown
            t = j["tokenizer"]
            assert t["bos"] == f["tokenizer.ggml.bos_token_id"] and t["eos"] == f["tokenizer.ggml.eos_token_id"], t
            assert t["vocab"] == f["n_tokens"] == j["vocab"] and t["add_bos"] == f.get("tokenizer.ggml.add_bos_token", False), t
        text = aha("info", path).stdout  # the text says the same
        assert f"layers        {want['layers']}\n" in text and f"heads         {want['heads']} query" in text, text


check("aha info TRACE --json: every attribute, dataset and run equals h5py's reading", test_complete_json)
check("aha info TRACE: the text shows the settings, provenance, runs and datasets", test_text)
check("aha info: an unfinished trace says so, with its durable documents and missing parts", test_unfinished)
check("aha info: an unfinished trace without documents still opens", test_empty_unfinished)
check("aha info: a shard and a merge of shards name the shards present and missing", test_shards)
check("aha info: a non-trace HDF5 file or a broken one is one error line, exit 1", test_errors)
check("aha info --help: MODEL|TRACE and --json with its default", test_usage)
check("aha info MODEL --json: Hugging Face folders against config.json and the safetensors headers", test_model_safetensors)
check("aha info MODEL --json: GGUF files against gguf-py", test_model_gguf)


def test_layer_types():
    """Each layer's native window (HF's, from the fixtures' golden.json), in the JSON and the
    text; a GGUF without a layer pattern says its pattern is the architecture's default."""
    for name, path in (("gemma3", "gemma3"), ("gemma3_gguf", "gemma3_gguf/model.gguf"), ("gemma2", "gemma2"),
                       ("gemma3_legacy", "gemma3_legacy"), ("gemma3_mm", "gemma3_mm"),
                       ("mistral_swa", "mistral_swa"), ("qwen2_swa", "qwen2_swa"), ("llama_gqa", "llama_gqa")):
        golden = json.load(open(os.path.join(TINY, name, "golden.json")))
        j = info(os.path.join(TINY, path))
        want = golden.get("layer_windows", [0] * j["layers"])  # none: every layer full
        assert j["layer_windows"] == want, (name, j["layer_windows"], want)
        assert j["layer_types"] == ["sliding_attention" if w else "full_attention" for w in want], j["layer_types"]
        text = aha("info", os.path.join(TINY, path)).stdout
        notes = ["layer pattern from gemma3 defaults (no attention.sliding_window_pattern key)",
                 "local RoPE base from gemma3 defaults (no rope.freq_base_swa key)"]
        gguf = name == "gemma3_gguf"
        assert all((n in text) == gguf for n in notes) and j["defaults"] == (notes if gguf else []), (name, text, j["defaults"])
        if any(want):
            local = [l for l, w in enumerate(want) if w]
            assert f"layer types   sliding window {max(want)}: " in text, text
            assert str(local[0]) in text.split("layer types")[1].split("\n")[0], text
        else:
            assert "layer types   full attention (every layer)\n" in text, text
    j = info(os.path.join(TINY, "gemma2"))
    c = json.load(open(os.path.join(TINY, "gemma2", "config.json")))
    assert j["ffn_activation"] == "gelu_tanh" and j["attention"]["softcap"] == c["attn_logit_softcapping"], j
    assert j["final_logit_softcap"] == c["final_logit_softcapping"] and j["embed_scale"] == 8.0, j
    assert np.float32(j["attention"]["scale"]) == np.float32(c["query_pre_attn_scalar"] ** -0.5), j["attention"]
    j = info(os.path.join(TINY, "gemma3"))
    assert j["rope"]["theta"] == 1e6 and j["rope"]["local_theta"] == 1e4, j["rope"]


def test_resident():
    """--weights stored maps every tensor of the GGUF in place; f32 converts the non-f32 ones at load."""
    for path in (os.path.join(TINY, "llama_gguf_q8/model.gguf"), SMOL):
        _, tensors = gguf_fields(path)
        stored, f32 = info(path)["resident"], info(path, "--weights", "f32")["resident"]
        is_f32 = [t.tensor_type == gguf.GGMLQuantizationType.F32 for t in tensors]
        assert stored == {"weights": "stored", "mapped_bytes": sum(int(t.n_bytes) for t in tensors),
                          "f32_bytes": 0}, (path, stored)
        assert f32 == {"weights": "f32", "f32_bytes": sum(4 * int(t.n_elements) for t, f in zip(tensors, is_f32) if not f),
                       "mapped_bytes": sum(int(t.n_bytes) for t, f in zip(tensors, is_f32) if f)}, (path, f32)
        text = aha("info", path, "--weights", "f32").stdout
        assert f"resident      --weights f32: {f32['mapped_bytes'] / 1048576:.1f} MiB mapped in the stored type, " \
               f"{f32['f32_bytes'] / 1048576:.1f} MiB converted to f32\n" in text, text
    r = aha("info", SMOL, "--weights", "f16", ok=False)
    assert r.returncode == 1 and r.stderr == "aha: --weights: 'f16' is not stored or f32\n", (r.returncode, r.stderr)
    assert "--weights" in aha("info", "--help").stdout and "default: stored)" in aha("info", "--help").stdout


check("aha info MODEL: what is resident, --weights stored (mapped) and f32 (converted), text and --json", test_resident)
check("aha info MODEL: layer types and native windows (text and --json), and a GGUF's default pattern", test_layer_types)
finish()
