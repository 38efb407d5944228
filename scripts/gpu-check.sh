#!/usr/bin/env bash
# The one prepared GPU check of issues 5 and 15, for a session with a GPU machine:
#
#   run(command="scripts/gpu-check.sh", carry=[".deps/debs", ".deps/wheels"], timeout_s=600)
#
# (.deps/debs, .deps/wheels: the Debian packages and h5py wheels that
# scripts/fetch-debs.sh and scripts/fetch-wheels.sh downloaded here; the GPU
# machine has no registry.) It builds ./aha with CUDA and the CUDA
# tests, runs the kernel tests (every shape), the forward-pass tests, ./aha
# --device cuda end to end against --device cpu (tests/test_device.py), the
# benchmarks (attention vs PyTorch's SDPA on the same shapes, the forward
# pass and aha record on an OLMo-2-1B shape), then compute-sanitizer
# (memcheck, racecheck, synccheck, initcheck), and prints every figure. Issue
# 15's checks come first: launches of 70,000 tokens, a misaligned-k call
# (expects -1), an f16 V of 7e4 at a masked key (expects no NaN)
# (test_kernels_cuda --review); at the end, the d_eps and decision noise
# counts of CPU vs CUDA that the tests printed. Each step has a timeout; the
# whole run is sized to finish in about 7 minutes on an H200. The log is also
# written to $OUT/gpu-check.log when $OUT is set (the device tool's folder).
#
#   GPU_CHECK_QUICK=1   smaller benchmark (T = 4k only)
#   CUDA_ARCH=sm_90a    the target (default: Hopper's sm_90a)
cd "$(dirname "$0")/.." || exit 2
LOG=${OUT:-/tmp}/gpu-check.log
exec > >(tee "$LOG") 2>&1
set -u
START=$(date +%s)
fails=0
# The whole run stays inside GPU_CHECK_BUDGET seconds (the device tool
# allows 600 per command): each step's limit is cut to what is left, and a
# step with under 15 s left is skipped and says so. Most important first.
BUDGET=${GPU_CHECK_BUDGET:-540}
DEADLINE=$((START + BUDGET))
step() { # step NAME SECONDS CMD...: run with a timeout, report status and time
    local name=$1 secs=$2; shift 2
    local t0 rc left
    t0=$(date +%s)
    left=$((DEADLINE - t0))
    if [ "$left" -lt 15 ]; then
        echo "=== $name: NOT RUN (time budget of ${BUDGET}s spent)"
        fails=$((fails + 1))
        return 1
    fi
    [ "$secs" -gt "$left" ] && secs=$left
    echo "=== $name (limit ${secs}s): $*"
    timeout --signal=TERM --kill-after=10 "$secs" "$@"
    rc=$?
    echo "=== $name: exit $rc after $(( $(date +%s) - t0 ))s$([ $rc -eq 124 ] && echo ' (TIMED OUT)')"
    [ $rc -ne 0 ] && fails=$((fails + 1))
    return $rc
}

echo "=== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | head -3
nvcc --version 2>&1 | tail -2
command -v compute-sanitizer || echo "compute-sanitizer: not on PATH"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1 | tail -1
nproc; gcc --version | head -1

# Libraries: the system's, or Debian's unpacked into .deps/root.
if ! { [ -f /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h ] && [ -f /usr/include/hdf5/serial/hdf5.h ]; }; then
    if [ -d .deps/debs ]; then
        # kernels/cuda/cuda.mk then builds against .deps/root (rpath'd).
        step "unpack Debian packages" 120 scripts/fetch-debs.sh --unpack
        export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$PWD/.deps/root/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    else
        echo "=== no system HDF5/OpenBLAS and no .deps/debs: carry .deps/debs (scripts/fetch-debs.sh)"
    fi
fi

J=$(nproc)
ARCH=${CUDA_ARCH:-sm_90a}
step "build ./aha (CPU + --device cuda), CUDA tests and benchmarks" 300 make -j"$J" aha gpu CUDA_ARCH="$ARCH" || {
    echo "=== build failed: nothing else to run"; exit 1; }
QUICK=${GPU_CHECK_QUICK:+--quick}
# Correctness first, then speed, then the sanitizers (slowest per finding).
step "issue 15: 70,000-token embed/RoPE, misaligned q/k/v/out (-1), f16 V 7e4 at a masked key (no NaN)" 60 \
    build/gpu/test_kernels_cuda --review
step "kernel tests, every shape (T to 32k)" 240 build/gpu/test_kernels_cuda
step "forward pass: CUDA vs CPU on random models (f32, bf16, f16; pipelined)" 120 build/gpu/test_forward_cuda
# h5py for tests/test_device.py: the carried wheel of this python3, unzipped.
if ! python3 -c 'import h5py' 2>/dev/null && [ -d .deps/wheels ]; then
    tag=$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
    whl=$(ls .deps/wheels/h5py-*-"$tag"-*.whl 2>/dev/null | head -1)
    if [ -n "$whl" ]; then
        python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(".deps/py")' "$whl" &&
            export PYTHONPATH=$PWD/.deps/py${PYTHONPATH:+:$PYTHONPATH} && echo "=== h5py from $whl"
    else
        echo "=== no h5py wheel for $tag in .deps/wheels"
    fi
fi
if python3 -c 'import h5py, numpy' 2>/dev/null; then
    step "end to end: ./aha --device cuda traces vs --device cpu (tests/test_device.py)" 180 \
        python3 tests/test_device.py
else
    echo "=== end-to-end test NOT run: python3 lacks h5py or numpy on this machine"
    fails=$((fails + 1))
fi
BENCH_OUT=${OUT:-/tmp}/bench_attention.txt
step "benchmark: attention (v1 fp32, v2 TF32, v3 bf16), routed, dependency pass, GEMM" 200 \
    bash -c "set -o pipefail; build/gpu/bench_attention_cuda $QUICK | tee $BENCH_OUT"
step "PyTorch SDPA on the same shapes, and each kernel's ratio to it" 120 \
    python3 tests/gpu/sdpa_bench.py $QUICK --aha "$BENCH_OUT"
step "benchmark: forward tokens/s, OLMo-2-1B shape, context 4096" 120 build/gpu/bench_forward_cuda $QUICK
step "end to end: aha record --device cuda tokens/s, OLMo-2-1B shape, context 4096" 180 \
    tests/gpu/record_bench.sh 16384 bf16
if [ -n "$SAN" ]; then
    step "kernel tests under compute-sanitizer memcheck (quick set)" 200 \
        "$SAN" --tool memcheck --leak-check full --error-exitcode 99 build/gpu/test_kernels_cuda --quick
    step "forward test under compute-sanitizer memcheck" 120 \
        "$SAN" --tool memcheck --error-exitcode 99 build/gpu/test_forward_cuda
    step "kernel tests under compute-sanitizer racecheck (tiny set)" 150 \
        "$SAN" --tool racecheck --error-exitcode 99 build/gpu/test_kernels_cuda --tiny
    step "kernel tests under compute-sanitizer synccheck (tiny set)" 90 \
        "$SAN" --tool synccheck --error-exitcode 99 build/gpu/test_kernels_cuda --tiny
    step "kernel tests under compute-sanitizer initcheck (tiny set)" 90 \
        "$SAN" --tool initcheck --error-exitcode 99 build/gpu/test_kernels_cuda --tiny
    step "issue 15 checks under compute-sanitizer memcheck (70,000 tokens, guards)" 60 \
        "$SAN" --tool memcheck --error-exitcode 99 build/gpu/test_kernels_cuda --review
    step "forward test under compute-sanitizer initcheck" 90 \
        "$SAN" --tool initcheck --error-exitcode 99 build/gpu/test_forward_cuda
else
    echo "=== compute-sanitizer not found: memcheck/racecheck/synccheck/initcheck NOT run"
fi
# The noise the tests bounded (each test asserts its own bound): on hardware
# these counts should be small and non-zero (FMA contraction, reduction order).
echo "=== noise counts, CPU vs CUDA (d_eps at eps within float noise; decisions at a threshold)"
grep -aE "d_eps differing|decisions differing|differ within the eps noise band" "$LOG" | grep -v '^===' | sed 's/^ */  /'
echo "=== gpu-check: $fails step(s) failed, $(( $(date +%s) - START ))s in all; log in $LOG"
[ "$fails" -eq 0 ]
