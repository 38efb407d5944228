#!/usr/bin/env bash
# The 7B-class line of make bench: aha record of 2048 tokens (one context of
# 2048, 3 eps, 4 sinks) on a GGUF with Llama-2-7B's dimensions and random Q4_0
# weights (scripts/make_7b_gguf.py writes it once into the git-ignored
# bench-out/7b/, 3.6 GiB), tokens/s and peak RSS against the 8 GiB target.
#
# The machine is shared, so nothing here may exhaust its memory:
#  - a probe (the same script at dim 256, 2 layers, in bench-out/7b/) asks aha
#    info how much it converts to f32 at load; an aha that converts every
#    weight (25.6 GiB for this shape) stops here with one line saying so;
#  - it runs only when MemAvailable exceeds the cap, and under
#    ulimit -v of the cap (LIMIT_GIB + 2 GiB of address space: the mapped file
#    counts), so an allocation past it fails with aha's own one-line error.
# Exit 0 with the line printed; 1 with one line saying why it did not run.
# Environment: LIMIT_GIB (8), OUT_7B (bench-out/7b/llama2-7b-shape.Q4_0.gguf),
# TEXT_7B (datasets/corpora/prose/kjv-mark.txt), DRY_RUN (unset; 1: stop after
# the probe, saying whether it would run: tests/test_make_gguf.py).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${LIMIT_GIB:-8} cap=$(( ${LIMIT_GIB:-8} + 2 ))
out=${OUT_7B:-bench-out/7b/llama2-7b-shape.Q4_0.gguf} text=${TEXT_7B:-datasets/corpora/prose/kjv-mark.txt}
py=.venv/bin/python tok=models/SmolLM2-135M-Instruct.Q4_1.gguf
say() { echo "7b         $*"; }
for f in "$py" "$tok" "$text" ./aha; do
    [ -e "$f" ] || { say "not run: $f is missing (.venv: scripts/setup.sh test; the model: scripts/setup.sh; make aha)"; exit 1; }
done
mkdir -p "$(dirname "$out")"
# 1. Does this aha keep the weights in their stored type? Ask it about a small file of the same kind.
probe=$(dirname "$out")/probe.Q4_0.gguf
"$py" scripts/make_7b_gguf.py --out "$probe" --layers 2 --dim 256 --heads 4 --kv-heads 4 --ffn 512 \
    --tokenizer tests/fixtures/tiny/llama_gguf/model.gguf >/dev/null
info=$(./aha info "$probe")
params=$(sed -nE 's/^parameters +([0-9.]+)M.*/\1/p' <<<"$info")
# "(X MiB converted to f32 at load)" on the parameters line, or a "resident" line's "X MiB converted to f32"
conv=$(sed -nE 's/.*[ (]([0-9.]+) MiB converted to f32.*/\1/p' <<<"$info" | head -n1)
if [ -z "$params" ] || [ -z "$conv" ]; then
    say "not run: aha info on $probe says no parameter count or converted bytes, so whether it converts to f32 is unknown"
    exit 1
fi
if awk -v c="$conv" -v p="$params" 'BEGIN { exit !(c * 1048576 > 0.5 * p * 4e6) }'; then
    say "not run: this aha converts every weight to f32 at load (Llama-2-7B shape: 6.9B parameters, 25.6 GiB as f32," \
        "over the ${limit} GiB target and this machine's memory); it needs weights kept in their stored type (issue 13, branch stored)"
    exit 1
fi
[ -z "${DRY_RUN:-}" ] || { say "would run: aha info converts ${conv} MiB of the probe's ${params}M parameters"; exit 0; }
# 2. Room for it: memory for the cap, disk for the file.
avail=$(awk '/^MemAvailable:/ { printf "%d", $2 / 1048576 }' /proc/meminfo)
if [ "$avail" -le "$cap" ]; then
    say "not run: MemAvailable ${avail} GiB, it may take up to ${cap} GiB (ulimit -v) on a shared machine"
    exit 1
fi
if [ ! -e "$out" ]; then
    free_disk=$(df -P -k "$(dirname "$out")" | awk 'NR == 2 { printf "%d", $4 / 1048576 }')
    [ "$free_disk" -gt 6 ] || { say "not run: ${free_disk} GiB free on $(dirname "$out"), the file is 3.6 GiB"; exit 1; }
    "$py" scripts/make_7b_gguf.py --out "$out" >&2
fi
# 3. The record, under the cap; peak RSS from GNU time (KiB).
d=$(mktemp -d "${TMPDIR:-/tmp}/aha_bench_7b_XXXXXX")
trap 'rm -rf "$d"' EXIT
la0=$(cut -d' ' -f1 /proc/loadavg)
if ! (ulimit -v $(( cap * 1048576 )); exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/time -f "%M %e" -o "$d/rss" \
        ./aha record "$out" "$text" -o "$d/t.h5" --ctx 2048 --max-tokens 2048 --sinks 4 --quiet) >"$d/log" 2>&1; then
    say "failed under ulimit -v ${cap} GiB: $(grep -m1 '^aha' "$d/log" || tail -n1 "$d/log")"
    exit 1
fi
line=$(grep -m1 '^recorded' "$d/log")
secs=$(sed -nE 's/.*\(([0-9.]+) s, .*/\1/p' <<<"$line")
ntok=$(sed -nE 's/^recorded ([0-9]+) tokens.*/\1/p' <<<"$line")
tps=$(awk -v n="$ntok" -v s="$secs" 'BEGIN { printf "%.2f", n / s }') # aha rounds its own to whole tokens/s
rss=$(awk '{ printf "%.2f", $1 / 1048576 }' "$d/rss") wall=$(awk '{ print $2 }' "$d/rss")
gib=$(awk -v b="$(stat -c %s "$out")" 'BEGIN { printf "%.2f", b / 2^30 }')
verdict=$(awk -v r="$rss" -v l="$limit" 'BEGIN { print (r <= l ? "within" : "OVER") }')
say "$out (Llama-2-7B dims: 32 layers, dim 4096, 32 heads of 128, ffn 11008; vocab 49152, SmolLM2's tokenizer;" \
    "random Q4_0, ${gib} GiB): aha record ${ntok} tokens of $text at ctx 2048 (3 eps, 4 sinks), $(nproc) threads:" \
    "${tps} tok/s (${secs} s as aha record counts, model load not; ${wall} s wall), peak RSS ${rss} GiB, ${verdict} the ${limit} GiB target" \
    "(load average ${la0}-$(cut -d' ' -f1 /proc/loadavg))"
