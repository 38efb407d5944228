#!/usr/bin/env bash
# The CUDA library's build as `make demo` and ./aha meet it (issue 15, item 7):
# DEMO_DEVICE=cuda make demo builds build/gpu/libaha_cuda.so (make cuda-lib)
# where nvcc works, and says why not where it does not; the demo script and
# ./aha without the library say what to run, not "no nvcc" with nvcc on PATH.
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; shift; printf '  %s\n' "$@"; }

# make -n runs the recursive $(MAKE) line, itself dry: its plan names cuda-lib.
out=$(make -n demo DEMO_DEVICE=cuda 2>&1)
if grep -qE 'make.* aha( mpi)? cuda-lib' <<<"$out"; then pass "DEMO_DEVICE=cuda make demo builds the CUDA library (cuda-lib)"
else fail "DEMO_DEVICE=cuda make demo builds the CUDA library (cuda-lib)" "$(grep -m3 -E 'make|aha' <<<"$out")"; fi
out=$(make -n demo 2>&1)
if grep -qE 'make.* aha( mpi)? *$' <<<"$out" && ! grep -q 'cuda-lib' <<<"$out"; then pass "make demo (cpu) does not ask for the CUDA library"
else fail "make demo (cpu) does not ask for the CUDA library" "$(grep -m3 -E 'make' <<<"$out")"; fi

if command -v nvcc >/dev/null 2>&1 && nvcc --version >/dev/null 2>&1; then
    out=$(make -n -W kernels/cuda/ops.cu cuda-lib 2>&1)
    if grep -q -- '-shared -o build/gpu/libaha_cuda.so' <<<"$out"; then pass "make cuda-lib links build/gpu/libaha_cuda.so (nvcc found)"
    else fail "make cuda-lib links build/gpu/libaha_cuda.so (nvcc found)" "$(tail -n 3 <<<"$out")"; fi
else
    echo "SKIP make cuda-lib with nvcc: no working nvcc on PATH"
fi

# The development-only CUDA code -- attention_tc (the tensor-core variant 2,
# benchmarked, not run) and route_host (the host twins the kernel tests
# compare with) -- lives in kernels/cuda/dev/ and is linked into the kernel
# tests and benchmarks only, never into what ./aha runs: the library, and
# the emulated CLI. A full rebuild's plan (-n -B) says what each links.
dev_objs='/(attention_tc|route_host)\.o$'
# linked TARGET: the objects on the line that links TARGET in a full rebuild's plan.
linked() { make -n -B "$1" 2>&1 | grep -E -- "-o $1( |$)" | tr ' ' '\n' | grep '\.o$'; }
check_dev() { # NAME TARGET WANT: 1 = links both from kernels/cuda/dev/, 0 = links neither
    local objs in_dev any; objs=$(linked "$2")
    in_dev=$(grep -cE "/kernels/cuda/dev$dev_objs" <<<"$objs"); any=$(grep -cE "$dev_objs" <<<"$objs")
    if [ -n "$objs" ] && [ "$in_dev" -eq $((2 * $3)) ] && [ "$any" -eq "$in_dev" ]; then pass "$1"
    else fail "$1" "$2 links: $(tr '\n' ' ' <<<"$objs" | head -c 600)"; fi
}
check_dev "the emulated CLI (build/gpu/emu/aha) links nothing of kernels/cuda/dev" build/gpu/emu/aha 0
check_dev "the emulated kernel tests link kernels/cuda/dev (attention_tc, route_host)" build/gpu/emu/test_kernels_emu 1
if command -v nvcc >/dev/null 2>&1 && nvcc --version >/dev/null 2>&1; then
    check_dev "build/gpu/libaha_cuda.so links nothing of kernels/cuda/dev" build/gpu/libaha_cuda.so 0
    check_dev "build/gpu/test_kernels_cuda links kernels/cuda/dev" build/gpu/test_kernels_cuda 1
    check_dev "build/gpu/bench_attention_cuda links kernels/cuda/dev" build/gpu/bench_attention_cuda 1
else
    echo "SKIP the CUDA library without kernels/cuda/dev: no working nvcc on PATH"
fi

make cuda-lib NVCC=/nonexistent/nvcc >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ] && grep -q 'make cuda-lib: cannot build build/gpu/libaha_cuda.so: nvcc not found' "$tmp/err"; then
    pass "make cuda-lib without nvcc: an error naming why"
else fail "make cuda-lib without nvcc: an error naming why" "exit $rc" "$(head -c 400 "$tmp/err")"; fi

# The demo script and ./aha in a tree without the library.
mkdir -p "$tmp/tree/scripts" && cp scripts/demo.sh "$tmp/tree/scripts/" && cp aha "$tmp/tree/aha"
DEMO_DEVICE=cuda bash "$tmp/tree/scripts/demo.sh" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q 'make cuda-lib' "$tmp/err" && [ ! -s "$tmp/out" ]; then
    pass "DEMO_DEVICE=cuda scripts/demo.sh without the library: one line, before any step"
else fail "DEMO_DEVICE=cuda scripts/demo.sh without the library: one line, before any step" "exit $rc" "$(head -c 400 "$tmp/err")"; fi
printf 'The quick brown fox jumps over the lazy dog.\n' >"$tmp/t.txt"
SMOL=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$SMOL" ]; then
    echo "SKIP ./aha --device cuda without the library: $SMOL is not here (make test fetches it)"
    exit 0
fi
"$tmp/tree/aha" record "$SMOL" "$tmp/t.txt" -o "$tmp/x.h5" --device cuda >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && [ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q 'has no CUDA backend' "$tmp/err" &&
    grep -q 'make cuda-lib' "$tmp/err" && ! grep -q 'no nvcc' "$tmp/err"; then
    pass "./aha --device cuda without the library: one line saying what to build"
else fail "./aha --device cuda without the library: one line saying what to build" "exit $rc" "$(head -c 400 "$tmp/err")"; fi
