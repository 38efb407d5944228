#!/usr/bin/env bash
# The demo: the real SmolLM2-135M on the CPU (or DEMO_DEVICE=cuda) — what it is, what it writes,
# how well it predicts real text — then the instrument itself: a recording of
# how far back its attention reaches on a built-in corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
TEXT=/usr/share/common-licenses/GPL-3
OUT=${DEMO_OUT:-demo-out}
# DEMO_DEVICE=cuda runs the model on an NVIDIA GPU (./aha built with nvcc).
DEV=(--device "${DEMO_DEVICE:-cpu}")
mkdir -p "$OUT"
run() { echo; echo "\$ $*"; "$@"; }
run ./aha info "$M"
run ./aha generate "$M" "The capital of France is" -n 24 "${DEV[@]}"
run ./aha ppl "$M" "$TEXT" --ctx 512 --max-tokens 1024 "${DEV[@]}"
# 4 sinks: the first tokens soak up attention mass that says nothing about
# reach; without them almost every decision looks global at eps 0.01.
run ./aha record "$M" datasets/corpora/prose -o "$OUT/trace.h5" --force --sinks 4 \
    --windows 16,32,64,128,256,512,1024 --eps 0.01,0.05,0.1 --ctx 2048 --max-tokens 8192 "${DEV[@]}"
run ./aha report "$OUT/trace.h5" -o "$OUT/report"
run ./aha plot "$OUT/trace.h5" -o "$OUT/figures"
run ./aha notebook "$OUT/trace.h5" -o "$OUT/analysis.ipynb" --force
echo
echo "trace:    $OUT/trace.h5 (schema: docs/trace-format.md)"
echo "report:   $OUT/report/report.md (also .csv, .json)"
echo "figures:  $OUT/figures/*.png (each with its .dat and .gp beside it)"
echo "notebook: $OUT/analysis.ipynb"
