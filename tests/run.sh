#!/usr/bin/env bash
# Run every test: C unit/integration tests (plain and under ASan+UBSan),
# shell tests of the CLI, Python cross-checks, and bounded fuzzing.
# Ends with one line "N passed, N failed"; exits non-zero on any failure.
cd "$(dirname "$0")/.." || exit 2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fuzz_seconds=${FUZZ_SECONDS:-20}
pass=0 fail=0

# run NAME CMD...: the command prints PASS/FAIL lines; a non-zero exit with no
# FAIL line (a crash, a sanitizer report) counts as one failure.
run() {
    local name=$1; shift
    local out rc p f
    out=$("$@" 2>&1); rc=$?
    p=$(grep -c '^PASS ' <<<"$out"); f=$(grep -c '^FAIL ' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1; out+=$'\n'"FAIL $name (exit $rc)"
    fi
    if [ "$f" -gt 0 ]; then echo "$out" | tail -n 60; else grep '^PASS ' <<<"$out"; fi
    echo "-- $name: $p passed, $f failed"
    pass=$((pass + p)); fail=$((fail + f))
}

for t in build/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] && run "$(basename "$t")" bash "$t"
done
for t in tests/test_*.py; do
    [ -f "$t" ] && run "$(basename "$t")" .venv/bin/python "$t"
done
for f in build/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f"); corpus=build/fuzz-corpus/${name#fuzz_}
    mkdir -p "$corpus" && cp -n tests/fuzz/corpus_"${name#fuzz_}"/* "$corpus"/ 2>/dev/null
    fuzz() { "$f" -max_total_time="$fuzz_seconds" -print_final_stats=1 "$corpus" >"$corpus.log" 2>&1 \
             && echo "PASS $name ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$corpus.log" | grep -o '[0-9]*$') inputs in ${fuzz_seconds}s)" \
             || { tail -n 30 "$corpus.log"; echo "FAIL $name"; }; }
    run "$name" fuzz
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
