#!/usr/bin/env bash
# The demo: the real SmolLM2-135M on the CPU — what it is, what it writes,
# how well it predicts real text.
set -euo pipefail
cd "$(dirname "$0")/.."
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
TEXT=/usr/share/common-licenses/GPL-3
run() { echo; echo "\$ $*"; "$@"; }
run ./aha info "$M"
run ./aha generate "$M" "The capital of France is" -n 24
run ./aha ppl "$M" "$TEXT" --ctx 512 --max-tokens 1024
