# Long-context prefill, aha beside llama.cpp: sourced by scripts/bench-peers.sh
# --long (make bench-peers LONG=1) once llama-bench is built, with its LB, reps,
# threads, out, lengths, B and maxrss: 8192, 16384 and 32768 tokens, as far as
# each model's context allows, on SmolLM2 and Gemma-3 270M. Rows, interleaved
# per length and repetition:
#   aha last     bench_forward 'last', synthetic ids: the lm_head for the last
#                token of each 256-token batch only (llama-bench: of each
#                2048-token batch), the work llama-bench's pp test does
#   aha record   ./aha record on real text (the prose corpus end to end, one
#                context of N tokens): dependency pass (3 eps), every token's
#                logits and NLL, trace writes (window errors, --werr, are off
#                as by default)
#   llama fa1/0  llama-bench -p N -n 0 with flash attention on and off
# No warmup on either side (llama-bench's warmup is a whole second prefill);
# peak RSS beside each time; medians; the attention share of the FLOPs from
# the model's shape (bench_forward). Not part of make test.
models=(models/SmolLM2-135M-Instruct.Q4_1.gguf models/gemma-3-270m-q4_k_m.gguf)
for f in "${models[@]}"; do
    [ -f "$f" ] || { echo "bench-peers: $f: no such model (scripts/setup.sh demo fetches it)" >&2; exit 1; }
done
[ -d datasets/corpora/prose ] ||
    { echo "bench-peers: datasets/corpora/prose: not built (datasets/build_corpora.sh)" >&2; exit 1; }
[ -x ./aha ] || { echo "bench-peers: ./aha: not built (make bench-peers builds it)" >&2; exit 1; }
out=$out/long
mkdir -p "$out"
text=$out/prose.txt # one document of real text, longer than 32768 tokens on both tokenizers
cat datasets/corpora/prose/*.txt >"$text"

echo "long       prefill at $lengths tokens up to each model's context; no warmup on either side"
echo "work       aha last: bench_forward 'last' (synthetic ids, 256-token batches, lm_head for each batch's last"
echo "           token); llama-bench -p N -n 0 (random ids, ubatch 512, lm_head for each 2048-token batch's last"
echo "           token), -fa 1 and -fa 0; aha record: ./aha record on $text (the prose corpus end to end), --ctx N"
echo "           --max-tokens N (one context), --sinks 4 --windows 16..1024 (7) --eps 0.01,0.05,0.1: dependency pass,"
echo "           every token's logits and NLL, trace writes (no --werr); its own time (model load not included)"
echo "threads    OMP_WAIT_POLICY=passive for bench_forward, as ./aha sets for itself; llama-bench's own default"
echo "rss        peak resident set: bench_forward's VmHWM before its probes; /usr/bin/time's max RSS for the others"
echo "reps       $reps, interleaved (aha last, llama fa1, aha record, llama fa0 per length)"
echo "load       $(cut -d' ' -f1-3 /proc/loadavg) before the runs (1/5/15-min averages)"
raw=$out/raw.tsv; : >"$raw"
put() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$raw"; }
for r in $(seq "$reps"); do
    for f in "${models[@]}"; do
        max=$(./aha info "$f" | sed -nE 's/^context +([0-9]+).*/\1/p')
        for n in $lengths; do
            [ "$n" -le "$max" ] || continue
            o=$out/last.txt
            maxrss "$o" "${B[@]}" OMP_WAIT_POLICY=passive build/bench/bench_forward "$f" 1 last 0 stored f32 "$n" \
                >/dev/null
            put "$f" "$n" "aha last" tps "$(sed -nE 's/^ctx [0-9]+ +prefill +([0-9.]+) tok\/s.*/\1/p' "$o")"
            put "$f" "$n" "aha last" rss "$(sed -nE 's/^peak RSS +([0-9]+) MiB.*/\1/p' "$o")"
            put "$f" "$n" "aha last" attn "$(sed -nE 's/^ctx [0-9]+ +FLOPs .* = ([0-9.]+)%$/\1/p' "$o")"
            for fa in 1 0; do
                o=$out/llama.jsonl
                k=$(maxrss "$o" "${B[@]}" "$LB" -m "$f" -t "$threads" -r 1 -p "$n" -n 0 -fa "$fa" --no-warmup -o jsonl)
                put "$f" "$n" "llama fa$fa" tps "$(sed -nE 's/.*"avg_ts": *([0-9.e+]+).*/\1/p' "$o")"
                put "$f" "$n" "llama fa$fa" rss $((k / 1024))
                [ "$fa" = 0 ] && continue
                o=$out/record.txt
                k=$(maxrss "$o" "${B[@]}" ./aha record "$f" "$text" -o "$out/trace.h5" --force --quiet --ctx "$n" \
                    --max-tokens "$n" --sinks 4 --windows 16,32,64,128,256,512,1024 --eps 0.01,0.05,0.1)
                line=$(grep -m1 '^recorded' "$o")
                [[ $line == "recorded $n tokens in 1 contexts "* ]] ||
                    { echo "bench-peers: aha record did not record one context of $n tokens: $line" >&2; exit 1; }
                s=$(sed -E 's/.*\(([0-9.]+) s, .*/\1/' <<<"$line")
                put "$f" "$n" "aha record" tps "$(awk -v n="$n" -v s="$s" 'BEGIN { print n / s }')"
                put "$f" "$n" "aha record" rss $((k / 1024))
            done
        done
    done
    echo "rep $r/$reps done" >&2
done
rm -f "$out/trace.h5"
echo "load       $(cut -d' ' -f1-3 /proc/loadavg) after the runs"

python3 - "$raw" <<'EOF'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    f, n, tool, what, v = l.rstrip("\n").split("\t")
    rows.setdefault((f.rsplit("/", 1)[-1], int(n)), {}).setdefault((tool, what), []).append(float(v))
med = lambda d, k: statistics.median(d[k])
print("\nmedians; tok/s (peak RSS MiB); best = llama.cpp's faster setting; attention = QK^T and PV share of the")
print("aha last run's FLOPs (model shape)")
print("| model | tokens | aha last | aha record | llama.cpp fa on | llama.cpp fa off | last/best | record/best |"
      " record/last time | attention FLOPs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (f, n), d in rows.items():
    cell = lambda t: "%.1f (%.0f)" % (med(d, (t, "tps")), med(d, (t, "rss")))
    best = max(med(d, ("llama fa1", "tps")), med(d, ("llama fa0", "tps")))
    last, rec = med(d, ("aha last", "tps")), med(d, ("aha record", "tps"))
    print("| %s | %d | %s | %s | %s | %s | %.2fx | %.2fx | %.2fx | %.1f%% |" % (
        f, n, cell("aha last"), cell("aha record"), cell("llama fa1"), cell("llama fa0"), last / best, rec / best,
        last / rec, med(d, ("aha last", "attn"))))
EOF
