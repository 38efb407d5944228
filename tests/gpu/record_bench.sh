#!/usr/bin/env bash
# End-to-end record speed on the GPU (scripts/gpu-check.sh runs it): ./aha
# record --device cuda on an OLMo-2-1B-shaped model with random float16
# weights (tests/gpu/make_random_model.py), context 4096, 3 eps and 7
# windows, trace written to disk. Prints aha's own summary (tokens/s).
#   tests/gpu/record_bench.sh [TOKENS] [DTYPE]   (defaults 16384 bf16)
set -eu
cd "$(dirname "$0")/../.."
N=${1:-16384} DT=${2:-bf16} DIR=${TMPDIR:-/tmp}/aha-record-bench
mkdir -p "$DIR"
[ -f "$DIR/olmo2-1b/model.safetensors" ] || python3 tests/gpu/make_random_model.py "$DIR/olmo2-1b"
python3 - "$DIR/tokens.tok" "$N" <<'PY'
import struct, sys
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
ids = np.random.default_rng(0).integers(0, 100352, n, dtype="<i4")
with open(path, "wb") as f:  # AHATOK01: one document of n tokens
    f.write(b"AHATOK01" + struct.pack("<Q", 1) + struct.pack("<I", n) + ids.tobytes())
PY
for route in "" "--route oracle --window 128"; do
    echo "--- aha record --device cuda --dtype $DT ${route:-(observe)}"
    ./aha record "$DIR/olmo2-1b" "$DIR/tokens.tok" -o "$DIR/trace.h5" --force --quiet --device cuda \
        --dtype "$DT" --ctx 4096 --batch 512 --eps 0.01,0.05,0.1 --windows 16,32,64,128,256,512,1024 $route
done
ls -l "$DIR/trace.h5"
