#!/usr/bin/env python3
"""Write a GGUF with a 7B-class shape and random weights, for the benchmark.

Default shape: Llama-2-7B (dim 4096, 32 layers, 32 heads of 128, ffn 11008,
untied output), with SmolLM2-135M's tokenizer (49152 tokens, byte-level BPE,
copied from its GGUF) so that `aha record` takes text; the vocab is 49152, not
Llama-2's 32000. Matrices are Q4_0 (or Q8_0) blocks written directly: random
quants with a f16 scale per block drawn around 1 / (4.6 sqrt(fan_in)) (Q4_0;
127 / ... for Q8_0: the quants' standard deviation), so each product keeps its
input's scale and activations stay finite. No quantization, so it writes at
disk speed. Norm weights are 1 (f32).

Deterministic (--seed), written to PATH.tmp and renamed, and only when PATH is
missing. Never committed: the default PATH is in the git-ignored bench-out/.

usage: .venv/bin/python scripts/make_7b_gguf.py [--out PATH] [--layers 32] [--dim 4096]
       [--heads 32] [--kv-heads 32] [--ffn 11008] [--type Q4_0] [--seed 7]
       [--tokenizer models/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import argparse
import os
import sys

import numpy as np

import gguf

T = gguf.GGMLQuantizationType
QK = 32  # values per block, Q4_0 and Q8_0
BLOCK = {"Q4_0": (T.Q4_0, 18, 4.6), "Q8_0": (T.Q8_0, 34, 73.6)}  # type, bytes, quants' std dev


def copy_tokenizer(w, path):
    """Every tokenizer.* key of the GGUF at path, as it is."""
    r = gguf.GGUFReader(path)
    n = 0
    for name, f in r.fields.items():
        if not name.startswith("tokenizer.") or name == "tokenizer.chat_template":
            continue
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = f.types[1]
            if sub == gguf.GGUFValueType.STRING:
                val = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                val = [f.parts[i][0].item() for i in f.data]
            w.add_key_value(name, val, vtype, sub)
        elif vtype == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(f.parts[f.data[0]]).decode("utf-8"), vtype)
        else:
            w.add_key_value(name, f.parts[f.data[0]][0].item(), vtype)
        n += 1
    vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    return vocab


def quant_blocks(rng, rows, cols, kind):
    """[rows, cols / 32 * bytes] uint8: random quants, a f16 scale per block."""
    qtype, nb, sd = BLOCK[kind]
    a = np.frombuffer(rng.bytes(rows * (cols // QK) * nb), dtype=np.uint8).reshape(rows, cols // QK, nb).copy()
    scale = rng.uniform(0.5, 1.5, size=(rows, cols // QK)) / (sd * np.sqrt(cols))
    a[:, :, 0:2] = scale.astype(np.float16).view(np.uint8).reshape(rows, cols // QK, 2)
    return a.reshape(rows, -1), qtype


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench-out/7b/llama2-7b-shape.Q4_0.gguf")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=32)
    ap.add_argument("--ffn", type=int, default=11008)
    ap.add_argument("--ctx", type=int, default=4096, help="llama.context_length (default 4096)")
    ap.add_argument("--type", choices=sorted(BLOCK), default="Q4_0")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tokenizer", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    a = ap.parse_args()
    if os.path.exists(a.out):
        print(f"{a.out}: exists, kept")
        return 0
    if a.dim % a.heads or a.heads % a.kv_heads or a.dim % QK or a.ffn % QK:
        sys.exit(f"make_7b_gguf: dim {a.dim}, heads {a.heads}, kv heads {a.kv_heads}, ffn {a.ffn}: "
                 "heads must divide dim, kv heads heads, 32 dim and ffn")
    if not os.path.exists(a.tokenizer):
        sys.exit(f"make_7b_gguf: {a.tokenizer}: no such file (scripts/setup.sh fetches it)")
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    tmp = a.out + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(f"random {a.layers}x{a.dim} ({a.type}, seed {a.seed})")
    shape = {"context_length": a.ctx, "embedding_length": a.dim, "block_count": a.layers,
             "feed_forward_length": a.ffn, "attention.head_count": a.heads,
             "attention.head_count_kv": a.kv_heads, "rope.dimension_count": a.dim // a.heads}
    for key, val in shape.items():
        w.add_uint32("llama." + key, val)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    vocab = copy_tokenizer(w, a.tokenizer)
    w.add_vocab_size(vocab)
    hd, kv = a.dim // a.heads, a.dim // a.heads * a.kv_heads
    # (name, rows, cols): a [rows, cols] matrix is cols values per row (ggml ne0 = cols)
    mats = [("token_embd.weight", vocab, a.dim)]
    for l in range(a.layers):
        b = f"blk.{l}."
        mats += [(b + "attn_q.weight", a.dim, a.dim), (b + "attn_k.weight", kv, a.dim),
                 (b + "attn_v.weight", kv, a.dim), (b + "attn_output.weight", a.dim, a.dim),
                 (b + "ffn_gate.weight", a.ffn, a.dim), (b + "ffn_up.weight", a.ffn, a.dim),
                 (b + "ffn_down.weight", a.dim, a.ffn),
                 (b + "attn_norm.weight", 0, a.dim), (b + "ffn_norm.weight", 0, a.dim)]
    mats += [("output_norm.weight", 0, a.dim), ("output.weight", vocab, a.dim)]
    qtype, nb, _ = BLOCK[a.type]
    for name, rows, cols in mats:  # rows 0: a norm, f32 ones
        if rows:
            w.add_tensor_info(name, [rows, cols // QK * nb], np.dtype(np.uint8), rows * cols // QK * nb, qtype)
        else:
            w.add_tensor_info(name, [cols], np.dtype(np.float32), 4 * cols)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.Generator(np.random.PCG64(a.seed))
    total = 0
    for name, rows, cols in mats:  # one tensor in memory at a time (the largest: 113 MB)
        t = quant_blocks(rng, rows, cols, a.type)[0] if rows else np.ones(cols, dtype=np.float32)
        w.write_tensor_data(t)
        total += t.nbytes
    w.close()
    os.replace(tmp, a.out)
    print(f"{a.out}: {a.layers} layers, dim {a.dim}, {a.heads} heads ({a.kv_heads} kv) of {hd}, ffn {a.ffn}, "
          f"vocab {vocab} ({a.tokenizer}'s tokenizer), {a.type}, seed {a.seed}: {total / 2**30:.2f} GiB of tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
