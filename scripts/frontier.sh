#!/usr/bin/env bash
# make frontier: the paper's question on SmolLM2-135M, end to end
# (docs/sweeps.md, "The frontier on SmolLM2"), in stages; each writes its
# sweep grids, one report (OUT/report-STAGE/report.json) and the comparison
# scripts/frontier_compare.py prints from it (OUT/compare-STAGE.md):
#   base       at each of WINDOWS, a router fitted (aha fit) on the first half
#              of the prose corpus's documents, evaluated on the second half
#              and on code at ctx 1024 in one sweep grid per window and corpus:
#              the fitted router at the taus that give 10, 20, 30, 50, 60 and
#              80% global on the fitting data, random:P at 10-80%, static top-k
#              heads (20, 30, 50% of them, ranked on the fitting data), the
#              window-error oracle and all local
#   ablations  w=128, the same data: the base fit beside --layer-cuts,
#              --exposed 1 and the same books further in (fit-more.jsonl,
#              1.8x the tokens)
#   large      at each of LARGE_WINDOWS, a router fitted on LARGE_TOKENS tokens
#              of prose and code (fit-large.jsonl), on the same held-out data
#   long       the large routers and the oracle at ctx 4096 on whole held-out
#              documents (prose-long, code-long), per layer, and each grid's
#              time against a plain prefill (aha ppl) of the same tokens
# The taus of a fitted router are always chosen on its fitting data. All
# stages: ~4.5 hours on 2 cores. Environment: FRONTIER_OUT (frontier-out),
# FRONTIER_STAGES ("base ablations large long"), WINDOWS ("64 128 256"),
# LARGE_WINDOWS ("128 256"), LARGE_TOKENS (200000), FIT_ARGS (the fit's flags
# beyond window, sinks and ctx: --regress log-error), THREADS (0: all cores),
# QUICK_TOKENS (0; N: every fit, record and sweep reads at most N tokens, to
# try the pipeline in minutes: its numbers mean nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
OUT=${FRONTIER_OUT:-frontier-out}
STAGES=${FRONTIER_STAGES:-base ablations large long}
WINDOWS=${WINDOWS:-64 128 256}
LARGE_WINDOWS=${LARGE_WINDOWS:-128 256}
read -ra FIT <<<"${FIT_ARGS:---regress log-error}"
QUICK_TOKENS=${QUICK_TOKENS:-0}
LARGE_TOKENS=$( ((QUICK_TOKENS)) && echo "$QUICK_TOKENS" || echo "${LARGE_TOKENS:-200000}")
COMMON=(--sinks 4 --threads "${THREADS:-0}" --max-tokens "$QUICK_TOKENS")
C1K=(--ctx 1024 "${COMMON[@]}")
run() { echo; echo "\$ $*"; "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; } # seconds since now's $1
# taus FIT_OUTPUT FRACTIONS: the taus the fit printed for those fractions global on its fitting data
taus() {
    sed -n 's/^--tau for each fraction global on the fitting data (fraction:tau): //p' "$1" | tr ' ' '\n' |
        awk -F: -v want="$2" 'BEGIN { split(want, f, ",") } { for (i in f) if ($1 == f[i]) { printf "%s%s", s, $2; s = "," } }'
}
# fit NAME DATA WINDOW [FLAGS...]: OUT/router-NAME.safetensors, its output in OUT/fit-NAME.txt
fit() {
    local name=$1 data=$2 w=$3
    shift 3
    run ./aha fit "$M" "$data" -o "$OUT/router-$name.safetensors" --force --window "$w" --holdout 0 --quiet \
        "${C1K[@]}" "${FIT[@]}" "$@" | tee "$OUT/fit-$name.txt"
}
# report STAGE GRID... [-- COMPARE_FLAGS...]: one report of a stage's grids and its comparison
report() {
    local stage=$1 grids=() flags=()
    shift
    while (($#)) && [ "$1" != -- ]; do grids+=("$1") && shift; done
    (($#)) && shift && flags=("$@")
    run ./aha report "${grids[@]}" -o "$OUT/report-$stage" --force --out-format json --delta 0.01 --compare >/dev/null
    python3 scripts/frontier_compare.py "$OUT/report-$stage/report.json" "${flags[@]}" | tee "$OUT/compare-$stage.md"
}

base() {
    # static top-k heads are ranked by their oracle rate on data the fit reads too
    run ./aha record "$M" "$OUT/fit.jsonl" -o "$OUT/heads.h5" --force --quiet --max-docs 9 \
        --windows "${WINDOWS// /,}" "${C1K[@]}"
    local lh k grids=()
    lh=$(./aha info "$OUT/heads.h5" --json | python3 -c 'import json,sys; a=json.load(sys.stdin)["attributes"]; print(int(a["n_layers"]) * int(a["n_heads"]))')
    k=$(awk -v n="$lh" 'BEGIN { printf "%d,%d,%d", n * 0.2 + 0.5, n * 0.3 + 0.5, n * 0.5 + 0.5 }') # 20, 30, 50%
    for w in $WINDOWS; do
        fit "w$w" "$OUT/fit.jsonl" "$w"
        for corpus in prose code; do
            run ./aha sweep "$M" "$OUT/$corpus-eval.jsonl" -o "$OUT/grid-$corpus-w$w.h5" --force --quiet \
                --router "$OUT/router-w$w.safetensors" --heads-from "$OUT/heads.h5" --windows "$w" "${C1K[@]}" \
                --policies "learned:$(taus "$OUT/fit-w$w.txt" 0.1,0.2,0.3,0.5,0.6,0.8) random:0.1,0.2,0.3,0.5,0.8 topk:$k werr:0.1,0.3 local"
            run ./aha plot "$OUT/grid-$corpus-w$w.h5" -o "$OUT/figures-$corpus-w$w" --force >/dev/null
            grids+=("$OUT/grid-$corpus-w$w.h5")
        done
    done
    report base "${grids[@]}"
}

# One sweep per fit and corpus at w=128 (a report each, so the fits' lines stay apart).
ablations() {
    local name
    fit abl-base "$OUT/fit.jsonl" 128
    fit abl-layer-cuts "$OUT/fit.jsonl" 128 --layer-cuts --target-global 0.5
    fit abl-exposed "$OUT/fit.jsonl" 128 --exposed 1
    fit abl-more "$OUT/fit-more.jsonl" 128
    for name in base layer-cuts exposed more; do
        for corpus in prose code; do
            local oracle=""
            [ "$name" = base ] && oracle="werr:0.1,0.2,0.3"
            run ./aha sweep "$M" "$OUT/$corpus-eval.jsonl" -o "$OUT/abl-$name-$corpus.h5" --force --quiet \
                --router "$OUT/router-abl-$name.safetensors" --windows 128 "${C1K[@]}" \
                --policies "learned:$(taus "$OUT/fit-abl-$name.txt" 0.2,0.3,0.4,0.5,0.6),0.4 $oracle local"
        done
        report "abl-$name" "$OUT/abl-$name-prose.h5" "$OUT/abl-$name-code.h5"
    done
}

large() {
    local grids=()
    for w in $LARGE_WINDOWS; do
        fit "large-w$w" "$OUT/fit-large.jsonl" "$w" --max-tokens "$LARGE_TOKENS"
        for corpus in prose code; do
            run ./aha sweep "$M" "$OUT/$corpus-eval.jsonl" -o "$OUT/large-$corpus-w$w.h5" --force --quiet \
                --router "$OUT/router-large-w$w.safetensors" --windows "$w" "${C1K[@]}" \
                --policies "learned:$(taus "$OUT/fit-large-w$w.txt" 0.1,0.2,0.3,0.4,0.5,0.6) werr:0.05,0.1,0.2,0.3 local"
            grids+=("$OUT/large-$corpus-w$w.h5")
        done
    done
    report large "${grids[@]}"
}

long() {
    local grids=() t0 t_sweep t_ppl n runs
    for w in $LARGE_WINDOWS; do
        [ -f "$OUT/router-large-w$w.safetensors" ] || { echo "frontier: stage long needs stage large's router at w=$w" >&2; exit 1; }
        for corpus in prose code; do
            t0=$(now)
            run ./aha sweep "$M" "$OUT/$corpus-long.jsonl" -o "$OUT/long-$corpus-w$w.h5" --force --quiet \
                --router "$OUT/router-large-w$w.safetensors" --windows "$w" --ctx 4096 "${COMMON[@]}" \
                --policies "learned:$(taus "$OUT/fit-large-w$w.txt" 0.1,0.2,0.3,0.4,0.5,0.6) werr:0.05,0.1,0.2,0.3,0.5 local" |
                tee "$OUT/long-$corpus-w$w.txt"
            t_sweep=$(since "$t0")
            runs=$(grep -c '^routed ' "$OUT/long-$corpus-w$w.txt")
            # the same tokens, one plain prefill: each document as a text file, in the same 4096-token contexts
            n=$(python3 -c 'import json,sys; t=[json.loads(l)["text"] for l in open(sys.argv[1])]; [open(f"{sys.argv[2]}.{i}.txt", "w").write(x) for i, x in enumerate(t)]; print(len(t))' \
                "$OUT/$corpus-long.jsonl" "$OUT/$corpus-long")
            t0=$(now)
            for i in $(seq 0 $((n - 1))); do ./aha ppl "$M" "$OUT/$corpus-long.$i.txt" --ctx 4096 --threads "${THREADS:-0}" --max-tokens "$QUICK_TOKENS" >/dev/null; done
            t_ppl=$(since "$t0")
            awk -v c="$corpus" -v w="$w" -v r="$runs" -v g="$t_sweep" -v p="$t_ppl" 'BEGIN { printf "cost %s w=%d ctx 4096: sweep (full attention with the dependency pass and window errors + %d routed runs) %.1f s, aha ppl of the same tokens %.1f s: %.1fx one prefill\n", c, w, r, g, p, g / p }' |
                tee -a "$OUT/cost-long.txt"
            grids+=("$OUT/long-$corpus-w$w.h5")
        done
    done
    report long "${grids[@]}" -- --per-layer
}

for stage in $STAGES; do
    case $stage in
    base | ablations | large | long) ;;
    *) echo "frontier: unknown stage '$stage' in FRONTIER_STAGES (base ablations large long)" >&2 && exit 2 ;;
    esac
done
mkdir -p "$OUT"
rm -f "$OUT/cost-long.txt"
python3 scripts/frontier_data.py datasets/corpora "$OUT"
for stage in $STAGES; do "$stage"; done
echo
echo "comparisons: $OUT/compare-*.md; grids: $OUT/*.h5; routers: $OUT/router-*.safetensors; figures: $OUT/figures-*/frontier.png"
