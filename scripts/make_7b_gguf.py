#!/usr/bin/env python3
"""Write a GGUF with a 7B-class shape and random weights, for the benchmark.

--arch llama (the default): Llama-2-7B's shape (dim 4096, 32 layers, 32 heads
of 128, ffn 11008, untied output). --arch olmoe: OLMoE-1B-7B's (dim 2048, 16
layers, 16 heads of 128, 64 experts of ffn 1024, top 8, q/k norms), its
experts stacked [experts, rows, cols] per layer as llama.cpp's converter
writes them and its router f32 as llama-quantize keeps it. Both with
SmolLM2-135M's tokenizer (49152 tokens, byte-level BPE, copied from its GGUF)
so that `aha record` takes text; the vocab is 49152, not the models' own
(32000, 50304), which keeps the lm_head small. Matrices are Q4_0 (or Q8_0)
blocks written directly: random quants with a f16 scale per block of size
around 1 / (4.6 sqrt(fan_in)) (Q4_0; 127 / ... for Q8_0: the quants' standard
deviation), so each product keeps its input's scale and activations stay
finite. olmoe's weights are made so that its router spreads the tokens over
the experts, as a trained one does (measured: all 64 experts taken in every
layer of a 256-token prefill, the busiest 8 taking 20-25% of the picks):
its block scales have random signs (the quants' mean, -0.5, times
all-positive scales gives every row the same bias, and the hidden states
grow along it), its embeddings are of unit size and the products that add
to the residual stream (attn_output, ffn_down_exps) are 1/sqrt(layers) of
the others' size, so the residual stays each token's own rather than the
average over the context that attention adds (else 18-30 of 64 experts
take all the tokens past layer 2). No quantization, so it writes at disk
speed. Norm weights are 1 (f32).

Deterministic (--seed), written to PATH.tmp and renamed, and only when PATH is
missing. Never committed: the default PATH is in the git-ignored bench-out/.

usage: .venv/bin/python scripts/make_7b_gguf.py [--arch llama|olmoe] [--out PATH] [--layers N]
       [--dim N] [--heads N] [--kv-heads N] [--ffn N] [--experts N] [--top-k N] [--type Q4_0]
       [--seed 7] [--tokenizer models/SmolLM2-135M-Instruct.Q4_1.gguf]
       (shape flags default to the --arch preset's; --ffn is each expert's width under olmoe)
"""
import argparse
import os
import sys

import numpy as np

import gguf

T = gguf.GGMLQuantizationType
QK = 32  # values per block, Q4_0 and Q8_0
BLOCK = {"Q4_0": (T.Q4_0, 18, 4.6), "Q8_0": (T.Q8_0, 34, 73.6)}  # type, bytes, quants' std dev
# each --arch's shape; experts 0: a dense MLP; spread: weights a router spreads tokens with (see above)
PRESET = {
    "llama": dict(out="bench-out/7b/llama2-7b-shape.Q4_0.gguf", layers=32, dim=4096, heads=32, kv_heads=32,
                  ffn=11008, experts=0, top_k=0, spread=False),
    "olmoe": dict(out="bench-out/moe/olmoe-1b-7b-shape.Q4_0.gguf", layers=16, dim=2048, heads=16, kv_heads=16,
                  ffn=1024, experts=64, top_k=8, spread=True),
}
RESIDUAL = ("attn_output.weight", "ffn_down_exps.weight")  # the products added to the residual stream (spread)


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


def quant_blocks(rng, rows, cols, kind, signed, gain=1.0):
    """[rows, cols / 32 * bytes] uint8: random quants, a f16 scale per block (of random sign if signed),
    the products' scale times gain."""
    qtype, nb, sd = BLOCK[kind]
    a = np.frombuffer(rng.bytes(rows * (cols // QK) * nb), dtype=np.uint8).reshape(rows, cols // QK, nb).copy()
    scale = rng.uniform(0.5, 1.5, size=(rows, cols // QK)) * gain / (sd * np.sqrt(cols))
    if signed:
        scale *= rng.choice([-1.0, 1.0], size=scale.shape)
    a[:, :, 0:2] = scale.astype(np.float16).view(np.uint8).reshape(rows, cols // QK, 2)
    return a.reshape(rows, -1), qtype


def tensors(a, vocab):
    """(name, shape, kind) in file order; shape is ggml's reversed (the row length last); kind: q (quantized
    blocks), ones (a norm, f32) or router (f32 Gaussian: logits of unit scale on normed inputs)."""
    kv = a.dim // a.heads * a.kv_heads
    t = [("token_embd.weight", (vocab, a.dim), "q")]
    for l in range(a.layers):
        b = f"blk.{l}."
        t += [(b + "attn_q.weight", (a.dim, a.dim), "q"), (b + "attn_k.weight", (kv, a.dim), "q"),
              (b + "attn_v.weight", (kv, a.dim), "q"), (b + "attn_output.weight", (a.dim, a.dim), "q")]
        if a.experts:
            e = a.experts
            t += [(b + "ffn_gate_inp.weight", (e, a.dim), "router"), (b + "ffn_gate_exps.weight", (e, a.ffn, a.dim), "q"),
                  (b + "ffn_up_exps.weight", (e, a.ffn, a.dim), "q"), (b + "ffn_down_exps.weight", (e, a.dim, a.ffn), "q"),
                  (b + "attn_q_norm.weight", (a.dim,), "ones"), (b + "attn_k_norm.weight", (kv,), "ones")]
        else:
            t += [(b + "ffn_gate.weight", (a.ffn, a.dim), "q"), (b + "ffn_up.weight", (a.ffn, a.dim), "q"),
                  (b + "ffn_down.weight", (a.dim, a.ffn), "q")]
        t += [(b + "attn_norm.weight", (a.dim,), "ones"), (b + "ffn_norm.weight", (a.dim,), "ones")]
    return t + [("output_norm.weight", (a.dim,), "ones"), ("output.weight", (vocab, a.dim), "q")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=sorted(PRESET), default="llama", help="the shape preset (default llama)")
    ap.add_argument("--out")
    for flag in ("--layers", "--dim", "--heads", "--kv-heads", "--ffn", "--experts", "--top-k"):
        ap.add_argument(flag, type=int)
    ap.add_argument("--ctx", type=int, default=4096, help="context_length (default 4096)")
    ap.add_argument("--type", choices=sorted(BLOCK), default="Q4_0")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tokenizer", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    a = ap.parse_args()
    for key, val in PRESET[a.arch].items():
        if getattr(a, key, None) is None:
            setattr(a, key, val)
    if os.path.exists(a.out):
        print(f"{a.out}: exists, kept")
        return 0
    if a.dim % a.heads or a.heads % a.kv_heads or a.dim % QK or a.ffn % QK:
        sys.exit(f"make_7b_gguf: dim {a.dim}, heads {a.heads}, kv heads {a.kv_heads}, ffn {a.ffn}: "
                 "heads must divide dim, kv heads heads, 32 dim and ffn")
    if bool(a.experts) != (a.arch == "olmoe") or (a.experts and not 1 <= a.top_k <= a.experts):
        sys.exit(f"make_7b_gguf: --arch {a.arch} with {a.experts} experts, top {a.top_k}: "
                 "olmoe needs experts and a top-k in 1..experts, llama none")
    if not os.path.exists(a.tokenizer):
        sys.exit(f"make_7b_gguf: {a.tokenizer}: no such file (scripts/setup.sh fetches it)")
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    tmp = a.out + ".tmp"
    w = gguf.GGUFWriter(tmp, a.arch)
    w.add_name(f"random {a.arch} {a.layers}x{a.dim} ({a.type}, seed {a.seed})")
    shape = {"context_length": a.ctx, "embedding_length": a.dim, "block_count": a.layers,
             "feed_forward_length": a.ffn, "attention.head_count": a.heads,
             "attention.head_count_kv": a.kv_heads, "rope.dimension_count": a.dim // a.heads}
    if a.experts:
        shape.update({"expert_count": a.experts, "expert_used_count": a.top_k})
    for key, val in shape.items():
        w.add_uint32(f"{a.arch}.{key}", val)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    vocab = copy_tokenizer(w, a.tokenizer)
    w.add_vocab_size(vocab)
    hd = a.dim // a.heads
    mats = tensors(a, vocab)
    qtype, nb, _ = BLOCK[a.type]
    for name, dims, kind in mats:
        if kind == "q":
            rows = int(np.prod(dims[:-1]))
            w.add_tensor_info(name, [*dims[:-1], dims[-1] // QK * nb], np.dtype(np.uint8),
                              rows * dims[-1] // QK * nb, qtype)
        else:
            w.add_tensor_info(name, list(dims), np.dtype(np.float32), 4 * int(np.prod(dims)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.Generator(np.random.PCG64(a.seed))
    total = 0
    for name, dims, kind in mats:  # one tensor in memory at a time (the largest: 113 MB)
        if kind == "q":
            gain = 1.0
            if a.spread and name == "token_embd.weight":
                gain = np.sqrt(a.dim)  # entries of unit size
            elif a.spread and name.endswith(RESIDUAL):
                gain = 1 / np.sqrt(a.layers)
            t = quant_blocks(rng, int(np.prod(dims[:-1])), dims[-1], a.type, a.spread, gain)[0]
        elif kind == "router":
            t = (rng.standard_normal(dims) / np.sqrt(dims[-1])).astype(np.float32)
        else:
            t = np.ones(dims, dtype=np.float32)
        w.write_tensor_data(t)
        total += t.nbytes
    w.close()
    os.replace(tmp, a.out)
    moe = f", {a.experts} experts of ffn {a.ffn}, top {a.top_k}" if a.experts else f", ffn {a.ffn}"
    print(f"{a.out}: {a.arch}, {a.layers} layers, dim {a.dim}, {a.heads} heads ({a.kv_heads} kv) of {hd}{moe}, "
          f"vocab {vocab} ({a.tokenizer}'s tokenizer), {a.type}, seed {a.seed}: {total / 2**30:.2f} GiB of tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
