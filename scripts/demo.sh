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
if [ "${DEMO_DEVICE:-cpu}" = cuda ] && [ ! -f build/gpu/libaha_cuda.so ]; then
    echo "demo: DEMO_DEVICE=cuda needs build/gpu/libaha_cuda.so: run \`make cuda-lib\` (nvcc on PATH) or \`DEMO_DEVICE=cuda make demo\`" >&2
    exit 1
fi
P=$PWD/datasets/corpora/prose
mkdir -p "$OUT"
run() { echo; echo "\$ $*"; "$@"; }
run ./aha info "$M"
run ./aha generate "$M" "The capital of France is" -n 24 "${DEV[@]}"
run ./aha ppl "$M" "$TEXT" --ctx 512 --max-tokens 1024 "${DEV[@]}"
# 4 sinks: the first tokens soak up attention mass that says nothing about
# reach; without them almost every decision looks global at eps 0.01.
REC=(--sinks 4 --windows 16,32,64,128,256,512,1024 --eps 0.01,0.05,0.1 --ctx 2048 --max-tokens 8192)
run ./aha record "$M" datasets/corpora/prose -o "$OUT/trace.h5" --force "${REC[@]}" "${DEV[@]}"
run ./aha report "$OUT/trace.h5" -o "$OUT/report" --force
run ./aha plot "$OUT/trace.h5" -o "$OUT/figures" --force
run ./aha notebook "$OUT/trace.h5" -o "$OUT/analysis.ipynb" --force
# A router fitted to this model (aha fit) against the oracle and random, on
# prose the fit never read: the symlinked folders fix which documents each
# step sees (in name order; the split hashes the ordinal). The fit reads 3000
# tokens: it fits on jonah and --seed 3 holds out philemon and ruth's start
# (the held-out table); the grid runs on the song of solomon and the Apache
# licence.
rm -rf "$OUT/fit-docs" "$OUT/eval-docs"
mkdir -p "$OUT/fit-docs" "$OUT/eval-docs"
ln -s "$P/kjv-philemon.txt" "$OUT/fit-docs/1-kjv-philemon.txt"
ln -s "$P/kjv-jonah.txt" "$OUT/fit-docs/2-kjv-jonah.txt"
ln -s "$P/kjv-ruth.txt" "$OUT/fit-docs/3-kjv-ruth.txt"
ln -s "$P/kjv-song-of-solomon.txt" "$P/licence-apache-2.0.txt" "$OUT/eval-docs/"
run ./aha fit "$M" "$OUT/fit-docs" -o "$OUT/router.safetensors" --force --window 128 --sinks 4 --ctx 512 \
    --max-tokens 3000 --holdout 0.5 --seed 3 --quiet
run ./aha sweep "$M" "$OUT/eval-docs" -o "$OUT/grid.h5" --force --router "$OUT/router.safetensors" \
    --windows 128 --sinks 4 --ctx 512 --max-tokens 2048 --quiet "${DEV[@]}" \
    --policies 'learned:0.35,0.5 oracle:0.1,0.3 random:0.5,0.9 local'
run ./aha report "$OUT/grid.h5" -o "$OUT/grid-report" --force --delta 0.01
# The frontier rows of report.csv: the number to set beside the paper's 11.6%.
echo
echo "smallest fraction global with perplexity change <= +1% (aha report --delta 0.01), w=128, sinks 4, ctx 512,"
echo "on 2048 tokens the fit never read (kjv-song-of-solomon, licence-apache-2.0); all decisions (t >= w):"
awk -F, '$2 == "frontier" && $10 != "delta" { v[$3 "," $9 "," $10] = $11 }
    END {
        n = split("learned|fitted router (learned, sigmoid(logit) > tau 0.35, 0.5)|oracle|oracle by mass (d_eps > w, eps 0.1, 0.3)|random|random:P (P 0.5, 0.9)", a, "|")
        for (i = 1; i < n; i += 2) {
            all = v[a[i] ",all,smallest_fraction_global"]; tw = v[a[i] ",t_ge_w,smallest_fraction_global"]
            printf "  %-58s %s (%s), %s\n", a[i + 1], all == "" ? "-" : sprintf("%.3f", all),
                tw == "" ? "-" : sprintf("%.3f", tw), v[a[i] ",all,how"]
        }
    }' "$OUT/grid-report/report.csv"
# The second real model, Gemma-3 270M, over the same text: three whole
# documents that both tokenizers fit in 8192 tokens, so both models read
# every character of it. Five of its six layers run a native 512-key window;
# the fractions count its 3 global layers. SmolLM2 again on exactly this text,
# then one figure of both sparsity curves.
G=models/gemma-3-270m-q4_k_m.gguf
rm -rf "$OUT/compare-docs" && mkdir -p "$OUT/compare-docs"
ln -s "$P/kjv-1-john.txt" "$P/kjv-philemon.txt" "$P/licence-apache-2.0.txt" "$OUT/compare-docs/"
run ./aha info "$G"
run ./aha generate "$G" "The capital of France is" -n 24 "${DEV[@]}"
run ./aha record "$G" "$OUT/compare-docs" -o "$OUT/gemma3.h5" --force "${REC[@]}" "${DEV[@]}"
run ./aha record "$M" "$OUT/compare-docs" -o "$OUT/smollm2.h5" --force "${REC[@]}" "${DEV[@]}"
run ./aha plot --compare "$OUT/smollm2.h5" "$OUT/gemma3.h5" -o "$OUT/compare" --force --label SmolLM2-135M,Gemma-3-270M
echo
echo "trace:    $OUT/trace.h5 (schema: docs/trace-format.md)"
echo "report:   $OUT/report/report.md (also .csv, .json)"
echo "figures:  $OUT/figures/*.png (each with its .dat and .gp beside it)"
echo "notebook: $OUT/analysis.ipynb"
echo "compare:  $OUT/compare/compare_sparsity.png (SmolLM2 and Gemma-3 on $OUT/compare-docs; Gemma-3's 3 global layers)"
echo "router:   $OUT/router.safetensors (aha fit); grid: $OUT/grid.h5, $OUT/grid-report/report.md"
