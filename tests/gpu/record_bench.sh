#!/usr/bin/env bash
# End-to-end record speed on the GPU (scripts/gpu-check.sh runs it): ./aha
# record --device cuda at context 4096 in chunks of 512, 3 eps and 7 windows,
# trace written to disk, observing and then routed (oracle, window 128), on
# MODEL: a checkpoint (SmolLM2, Gemma-3 270M, ...), or olmo2-1b: an
# OLMo-2-1B-shaped model with random float16 weights
# (tests/gpu/make_random_model.py). The tokens are random ids of the model's
# vocabulary. Prints aha's own summary (tokens/s, the weights resident).
#   tests/gpu/record_bench.sh [MODEL] [TOKENS] [DTYPE]   (defaults olmo2-1b 16384 f16:
#   the random model's own type, so its matrices feed cuBLAS as stored)
set -eu
cd "$(dirname "$0")/../.."
MODEL=${1:-olmo2-1b} N=${2:-16384} DT=${3:-f16} DIR=${TMPDIR:-/tmp}/aha-record-bench
mkdir -p "$DIR"
if [ "$MODEL" = olmo2-1b ]; then
    MODEL=$DIR/olmo2-1b
    [ -f "$MODEL/model.safetensors" ] || python3 tests/gpu/make_random_model.py "$MODEL"
fi
VOCAB=$(./aha info "$MODEL" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["vocab"])')
python3 - "$DIR/tokens.tok" "$N" "$VOCAB" <<'PY'
import struct, sys
import numpy as np
path, n, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ids = np.random.default_rng(0).integers(0, vocab, n, dtype="<i4")
with open(path, "wb") as f:  # AHATOK01: one document of n tokens
    f.write(b"AHATOK01" + struct.pack("<Q", 1) + struct.pack("<I", n) + ids.tobytes())
PY
for route in "" "--route oracle --window 128"; do
    echo "--- aha record $(basename "$MODEL") --device cuda --dtype $DT ${route:-(observe)}"
    ./aha record "$MODEL" "$DIR/tokens.tok" -o "$DIR/trace.h5" --force --quiet --device cuda \
        --dtype "$DT" --ctx 4096 --batch 512 --eps 0.01,0.05,0.1 --windows 16,32,64,128,256,512,1024 $route
done
ls -l "$DIR/trace.h5"
