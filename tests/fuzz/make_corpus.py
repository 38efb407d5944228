#!/usr/bin/env python3
"""Seed corpora for tests/fuzz/fuzz_gguf.c and tests/fuzz/fuzz_safetensors.c:
small valid files (the GGUF one written by gguf-py's GGUFWriter, an
independent writer) plus a few broken variants that reach the deeper checks.

Regenerate (deterministic; needs numpy and gguf==0.19.0, e.g. the .venv that
`scripts/setup.sh test` creates):

    .venv/bin/python tests/fuzz/make_corpus.py
"""
import json
import os
import struct
import tempfile

import numpy as np
from gguf import GGMLQuantizationType as T, GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def gguf_bytes(fill):
    """The bytes of a GGUF that gguf-py's GGUFWriter writes after fill(writer)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.gguf")
        w = GGUFWriter(path, arch="llama")
        fill(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        with open(path, "rb") as f:
            return f.read()


def add_raw_quants(w, gen, specs):
    """One tensor per (qtype, rows) of random block bytes, named after the type."""
    for qtype, rows in specs:
        block, size = GGML_QUANT_SIZES[qtype]
        raw = gen.integers(0, 256, size=(rows, size), dtype=np.uint8)
        w.add_tensor(qtype.name.lower(), raw, raw_dtype=qtype)


def fill_valid(w):
    """Every kv type and the tensor dtypes the reader first supported."""
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -300)
    w.add_uint32("llama.block_count", 2)
    w.add_int32("t.i32", -7)
    w.add_float32("t.f32", 0.5)
    w.add_bool("t.bool", True)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.25)
    w.add_array("tokenizer.ggml.tokens", ["a", "bc", "<s>"])
    w.add_array("t.scores", [0.5, -1.0, 2.0])
    w.add_tensor("f32", rng.standard_normal((2, 3)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal(8).astype(np.float16))
    bf16 = rng.integers(0, 1 << 16, size=(2, 4), dtype=np.uint16)
    w.add_tensor("bf16", bf16.view(np.uint8), raw_dtype=T.BF16)
    add_raw_quants(w, rng, ((T.Q8_0, 2), (T.Q4_0, 1), (T.Q4_1, 1), (T.Q4_K, 1), (T.Q6_K, 1)))


def fill_new_quants(w):
    """One tensor of each quant added later (Q5_K among them), from its own
    generator so that the older seeds stay byte-identical."""
    w.add_uint32("llama.block_count", 1)
    add_raw_quants(w, np.random.default_rng(8),
                   ((T.Q5_0, 2), (T.Q5_1, 1), (T.Q2_K, 1), (T.Q3_K, 1), (T.Q5_K, 2)))


def safetensors(entries, data, metadata=None):
    """entries: name -> (dtype, shape, [begin, end]); header padded to 8 bytes."""
    header = {"__metadata__": metadata} if metadata else {}
    for name, (dtype, shape, offsets) in entries.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": offsets}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def patch_tensor_info(data, name, field, value):
    """data (a GGUF) with tensor name's ggml type (field "type") or data offset ("offset") set to
    value, in place: the lies the table check refuses."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.gguf")
        with open(path, "wb") as f:
            f.write(data)
        t = next(t for t in GGUFReader(path).tensors if t.name == name)
    at = t.field.offset + 8 + len(name.encode()) + 4 + 8 * len(t.shape)
    fmt, at = ("<I", at) if field == "type" else ("<Q", at + 4)
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):]


def main():
    out = os.path.join(HERE, "corpus_gguf")
    os.makedirs(out, exist_ok=True)
    valid = gguf_bytes(fill_valid)
    write(os.path.join(out, "valid_all_types.gguf"), valid)
    write(os.path.join(out, "truncated.gguf"), valid[: len(valid) // 3])
    write(os.path.join(out, "v2_empty.gguf"), b"GGUF" + struct.pack("<IQQ", 2, 0, 0))
    write(os.path.join(out, "bad_version.gguf"), b"GGUF" + struct.pack("<IQQ", 4, 0, 0))
    write(os.path.join(out, "valid_new_quants.gguf"), gguf_bytes(fill_new_quants))
    write(os.path.join(out, "type_flipped.gguf"), patch_tensor_info(valid, "q4_1", "type", int(T.Q4_0)))
    write(os.path.join(out, "offset_aliased.gguf"), patch_tensor_info(valid, "f16", "offset", 0))

    out = os.path.join(HERE, "corpus_safetensors")
    os.makedirs(out, exist_ok=True)
    f32 = rng.standard_normal(6).astype("<f4").tobytes()
    f16 = rng.standard_normal(4).astype("<f2").tobytes()
    bf16 = rng.integers(0, 1 << 16, size=4, dtype="<u2").tobytes()
    entries = {"w": ("F32", [2, 3], [0, 24]), "h": ("F16", [4], [24, 32]),
               "b": ("BF16", [2, 2], [32, 40]), "s": ("F32", [], [40, 44])}
    write(os.path.join(out, "valid.safetensors"),
          safetensors(entries, f32 + f16 + bf16 + f32[:4], {"format": "pt"}))
    write(os.path.join(out, "overlap.safetensors"),
          safetensors({"a": ("F32", [2], [0, 8]), "b": ("F32", [2], [4, 12])}, f32[:12]))
    write(os.path.join(out, "bad_dtype.safetensors"),
          safetensors({"a": ("I64", [1], [0, 8])}, f32[:8]))
    write(os.path.join(out, "empty_header.safetensors"), safetensors({}, b""))


if __name__ == "__main__":
    main()
