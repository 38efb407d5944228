#!/usr/bin/env bash
# aha beside llama.cpp's llama-bench, in the same run (issue 13): llama.cpp is
# built from the source tree that PyPI's llama-cpp-python sdist vendors
# (pinned, downloaded here at bench time into a git-ignored folder, never
# committed; built once, CPU only, and cached). Runs are interleaved (aha,
# llama.cpp, aha, llama.cpp, ...) so a slow spell of the machine hits both;
# medians and the ratio aha/llama.cpp per row. Not part of make test.
# --moe: the same on a mixture of experts, an OLMoE-1B-7B-shaped Q4_0 GGUF
# with random weights (scripts/make_7b_gguf.py --arch olmoe writes it once,
# 3.6 GiB, into the git-ignored out folder), llama.cpp also with --repack 0.
#
# llama.cpp is built for this CPU's x86 extensions named one by one from
# /proc/cpuinfo (GGML_NATIVE=OFF), never its AMX paths: built with
# GGML_NATIVE=ON on a CPU with AMX (Xeon Sapphire Rapids class) llama-bench
# segfaults in them. --print-build says which paths a build here takes.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/bench-peers.sh [flags]   (make bench-peers)
  --reps N        interleaved repetitions of each tool per file (default: \$REPS, else 3)
  --threads N     threads for both tools (default: 2)
  --model PATH    the GGUF both tools run, converted to F32 and BF16 too
                  (default: models/SmolLM2-135M-Instruct.Q4_1.gguf)
  --ctx N[,N...]  contexts: prefill of N tokens (ppN) and decode at depth N (default: 512,2048; --moe 512;
                  multiples of 256, at most 8)
  --moe           the model: bench-out/moe/olmoe-1b-7b-shape.Q4_0.gguf (made if missing), as stored only
                  (no F32/BF16 conversions); llama.cpp also with --repack 0 (its weights as the file has them)
  --version V     llama-cpp-python sdist to build llama.cpp from (default: 0.3.36)
  --out DIR       download, build and conversion cache (default: bench-out/peers)
  --long          prefill at 8192-32768 tokens on SmolLM2 and Gemma-3 instead, with aha record's
                  full work as a row of its own (scripts/bench-peers-long.sh; --model is not used;
                  \$LENGTHS: other lengths, multiples of 256, default "8192 16384 32768")
  --print-build   print the llama.cpp CPU paths and cmake options a build here takes, and exit
                  (\$CPUINFO: the cpuinfo file read, default /proc/cpuinfo)
  --help          this text
EOF
}

reps=${REPS:-3} threads=2 model="" ver=0.3.36 out=bench-out/peers print=0 ctx="" moe=0 long=0
cpuinfo=${CPUINFO:-/proc/cpuinfo}
while [ $# -gt 0 ]; do
    case $1 in
        --help|-h) usage; exit 0 ;;
        --print-build) print=1; shift; continue ;;
        --moe) moe=1; shift; continue ;;
        --long) long=1; shift; continue ;;
        --reps|--threads|--model|--version|--out|--ctx)
            [ $# -ge 2 ] || { echo "bench-peers: $1 needs a value" >&2; exit 2; }
            case $1 in
                --reps) reps=$2 ;; --threads) threads=$2 ;; --model) model=$2 ;;
                --version) ver=$2 ;; --out) out=$2 ;; --ctx) ctx=$2 ;;
            esac
            shift 2 ;;
        *) echo "bench-peers: unknown flag '$1' (see --help)" >&2; exit 2 ;;
    esac
done
# ---- which x86 paths llama.cpp is built with ------------------------------------
# ggml's option for each extension this CPU has (its first cpuinfo flags line;
# GGML_AVX512 needs all five of the subsets ggml compiles it with), off for
# the others; the AMX options always off (their paths fault in llama-bench).
cpu_flags=" $(grep -m1 '^flags' "$cpuinfo" | cut -d: -f2) "
has() { [[ $cpu_flags == *" $1 "* ]]; }
ggml_opts=(-DGGML_NATIVE=OFF) built=()
for pair in SSE42:sse4_2 AVX:avx AVX_VNNI:avx_vnni AVX2:avx2 BMI2:bmi2 FMA:fma F16C:f16c \
            AVX512:"avx512f avx512cd avx512vl avx512dq avx512bw" AVX512_VBMI:avx512vbmi \
            AVX512_VNNI:avx512_vnni AVX512_BF16:avx512_bf16; do
    opt=${pair%%:*} on=ON
    for f in ${pair#*:}; do has "$f" || on=OFF; done
    ggml_opts+=("-DGGML_$opt=$on")
    [ "$on" = ON ] && built+=("$opt")
done
ggml_opts+=(-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
amx=no; has amx_tile && amx=yes
paths="${built[*]:-none}; AMX off (this CPU has AMX: $amx)"
if [ "$print" = 1 ]; then
    echo "llama.cpp CPU paths: $paths"
    echo "cmake options: ${ggml_opts[*]}"
    exit 0
fi

for v in "$reps" "$threads"; do
    [[ $v =~ ^[1-9][0-9]?$ ]] || { echo "bench-peers: '$v' is not a count in 1..99" >&2; exit 2; }
done
moe_model=bench-out/moe/olmoe-1b-7b-shape.Q4_0.gguf
if [ "$moe" = 1 ]; then : "${model:=$moe_model}" "${ctx:=512}"; fi
: "${model:=models/SmolLM2-135M-Instruct.Q4_1.gguf}" "${ctx:=512,2048}"
IFS=, read -ra ctxs <<<"$ctx"
for n in "${ctxs[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] && [ $((n % 256)) = 0 ] && [ "$n" -le 65536 ] && [ ${#ctxs[@]} -le 8 ] && [[ $ctx != *, ]] ||
        { echo "bench-peers: --ctx '$ctx': not a list of at most 8 multiples of 256 up to 65536" >&2; exit 2; }
done
[ "$long" = 0 ] || [ "$moe" = 0 ] || { echo "bench-peers: --long and --moe: one at a time" >&2; exit 2; }
if [ "${DRY_RUN:-}" = 1 ]; then  # the parsed flags only (tests/test_bench_peers.sh)
    echo "model $model; ctx ${ctxs[*]}; moe $moe; reps $reps; threads $threads"
    exit 0
fi
if [ "$moe" = 1 ] && [ "$model" = "$moe_model" ] && [ ! -f "$model" ]; then
    py=.venv/bin/python; [ -x "$py" ] || py=python3
    echo "bench-peers: writing $model (3.6 GiB of random Q4_0 weights, once)"
    "$py" scripts/make_7b_gguf.py --arch olmoe --out "$model" ||
        { echo "bench-peers: $model: scripts/make_7b_gguf.py failed" >&2; exit 1; }
fi
lengths=${LENGTHS:-8192 16384 32768} # --long's prefill lengths
for n in $lengths; do
    [[ $n =~ ^[1-9][0-9]*$ ]] && [ $((n % 256)) = 0 ] ||
        { echo "bench-peers: LENGTHS: '$n' is not a multiple of 256" >&2; exit 2; }
done
[ -f "$model" ] || { echo "bench-peers: $model: no such model (scripts/setup.sh demo fetches it)" >&2; exit 1; }
[ -x build/bench/bench_forward ] || { echo "bench-peers: build/bench/bench_forward: not built (make bench-peers builds it)" >&2; exit 1; }

# ---- llama.cpp: sdist -> llama-bench + llama-quantize, once --------------------
mkdir -p "$out"
# a build per set of paths: a cache made on another CPU (or with GGML_NATIVE) is not taken
src=$out/llama_cpp_python-$ver/vendor/llama.cpp bld=$out/build-$ver-$(printf '%s\n' "${ggml_opts[@]}" | sha256sum | cut -c1-12)
LB=$bld/bin/llama-bench LQ=$bld/bin/llama-quantize
if [ ! -x "$LB" ] || [ ! -x "$LQ" ]; then
    command -v cmake >/dev/null && command -v g++ >/dev/null || scripts/deb-install.sh cmake g++
    if [ ! -d "$src" ]; then
        py=.venv/bin/python; [ -x "$py" ] || py=python3
        [ -f "$out/llama_cpp_python-$ver.tar.gz" ] ||
            "$py" -m pip download -q --no-binary :all: --no-deps "llama-cpp-python==$ver" -d "$out"
        tar -xzf "$out/llama_cpp_python-$ver.tar.gz" -C "$out"
    fi
    echo "bench-peers: building llama-bench and llama-quantize from $src (minutes, once)"
    # CPU only, this CPU's extensions but AMX, static: nothing but the two tools.
    echo "bench-peers: llama.cpp CPU paths: $paths"
    cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release "${ggml_opts[@]}" -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_APP=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF >"$out/cmake-config.log"
    cmake --build "$bld" -j 2 --target llama-bench llama-quantize >"$out/cmake-build.log" ||
        { echo "bench-peers: llama.cpp build failed, see $out/cmake-build.log" >&2; exit 1; }
fi

yn() { has "$1" && echo yes || echo no; }
echo "machine    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
    "avx2 $(yn avx2), avx512f $(yn avx512f), avx512_bf16 $(yn avx512_bf16), amx_bf16 $(yn amx_bf16)"
echo "threads    $threads for both (aha: OMP_NUM_THREADS; llama-bench: -t)"
echo "llama.cpp  $("$LB" --version 2>&1 | head -1 | sed 's/^version: //') from PyPI llama-cpp-python $ver (sdist), CPU, Release, paths: $paths"
echo "note       OPENBLAS_CORETYPE='${OPENBLAS_CORETYPE:-}' OPENBLAS_L2_SIZE='${OPENBLAS_L2_SIZE:-}' unset for the benchmark commands only"
B=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads")
# maxrss OUT CMD...: CMD's stdout into OUT (stderr into OUT.log); prints its peak RSS in KiB
maxrss() {
    local o=$1; shift
    /usr/bin/time -f '%M' -o "$out/rss" "$@" >"$o" 2>"$o.log" || { echo "bench-peers: $1 failed, see $o.log" >&2; exit 1; }
    cat "$out/rss"
}
if [ "$long" = 1 ]; then
    . scripts/bench-peers-long.sh
    exit 0
fi

# ---- F32 / BF16 conversions of the same weights, once ----------------------------
# llama-quantize dequantizes with ggml's own Q4_1 code, so both tools read
# the same values; gguf-py would need llama.cpp's Python package besides.
base=$(basename "$model" .gguf)
files=("$model") convs=(F32 BF16)
[ "$moe" = 0 ] || convs=()  # 7B parameters: 28 GB in F32
for t in "${convs[@]}"; do
    f=$out/$base.$t.gguf
    if [ ! -f "$f" ]; then
        "$LQ" --allow-requantize "$model" "$f.part" "$t" "$threads" >"$out/quantize-$t.log" 2>&1 ||
            { echo "bench-peers: $f: llama-quantize failed, see $out/quantize-$t.log" >&2; exit 1; }
        mv "$f.part" "$f"
    fi
    files+=("$f")
done

# ---- the runs ------------------------------------------------------------------
max_ctx=$(printf '%s\n' "${ctxs[@]}" | sort -n | tail -1)
echo "work       prefill: aha computes the lm_head for the last token of each 256-token batch (bench_forward 'last'), llama-bench"
echo "           for the last token only: N/256 vs 1 rows at ctx N, each 2*dim*vocab FLOPs (SmolLM2: 57 MFLOP, under 0.1% of"
echo "           the prefill; aha's 'work' line below gives both); llama-bench ubatch 512 (its default), aha batch 256. decode @N:"
echo "           32 single-token steps at positions N-32..N-1 (llama-bench -n 32 -d N-32). Both warm up first (llama-bench's"
echo "           default; aha warmup 1). contexts: ${ctxs[*]}"
echo "rss        peak resident set: aha's own VmHWM (model + state; its sgemm and bandwidth probes run after), llama-bench's max"
echo "           RSS of its prefill and decode processes (/usr/bin/time; both reach a $max_ctx-token context)"
echo "inputs     synthetic token ids; reps $reps, interleaved; files: ${files[*]}"
echo "load       $(cut -d' ' -f1-3 /proc/loadavg) before the runs (1/5/15-min averages; other jobs slow both tools, interleaved)"
raw=$out/raw.tsv; : >"$raw"
pp_list=$(IFS=,; echo "${ctxs[*]}")
tg_list=$(for n in "${ctxs[@]}"; do echo $((n - 32)); done | paste -sd,)
peers=(llama); [ "$moe" = 0 ] || peers+=(llama-repack0)
for r in $(seq "$reps"); do
    for f in "${files[@]}"; do
        # aha: one timed repetition per call, so the calls interleave with llama.cpp's;
        # weights read in their stored type, products in f32, and on the BF16
        # file also --dtype bf16 (bf16 products)
        dts=(f32); [[ $f == *.BF16.gguf ]] && dts+=(bf16)
        for dt in "${dts[@]}"; do
            tool=aha; [ "$dt" = f32 ] || tool=aha-$dt
            o=$("${B[@]}" build/bench/bench_forward "$f" 1 last 1 stored "$dt" "$pp_list")
            [ "$r" = 1 ] && [ "$dt" = f32 ] && grep -E '^(model|work) ' <<<"$o" >&2
            sed -nE 's/^ctx ([0-9]+) +prefill +([0-9.]+) tok\/s.*decode +([0-9.]+) tok\/s.*/\1 \2 \3/p' <<<"$o" |
                while read -r n pp tg; do printf '%s\t%s\tpp%s\t%s\n%s\t%s\ttg@%s\t%s\n' "$f" "$tool" "$n" "$pp" "$f" "$tool" "$n" "$tg"; done >>"$raw"
            printf '%s\t%s\trss\t%s\n' "$f" "$tool" "$(sed -nE 's/^peak RSS +([0-9]+) MiB.*/\1/p' <<<"$o")" >>"$raw"
        done
        # llama.cpp: prefill, then decode at the same depths (--moe: also with --repack 0)
        for peer in "${peers[@]}"; do
            rp=1; [ "$peer" = llama ] || rp=0
            L=("${B[@]}" "$LB" -m "$f" -t "$threads" -r 1 --repack "$rp" -o jsonl)
            k1=$(maxrss "$out/pp.jsonl" "${L[@]}" -p "$pp_list" -n 0)
            k2=$(maxrss "$out/tg.jsonl" "${L[@]}" -p 0 -n 32 -d "$tg_list")
            cat "$out/pp.jsonl" "$out/tg.jsonl" | python3 -c '
import json, sys
for l in sys.stdin:
    j = json.loads(l)
    t = "pp%d" % j["n_prompt"] if j["n_prompt"] else "tg@%d" % (j["n_depth"] + j["n_gen"])
    print("%s\t%s\t%s\t%.2f" % (sys.argv[1], sys.argv[2], t, j["avg_ts"]))' "$f" "$peer" >>"$raw"
            printf '%s\t%s\trss\t%s\n' "$f" "$peer" "$(( (k1 > k2 ? k1 : k2) / 1024 ))" >>"$raw"
        done
    done
    echo "rep $r/$reps done" >&2
done

echo "load       $(cut -d' ' -f1-3 /proc/loadavg) after the runs"

# ---- medians, side by side ------------------------------------------------------
python3 - "$raw" "$model" "$pp_list" <<'EOF'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    f, tool, test, v = l.rstrip("\n").split("\t")
    rows.setdefault((f, test), {}).setdefault(tool, []).append(float(v))
def label(f):
    if f == sys.argv[2]: return f.rsplit("/", 1)[-1] + " (as stored)"
    return f.rsplit(".", 2)[-2] + " conversion"
print("\nmedians; aha reads every matrix in its stored type (--weights stored, the default): f32 products, and on the")
print("BF16 file also --dtype bf16 (bf16 x bf16 -> f32 products; attention and the dependency pass stay f32)")
print("(llama.cpp --repack 0: its weights as the file has them, not repacked into its interleaved layouts at load)")
print("| file | aha | test | aha | llama.cpp | aha/llama.cpp |")
print("|---|---|---|---:|---:|---:|")
seen = []
for (f, test) in rows:
    if f not in seen: seen.append(f)
ctxs = sys.argv[3].split(",")
tests = [("pp" + n, "tok/s") for n in ctxs] + [("tg@" + n, "tok/s") for n in ctxs] + [("rss", "MiB")]
for f in seen:
    for tool, how in (("aha", "f32 products"), ("aha-bf16", "--dtype bf16")):
        for peer, vs in (("llama", ""), ("llama-repack0", "; llama.cpp --repack 0")):
            for test, unit in tests:
                d = rows.get((f, test), {})
                if tool not in d or peer not in d: continue
                a, b = statistics.median(d[tool]), statistics.median(d[peer])
                name = {"rss": "peak RSS"}.get(test, test.replace("tg@", "decode @"))
                print("| %s | %s%s | %s | %.1f %s | %.1f %s | %.2fx |" % (label(f), how, vs, name, a, unit, b, unit, a / b))
EOF
