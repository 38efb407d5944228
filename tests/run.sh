#!/usr/bin/env bash
# Run every test: C unit/integration tests (plain and under ASan+UBSan),
# shell tests of the CLI, Python cross-checks, and bounded fuzzing.
# SKIP lines (a check that cannot run here, with the reason) are counted and
# listed again at the end. Ends with one line "N passed, N failed, N skipped";
# exits non-zero on any failure.
cd "$(dirname "$0")/.." || exit 2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fuzz_seconds=${FUZZ_SECONDS:-20}
pass=0 fail=0 skip=0 skipped=""

# run NAME CMD...: the command prints PASS/FAIL lines; a non-zero exit with no
# FAIL line (a crash, a sanitizer report) counts as one failure. The summary
# line ends with its wall-clock seconds, so a log shows where the time goes.
# run NAME (no command): the test that `start NAME` began, waited for.
run() {
    local name=$1; shift
    local out rc np nf ns t0=$SECONDS
    if [ $# -eq 0 ]; then
        wait "${bg_pid[$name]}"
        out=$(<"$bg_dir/$name"); read -r rc t0 <"$bg_dir/$name.rc"; t0=$((SECONDS - t0))
    else
        out=$("$@" 2>&1); rc=$?
    fi
    np=$(grep -c '^PASS ' <<<"$out"); nf=$(grep -c '^FAIL ' <<<"$out"); ns=$(grep -c '^SKIP ' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
        nf=1; out+=$'\n'"FAIL $name (exit $rc)"
    fi
    if [ "$nf" -gt 0 ]; then echo "$out" | tail -n 60; else grep -E '^(PASS|SKIP) ' <<<"$out"; fi
    echo "-- $name: $np passed, $nf failed, $ns skipped in $((SECONDS - t0)) s"
    pass=$((pass + np)); fail=$((fail + nf)); skip=$((skip + ns))
    [ "$ns" -eq 0 ] || skipped+=$(grep '^SKIP ' <<<"$out")$'\n'
}

# start NAME CMD...: run a test in the background, its output kept for `run
# NAME`, which reports it. The CPU emulator's tests each keep one core busy
# for minutes (its threads are coroutines): they run beside the rest.
# Temporary files (every test's, and these) on a tmpfs where there is one,
# removed at the end: a trace fsyncs each document it makes durable, which on
# a disk is most of the trace tests' time and nothing a test can observe (a
# SIGKILL loses no written data either way).
if shm=$(mktemp -d /dev/shm/aha-tests.XXXXXX 2>/dev/null); then export TMPDIR=$shm; fi
bg_dir=$(mktemp -d) || exit 2
trap 'rm -rf "$bg_dir" ${shm:+"$shm"}' EXIT
declare -A bg_pid
start() {
    local name=$1; shift
    ( t0=$SECONDS; "$@" >"$bg_dir/$name" 2>&1; echo "$? $((SECONDS - t0))" >"$bg_dir/$name.rc" ) &
    bg_pid[$name]=$!
}

for t in build/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
# Only now: beside the C tests, whose OpenMP threads spin while they wait,
# they made test_smollm2 (now test_real_models) five times slower; ./aha waits passively.
[ -x build/gpu/emu/test_forward_emu ] && start test_forward_emu build/gpu/emu/test_forward_emu
[ -x build/gpu/emu/test_kernels_emu ] && start test_kernels_emu build/gpu/emu/test_kernels_emu --tiny
# The same kernel tests under the emulator's adversarial switches (cuda_emu.h):
# shared memory of NaN bytes, threads and blocks in random then reverse order,
# cp.async landing at issue; one after the other (~1 core-minute).
[ -x build/gpu/emu/test_kernels_emu ] && start test_kernels_emu_adversarial bash -c \
    'AHA_EMU_SMEM=nan AHA_EMU_ORDER=random AHA_EMU_CP_ASYNC=early build/gpu/emu/test_kernels_emu --tiny &&
     AHA_EMU_SMEM=nan AHA_EMU_ORDER=reverse build/gpu/emu/test_kernels_emu --tiny'
# CUDA: the kernels and forward pass on a device (SKIP lines, with the
# reason, where there is none) and under the CPU emulator (always; started
# above, reported after the Python tests).
for t in build/gpu/test_*_cuda; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] && run "$(basename "$t")" bash "$t"
done
for t in tests/test_*.py; do
    [ -f "$t" ] && run "$(basename "$t")" .venv/bin/python "$t"
done
[ -n "${bg_pid[test_kernels_emu]}" ] && run test_kernels_emu
[ -n "${bg_pid[test_kernels_emu_adversarial]}" ] && run test_kernels_emu_adversarial
[ -n "${bg_pid[test_forward_emu]}" ] && run test_forward_emu
# fuzz TARGET: run a libFuzzer binary for fuzz_seconds from its seed corpus.
fuzz() {
    local bin=$1 name; name=$(basename "$1")
    local corpus=build/fuzz-corpus/${name#fuzz_}
    mkdir -p "$corpus" && cp -n tests/fuzz/corpus_"${name#fuzz_}"/* "$corpus"/ 2>/dev/null
    if "$bin" -max_total_time="$fuzz_seconds" -print_final_stats=1 "$corpus" >"$corpus.log" 2>&1; then
        echo "PASS $name ($(grep -o 'number_of_executed_units: *[0-9]*' "$corpus.log" | grep -o '[0-9]*$') inputs in ${fuzz_seconds}s, no crash)"
    else
        tail -n 30 "$corpus.log"; echo "FAIL $name"
    fi
}
for b in build/fuzz/fuzz_*; do
    [ -x "$b" ] && run "$(basename "$b")" fuzz "$b"
done
[ "$skip" -eq 0 ] || printf '%s skipped:\n%s' "$skip" "$skipped"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
