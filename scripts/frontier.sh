#!/usr/bin/env bash
# make frontier: the paper's question on SmolLM2-135M, end to end
# (docs/sweeps.md, "The frontier on SmolLM2"). Routers are fitted (aha fit)
# at each window on the first half of the prose corpus's documents and
# evaluated on the second half and on code, in one sweep grid per window and
# corpus: the fitted router at the taus that give 10, 20, 30, 50, 60 and 80%
# global on the fitting data, random:P at 10-80%, static top-k heads (20, 30,
# 50% of them, ranked on the fitting data), the window-error oracle and all
# local. Prints the matched-sparsity comparison and the smallest fraction
# global within +1% (scripts/frontier_compare.py). ~1.5-2 hours on 2 cores.
# Environment: FRONTIER_OUT (frontier-out), WINDOWS ("64 128 256"), FIT_ARGS
# (the fit's flags beyond window, sinks and ctx), THREADS (0: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
OUT=${FRONTIER_OUT:-frontier-out}
WINDOWS=${WINDOWS:-64 128 256}
FIT_ARGS=${FIT_ARGS:---regress log-error}
COMMON=(--sinks 4 --ctx 1024 --threads "${THREADS:-0}")
run() { echo; echo "\$ $*"; "$@"; }
mkdir -p "$OUT"
python3 scripts/frontier_data.py datasets/corpora "$OUT"
# static top-k heads are ranked by their oracle rate on data the fit reads too
run ./aha record "$M" "$OUT/fit.jsonl" -o "$OUT/heads.h5" --force --quiet --max-docs 9 \
    --windows "${WINDOWS// /,}" "${COMMON[@]}"
LH=$(./aha info "$OUT/heads.h5" --json | python3 -c 'import json,sys; a=json.load(sys.stdin)["attributes"]; print(int(a["n_layers"]) * int(a["n_heads"]))')
K=$(awk -v n="$LH" 'BEGIN { printf "%d,%d,%d", n * 0.2 + 0.5, n * 0.3 + 0.5, n * 0.5 + 0.5 }') # 20, 30, 50%
for w in $WINDOWS; do
    # shellcheck disable=SC2086 # FIT_ARGS is a list of flags
    run ./aha fit "$M" "$OUT/fit.jsonl" -o "$OUT/router-w$w.safetensors" --force --window "$w" --holdout 0 --quiet \
        "${COMMON[@]}" $FIT_ARGS | tee "$OUT/fit-w$w.txt"
    TAUS=$(sed -n 's/^tau giving fraction global on the fitting data: //p' "$OUT/fit-w$w.txt" | tr ' ' '\n' |
        awk -F: '$1 != 0.05 && $1 != 0.4 { printf "%s%s", s, $2; s = "," }') # 10 20 30 50 60 80%
    for corpus in prose code; do
        run ./aha sweep "$M" "$OUT/$corpus-eval.jsonl" -o "$OUT/grid-$corpus-w$w.h5" --force --quiet \
            --router "$OUT/router-w$w.safetensors" --heads-from "$OUT/heads.h5" --windows "$w" "${COMMON[@]}" \
            --policies "learned:$TAUS random:0.1,0.2,0.3,0.5,0.8 topk:$K werr:0.1,0.3 local"
        run ./aha plot "$OUT/grid-$corpus-w$w.h5" -o "$OUT/figures-$corpus-w$w" --force >/dev/null
    done
done
run ./aha report "$OUT"/grid-*.h5 -o "$OUT/report" --force --out-format json --delta 0.01 --compare >/dev/null
python3 scripts/frontier_compare.py "$OUT/report/report.json" | tee "$OUT/compare.md"
echo
echo "grids: $OUT/grid-{prose,code}-w*.h5; routers: $OUT/router-w*.safetensors; figures: $OUT/figures-*/frontier.png"
