"""A real GGUF's shape with random weights, for the GPU machine, which has no
model files (only 64 MiB travel there; scripts/gpu-check.sh).

    python3 tests/gpu/gguf_shape.py SRC OUT --header   OUT = SRC's header alone
    python3 tests/gpu/gguf_shape.py SRC OUT            OUT = SRC's header + random tensor data

The header is everything before the tensor data: metadata (architecture,
dimensions, the tokenizer) and each tensor's name, shape, type and offset.
So OUT is the model aha loads from SRC -- the same architecture, tokenizer,
stored types and sizes -- with random weights drawn so that each product
keeps its input's scale (matrices at 1 / sqrt(fan-in), norms near 1), every
block's scales set to match its type's quants (no quantization: it writes at
disk speed). SRC may be a header written with --header. Deterministic
(--seed). numpy only; plain Python for --header.
"""
import argparse
import struct
import sys

# type id: (name, values per block, bytes per block); ggml's table (ggml.h)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34), 2: ("Q4_0", 32, 18),
         3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 12: ("Q4_K", 256, 144),
         13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210)}
# GGUF metadata value types: fixed sizes; 8 = string, 9 = array
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_header(f):
    """(header bytes, alignment, [(name, dims, type, offset)]) of the GGUF open in f."""
    data = bytearray()

    def take(n):
        b = f.read(n)
        if len(b) != n:
            sys.exit(f"{f.name}: truncated GGUF header")
        data.extend(b)
        return b

    def u32():
        return struct.unpack("<I", take(4))[0]

    def u64():
        return struct.unpack("<Q", take(8))[0]

    def string():
        return take(u64()).decode("utf-8", "replace")

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            sub, n = u32(), u64()
            if sub in SIZES:
                take(SIZES[sub] * n)
                return None
            return [value(sub) for _ in range(n)]
        b = take(SIZES[t])
        return struct.unpack({4: "<I", 5: "<i", 10: "<Q", 11: "<q"}.get(t, f"{SIZES[t]}s"), b)[0]

    if take(4) != b"GGUF" or u32() != 3:
        sys.exit(f"{f.name}: not a GGUF v3 file")
    n_tensors, n_kv = u64(), u64()
    align = 32
    for _ in range(n_kv):
        key, t = string(), u32()
        v = value(t)
        if key == "general.alignment":
            align = v
    tensors = []
    for _ in range(n_tensors):
        name, nd = string(), u32()
        dims = [u64() for _ in range(nd)]
        tensors.append((name, dims, u32(), u64()))
    take(-len(data) % align)
    return bytes(data), align, tensors


def blocks(rng, t, dims):
    """Random bytes of a tensor of type t, its scales set so values have the std of a matrix at 1 /
    sqrt(fan-in) (dims[0] is the row length), or 1 + 0.1 N for a 1-D tensor (a norm)."""
    import numpy as np
    name, bs, bb = TYPES[t]
    n = 1
    for d in dims:
        n *= d
    sd = 1 / np.sqrt(dims[0]) if len(dims) > 1 else 0.1
    if bs == 1:  # float values
        x = rng.standard_normal(n, dtype=np.float32) * sd + (0 if len(dims) > 1 else 1)
        if name == "F32":
            return x.tobytes()
        if name == "F16":
            return x.astype(np.float16).tobytes()
        return (x.view(np.uint32) + 0x8000 >> 16).astype(np.uint16).tobytes()  # BF16, rounded
    nb = n // bs
    a = np.frombuffer(rng.bytes(nb * bb), dtype=np.uint8).reshape(nb, bb).copy()

    def f16(off, v):  # an f16 field per block
        a[:, off:off + 2] = np.full(nb, v, dtype=np.float16).view(np.uint8).reshape(nb, 2)

    # quants' std and mean (uniform 4, 5, 8 or 6 bits), then where the scales sit
    if name == "Q8_0":
        f16(0, sd / 73.6)
    elif name in ("Q4_0", "Q5_0"):
        f16(0, sd / (4.6 if name == "Q4_0" else 9.2))
    elif name in ("Q4_1", "Q5_1"):
        std, mean = (4.6, 7.5) if name == "Q4_1" else (9.2, 15.5)
        f16(0, sd / std), f16(2, -mean * sd / std)
    elif name in ("Q4_K", "Q5_K"):  # every sub-block scale 1 and min 1: value d q - dmin
        std, mean = (4.6, 7.5) if name == "Q4_K" else (9.2, 15.5)
        f16(0, sd / std), f16(2, mean * sd / std)
        a[:, 4:12] = 1
        a[:, 12:16] = 0x11
    elif name == "Q6_K":  # int8 scales 1: value d (q - 32)
        a[:, 192:208] = 1
        f16(208, sd / 18.5)
    return a.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--header", action="store_true", help="write SRC's header alone")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    with open(a.src, "rb") as f:
        header, align, tensors = read_header(f)
    bad = sorted({t for _, _, t, _ in tensors if t not in TYPES})
    if bad and not a.header:
        sys.exit(f"{a.src}: tensor types {bad} are not drawn here ({sorted(v[0] for v in TYPES.values())})")
    with open(a.out + ".tmp", "wb") as f:
        f.write(header)
        if not a.header:
            import numpy as np
            rng = np.random.default_rng(a.seed)
            for name, dims, t, off in sorted(tensors, key=lambda x: x[3]):
                pos = f.tell() - len(header)
                if off < pos:
                    sys.exit(f"{a.src}: tensor {name} overlaps the one before it")
                f.write(b"\0" * (off - pos))
                f.write(blocks(rng, t, dims))
    import os
    os.replace(a.out + ".tmp", a.out)
    print(f"{a.out}: {len(tensors)} tensors, {'header only' if a.header else 'random weights'}, "
          f"{os.path.getsize(a.out) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
