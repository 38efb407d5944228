#!/usr/bin/env bash
# The one prepared GPU check (issues 5, 15 and 29), for a session with a GPU
# machine. Here first, where the models and a package registry are:
#
#   scripts/gpu-check.sh --prepare
#
# writes .deps/shapes/ (the headers of models/'s SmolLM2-135M and Gemma-3
# 270M GGUFs: their metadata, tokenizer, tensor shapes and stored types, 8
# MiB; the models themselves are 350 MB and only 64 MiB travel) and, when
# missing, .deps/debs (scripts/fetch-debs.sh: HDF5 / OpenBLAS for the build).
# Then one call:
#
#   run(command="scripts/gpu-check.sh", carry=[".deps/debs", ".deps/shapes"], timeout_s=600)
#
# There it builds ./aha with CUDA and the CUDA tests, writes SmolLM2 and
# Gemma-3 270M checkpoints from the carried headers (the real architectures,
# tokenizers, stored types Q4_1 / Q8_0 and Q4_K / Q5_0 / Q6_K / Q8_0, and
# sizes, with random weights: tests/gpu/gguf_shape.py) and runs, most
# important first, each step with a timeout inside the whole budget:
#   1. correctness: issue 15's review checks; every kernel against its CPU
#      twin at every shape (gemma's scores, native windows, head_dim 256,
#      every stored type's decode and the stored-type products against
#      cuBLAS on the decoded matrix); the forward pass against the CPU on
#      random models of every architecture; ./aha --device cuda against
#      --device cpu end to end (tests/test_device.py: every architecture,
#      SmolLM2 and Gemma-3 270M, their device memory against the file size);
#   2. speed: dense attention TFLOP/s against PyTorch SDPA in the same run,
#      routed at 10% / 25% global against all-global at 4k / 16k / 32k, the
#      dependency pass against dense attention, the stored-type products
#      against cuBLAS on decoded weights, forward tokens/s, and `aha record
#      --device cuda` tokens/s on SmolLM2, Gemma-3 270M and the OLMo-2-1B
#      shape at context 4096;
#   3. compute-sanitizer memcheck, racecheck, synccheck, initcheck.
# At the end, the d_eps and decision noise counts of CPU vs CUDA the tests
# printed. The log is also written to $OUT/gpu-check.log (the device tool's
# folder) and the benchmark lines to $OUT/bench_attention.txt.
#
#   GPU_CHECK_ONLY=correctness|speed|sanitizers   one part (a second call
#                      on a warm machine reuses the build)
#   GPU_CHECK_QUICK=1  smaller benchmarks (T = 4k only)
#   GPU_CHECK_BUDGET   seconds for the whole run (540)
#   CUDA_ARCH=sm_90a   the target (default: Hopper's sm_90a)
cd "$(dirname "$0")/.." || exit 2
SHAPES=.deps/shapes
if [ "${1:-}" = --prepare ]; then
    mkdir -p "$SHAPES" || exit 1
    py=python3
    for m in SmolLM2-135M-Instruct.Q4_1 gemma-3-270m-q4_k_m; do
        $py tests/gpu/gguf_shape.py "models/$m.gguf" "$SHAPES/$m.header" --header || exit 1
    done
    [ -d .deps/debs ] || scripts/fetch-debs.sh || exit 1
    du -sh .deps/debs "$SHAPES"
    echo "carry: .deps/debs .deps/shapes (64 MiB in all with the working tree)"
    exit 0
fi
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
ONLY=${GPU_CHECK_ONLY:-all}
part() { [ "$ONLY" = all ] || [ "$ONLY" = "$1" ]; }
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
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
echo "compute-sanitizer: ${SAN:-not found}"
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1 | tail -1
nproc; gcc --version | head -1

# Libraries: the system's, or Debian's unpacked into .deps/root.
if ! { [ -f /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h ] && [ -f /usr/include/hdf5/serial/hdf5.h ]; }; then
    if [ -d .deps/debs ]; then
        # kernels/cuda/cuda.mk then builds against .deps/root (rpath'd).
        step "unpack Debian packages" 120 scripts/fetch-debs.sh --unpack
        export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu:$PWD/.deps/root/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    else
        echo "=== no system HDF5/OpenBLAS and no .deps/debs: carry .deps/debs (scripts/gpu-check.sh --prepare)"
    fi
fi

J=$(nproc)
ARCH=${CUDA_ARCH:-sm_90a}
step "build ./aha (CPU + --device cuda), CUDA tests and benchmarks" 300 make -j"$J" aha gpu CUDA_ARCH="$ARCH" || {
    echo "=== build failed: nothing else to run"; exit 1; }
QUICK=${GPU_CHECK_QUICK:+--quick}
# The real models' shapes with random weights, from the carried headers.
MODELS=${TMPDIR:-/tmp}/aha-shapes
mkdir -p "$MODELS"
for m in SmolLM2-135M-Instruct.Q4_1 gemma-3-270m-q4_k_m; do
    if [ -f "$SHAPES/$m.header" ]; then
        [ -f "$MODELS/$m.gguf" ] || python3 tests/gpu/gguf_shape.py "$SHAPES/$m.header" "$MODELS/$m.gguf"
    else
        echo "=== no $SHAPES/$m.header: $m not checked (scripts/gpu-check.sh --prepare, carry $SHAPES)"
    fi
done
SMOL=$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf GEMMA=$MODELS/gemma-3-270m-q4_k_m.gguf
[ -f "$SMOL" ] && export AHA_DEVICE_SMOL=$SMOL
[ -f "$GEMMA" ] && export AHA_DEVICE_GEMMA=$GEMMA

# 1. Correctness.
if part correctness; then
    step "issue 15: 70,000-token embed/RoPE, misaligned q/k/v/out (-1), f16 V 7e4 at a masked key (no NaN)" 60 \
        build/gpu/test_kernels_cuda --review
    step "kernel tests, every shape (T to 32k; gemma scores, windows, head_dim 256, stored types)" 200 \
        build/gpu/test_kernels_cuda
    step "forward pass: CUDA vs CPU on random models of every architecture (f32, bf16, f16; stored types; pipelined)" \
        120 build/gpu/test_forward_cuda
    if python3 -c 'import h5py, numpy' 2>/dev/null; then
        step "end to end: ./aha --device cuda traces vs --device cpu, SmolLM2 and Gemma-3 270M, device memory (tests/test_device.py)" \
            240 python3 tests/test_device.py
    else
        echo "=== end-to-end test NOT run: python3 lacks h5py or numpy on this machine"
        fails=$((fails + 1))
    fi
fi
# 2. Speed.
if part speed; then
    BENCH_OUT=${OUT:-/tmp}/bench_attention.txt
    step "benchmark: attention (v1 fp32, v2 TF32, v3 bf16), routed, dependency pass, GEMM, stored-type products" 200 \
        bash -c "set -o pipefail; build/gpu/bench_attention_cuda $QUICK | tee $BENCH_OUT"
    step "PyTorch SDPA on the same shapes, and each kernel's ratio to it" 120 \
        python3 tests/gpu/sdpa_bench.py $QUICK --aha "$BENCH_OUT"
    step "benchmark: forward tokens/s, OLMo-2-1B shape (bf16, Q4_K, f32 weights), context 4096" 120 \
        build/gpu/bench_forward_cuda $QUICK
    [ -f "$SMOL" ] && step "aha record --device cuda tokens/s: SmolLM2-135M (Q4_1), context 4096" 90 \
        tests/gpu/record_bench.sh "$SMOL" 8192 bf16
    [ -f "$GEMMA" ] && step "aha record --device cuda tokens/s: Gemma-3 270M (Q4_K_M), context 4096" 90 \
        tests/gpu/record_bench.sh "$GEMMA" 8192 bf16
    step "aha record --device cuda tokens/s: OLMo-2-1B shape (f16), context 4096" 150 \
        tests/gpu/record_bench.sh olmo2-1b 16384 f16
fi
# 3. The sanitizers (slowest per finding).
if part sanitizers; then
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
fi
# The noise the tests bounded (each test asserts its own bound): on hardware
# these counts should be small and non-zero (FMA contraction, reduction order).
echo "=== noise counts, CPU vs CUDA (d_eps at eps within float noise; decisions at a threshold)"
grep -aE "d_eps differing|decisions differing|differ within the eps noise band|MiB of weights on the device" "$LOG" |
    grep -v '^===' | sed 's/^ */  /'
echo "=== gpu-check: $fails step(s) failed, $(( $(date +%s) - START ))s in all; log in $LOG"
[ "$fails" -eq 0 ]
