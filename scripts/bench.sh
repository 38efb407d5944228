#!/usr/bin/env bash
# CPU benchmarks. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for this
# command only, so OpenBLAS picks its own kernel for this CPU (it says which);
# tests and CI keep them as the machine sets them.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "note       OPENBLAS_CORETYPE='${OPENBLAS_CORETYPE:-}' OPENBLAS_L2_SIZE='${OPENBLAS_L2_SIZE:-}' unset for this run"
M=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_forward "$M" "${REPS:-5}"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_record "$M" datasets/corpora/prose "${REPS:-3}"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_tokenizer "$M" "${REPS:-5}"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_trace "${TMPDIR:-/tmp}"
# 10^9-decision report: writes a 2.9 GB synthetic trace once (kept in $TMPDIR), then times aha report on it
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_report
