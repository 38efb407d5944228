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
# aha record against the plain prefill of the same contexts (the prose corpus's
# first 4096 ids as one token file: 2 contexts of 2048, then 8 of 512), with
# OpenMP's threads waiting passively, as ./aha sets for itself (aha.c)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_record "$M" datasets/corpora/prose "${REPS:-3}" 1 2048 4096
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_record "$M" datasets/corpora/prose "${REPS:-3}" 0 512 4096 | grep '^record'
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_tokenizer "$M" "${REPS:-5}"
G=models/gemma-3-270m-q4_k_m.gguf # SentencePiece-style BPE, 262144 tokens, merges derived at load
[ "$M" = "$G" ] || env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_tokenizer "$G" "${REPS:-5}"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_trace "${TMPDIR:-/tmp}"
# 10^9-decision report: writes a 2.9 GB synthetic trace once (kept in $TMPDIR), then times aha report on it
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_report
# aha fit (issue 16): REPS_FIT runs of the default fit (werr labels, cost
# weights, w=128, 4 sinks, ctx 512) on the first 3000 prose tokens, the first
# document (kjv-1-john); tokens/s as aha fit counts it (every pass over every
# token), peak RSS as it prints it (getrusage); medians. Model load included.
B=$(mktemp -d "${TMPDIR:-/tmp}/aha_bench_fit_XXXXXX")
fit_tps=() fit_rss=() fit_s=()
for _ in $(seq "${REPS_FIT:-3}"); do
    line=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./aha fit "$M" datasets/corpora/prose -o "$B/r.safetensors" --force \
        --window 128 --sinks 4 --ctx 512 --max-tokens 3000 --quiet | grep '^wrote')
    fit_s+=("$(sed -E 's/.*; ([0-9.]+) s \(.*/\1/' <<<"$line")")
    fit_tps+=("$(sed -E 's/.*, ([0-9.]+) tok\/s.*/\1/' <<<"$line")")
    fit_rss+=("$(sed -E 's/.*peak RSS ([0-9]+) MiB.*/\1/' <<<"$line")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ x[NR] = $1 } END { print x[int((NR + 1) / 2)] }'; }
echo "fit        3000 prose tokens (datasets/corpora/prose, kjv-1-john), w=128, werr > 0.1, cost weights, 4 sinks, ctx 512," \
    "median of ${#fit_s[@]}: $(median "${fit_s[@]}") s, $(median "${fit_tps[@]}") tok/s (all passes), peak RSS $(median "${fit_rss[@]}") MiB"
# The grid sweep against one plain prefill of the same tokens, side by side:
# aha sweep --policies (1 full-attention run with the dependency pass + 9
# routed runs, with the router just fitted) and aha ppl, both
# on the first 2048 tokens of kjv-song-of-solomon.txt in 512-token chunks,
# wall time of the command (model load included in both); ppl the median of REPS_PPL.
T=datasets/corpora/prose/kjv-song-of-solomon.txt
now() { date +%s.%N; }
t0=$(now)
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./aha sweep "$M" "$T" -o "$B/grid.h5" --force --router "$B/r.safetensors" \
    --windows 128 --sinks 4 --ctx 512 --max-tokens 2048 --quiet \
    --policies 'learned:0.2,0.35,0.5 oracle:0.05,0.1,0.3 random:0.5,0.9 local' >/dev/null
t_grid=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')
ppl_s=()
for _ in $(seq "${REPS_PPL:-3}"); do
    t0=$(now)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./aha ppl "$M" "$T" --ctx 512 --max-tokens 2048 >/dev/null
    ppl_s+=("$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')")
done
t_ppl=$(median "${ppl_s[@]}")
awk -v g="$t_grid" -v p="$t_ppl" -v n="${#ppl_s[@]}" 'BEGIN { printf "grid       2048 tokens (kjv-song-of-solomon, ctx 512), w=128, 9 routed runs + 1 full with the dependency pass: sweep %.1f s vs aha ppl %.1f s (median of %d) -> %.1fx one prefill\n", g, p, n, g / p }'
rm -rf "$B"
# aha record against HF transformers' output_attentions=True and numpy, the
# route researchers take today (issue 40): scripts/bench-hf.sh.
scripts/bench-hf.sh
# Gemma-3 270M (five of six layers natively local, window 512): prefill at ctx
# 512 and 2048 (synthetic ids), and aha record at ctx 2048 on the first 4096
# prose tokens against the plain prefill of the same contexts; medians, same machine.
GEMMA=${MODEL_GEMMA:-models/gemma-3-270m-q4_k_m.gguf}
if [ -f "$GEMMA" ]; then
    echo "gemma3     $GEMMA: prefill (synthetic ids, median of ${REPS:-5}), record (datasets/corpora/prose, median of ${REPS:-3})"
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_forward "$GEMMA" "${REPS:-5}"
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_record "$GEMMA" datasets/corpora/prose "${REPS:-3}" 0 2048 4096 | grep '^record'
else
    echo "gemma3     skipped: $GEMMA is not on this machine (scripts/setup.sh fetches it)"
fi
# A 7B-class shape: scripts/bench-7b.sh (Llama-2-7B dimensions, random Q4_0
# weights written once into bench-out/7b), 2048 tokens recorded, tokens/s and
# peak RSS; a clear skip line when this aha cannot hold it in memory.
scripts/bench-7b.sh
