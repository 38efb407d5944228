"""Write a random-weight checkpoint of a real model's shape as a Hugging Face
folder (config.json + model.safetensors, float16), for the end-to-end GPU
benchmark of scripts/gpu-check.sh: aha record on an OLMo-2-1B-shaped model
without downloading one. numpy only (the GPU machine has no registry).

    python3 tests/gpu/make_random_model.py OUT_DIR [--layers N]
"""
import argparse
import json
import os
import struct

import numpy as np

# OLMo-2-1B (allenai/OLMo-2-0425-1B): the shapes, not the weights.
CONFIG = {
    "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 2048,
    "intermediate_size": 8192, "num_attention_heads": 16, "num_key_value_heads": 16,
    "num_hidden_layers": 16, "vocab_size": 100352, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "tie_word_embeddings": False,
}


def shapes(cfg):
    """(name, shape) of every tensor, in file order."""
    dim, ffn, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = kvd = dim  # 16 heads x 128 = 2048, no GQA
    yield "model.embed_tokens.weight", (V, dim)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield from ((p + "self_attn.q_proj.weight", (hd, dim)), (p + "self_attn.k_proj.weight", (kvd, dim)),
                    (p + "self_attn.v_proj.weight", (kvd, dim)), (p + "self_attn.o_proj.weight", (dim, hd)),
                    (p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (kvd,)),
                    (p + "mlp.gate_proj.weight", (ffn, dim)), (p + "mlp.up_proj.weight", (ffn, dim)),
                    (p + "mlp.down_proj.weight", (dim, ffn)), (p + "post_attention_layernorm.weight", (dim,)),
                    (p + "post_feedforward_layernorm.weight", (dim,)))
    yield "model.norm.weight", (dim,)
    yield "lm_head.weight", (V, dim)


def draw(shape, rng):
    """float16: norms near 1, matrices at 1/sqrt(fan-in)."""
    if len(shape) == 1:
        return (1 + 0.1 * rng.standard_normal(shape, np.float32)).astype(np.float16)
    return (rng.standard_normal(shape, np.float32) / np.sqrt(shape[1])).astype(np.float16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=CONFIG["num_hidden_layers"])
    a = ap.parse_args()
    cfg = dict(CONFIG, num_hidden_layers=a.layers)
    os.makedirs(a.out, exist_ok=True)
    header, off = {}, 0
    for name, shape in shapes(cfg):
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:  # one tensor in memory at a time
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape in shapes(cfg):
            f.write(draw(shape, rng).tobytes())
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    print(f"{a.out}: {off / 1e9:.2f} GB of float16, {cfg['num_hidden_layers']} layers")


if __name__ == "__main__":
    main()
