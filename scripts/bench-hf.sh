#!/usr/bin/env bash
# aha record against the route researchers take today (issue 40; make bench
# runs it, and it runs alone, after scripts/setup.sh fixtures and make aha): HF
# transformers, eager attention with output_attentions=True, then d_eps by
# vectorised numpy (scripts/bench_hf_route.py). Both read the same ids: the
# first N of kjv-mark.txt as aha tokenizes it, written as one token file, one
# context of N; 3 eps (aha record's defaults), sinks 0, 2 threads each (aha
# --threads, torch.set_num_threads; the HF route with OpenMP's own wait policy).
# First both routes' d_eps at 256 tokens, compared (the script fails below
# 0.99 equal); then wall time of the whole command (imports and model load
# included in both) and peak RSS, from /usr/bin/time, medians of REPS_HF (3),
# interleaved. The HF route keeps layers x heads x N^2 floats, so its memory
# is extrapolated as a + b N^2 through the two longest lengths to where it
# passes MemAvailable; HF_OOM=1 finds that length by running it (minutes).
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for both, as scripts/bench.sh
# does for its commands; ./aha then asks for this CPU's kernels itself where
# OpenBLAS fell back to older ones (common/blas_core.h), and the line
# "openblas" says which core aha ran with.
set -euo pipefail
cd "$(dirname "$0")/.."
median() { printf '%s\n' "$@" | sort -g | awk '{ x[NR] = $1 } END { print x[int((NR + 1) / 2)] }'; }
S=models/SmolLM2-135M-Instruct.Q4_1.gguf
B=$(mktemp -d "${TMPDIR:-/tmp}/aha_bench_hf_XXXXXX")
./aha tokenize "$S" "$(cat datasets/corpora/prose/kjv-mark.txt)" --ids |
    .venv/bin/python scripts/bench_hf_route.py --write-tokens "$B/mark.tok"
aha_record=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./aha record "$S" "$B/mark.tok" -o "$B/t.h5" --force --quiet --threads 2)
hf_route=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u OMP_WAIT_POLICY
          .venv/bin/python scripts/bench_hf_route.py "$B/mark.tok")
# quiet CMD...: CMD's output into $B/out, shown (and the bench ended) only if it fails
quiet() { "$@" >"$B/out" 2>&1 || { cat "$B/out" >&2; exit 1; }; }
# timed CMD...: "seconds peak-RSS-KiB" of CMD
timed() { quiet /usr/bin/time -f '%e %M' -o "$B/time" "$@"; cat "$B/time"; }
echo "hf route   SmolLM2-135M, the first N ids of datasets/corpora/prose/kjv-mark.txt (aha's tokenizer) as one token" \
    "file, one context of N, 3 eps (0.01, 0.05, 0.1), sinks 0, 2 threads each: aha record (7 windows, trace written)" \
    "vs HF transformers (eager attention, output_attentions=True) + d_eps by vectorised numpy;" \
    "wall time with imports and model load, peak RSS (/usr/bin/time); median of ${REPS_HF:-3}, interleaved;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
quiet env OPENBLAS_VERBOSE=2 "${aha_record[@]}" --ctx 256 --max-tokens 256
echo "openblas   aha record with core $(sed -n 's/^Core: //p' "$B/out" | tail -n1)"
quiet "${hf_route[@]}" 256 --check "$B/t.h5"
sed -n 's/^check      /hf check   256 tokens, /p' "$B/out"
declare -A aha_s aha_k hf_s hf_k # per length: the runs' seconds and peak RSS in KiB
for _ in $(seq "${REPS_HF:-3}"); do
    for n in ${HF_LENGTHS:-2048 3072}; do
        r=$(timed "${aha_record[@]}" --ctx "$n" --max-tokens "$n"); aha_s[$n]+=" ${r% *}" aha_k[$n]+=" ${r#* }"
        r=$(timed "${hf_route[@]}" "$n"); hf_s[$n]+=" ${r% *}" hf_k[$n]+=" ${r#* }"
    done
done
n1="" n2="" k1="" k2=""
for n in ${HF_LENGTHS:-2048 3072}; do
    # shellcheck disable=SC2086 # each list splits into its values
    awk -v n="$n" -v as="$(median ${aha_s[$n]})" -v ak="$(median ${aha_k[$n]})" \
        -v hs="$(median ${hf_s[$n]})" -v hk="$(median ${hf_k[$n]})" 'BEGIN {
        printf "hf route   N=%d: aha record %.1f s, %.0f MiB | HF route %.1f s, %.0f MiB -> %.1fx time, %.1fx memory\n",
            n, as, ak / 1024, hs, hk / 1024, hs / as, hk / ak }'
    # shellcheck disable=SC2086
    n1=$n2 k1=$k2 n2=$n k2=$(median ${hf_k[$n]})
done
avail=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
[ -n "$n1" ] && awk -v n1="$n1" -v k1="$k1" -v n2="$n2" -v k2="$k2" -v a="$avail" 'BEGIN {
    b = (k2 - k1) / (n2 * n2 - n1 * n1); c = k1 - b * n1 * n1
    printf "hf oom     predicted: the HF route passes MemAvailable (%.0f MiB) at about %.0f tokens (peak RSS %.0f + %.6f N^2 MiB through N=%d and %d)\n",
        a / 1024, sqrt((a - c) / b), c / 1024, b / 1024, n1, n2 }'
if [ "${HF_OOM:-0}" = 1 ]; then
    quiet "${hf_route[@]}" "$n2" --find-oom
    sed 's/^/hf /' "$B/out"
fi
echo "hf route   load $(cut -d' ' -f1-3 /proc/loadavg) after the runs"
rm -rf "$B"
