#!/usr/bin/env bash
# make bench-peers builds llama.cpp for the CPU's x86 extensions named one by
# one, never its AMX paths (with GGML_NATIVE=ON, llama-bench segfaults in them
# on a Sapphire Rapids class CPU): the cmake options its --print-build names
# for a cpuinfo with AMX and for one without AVX-512; and its flags (--moe,
# --ctx, --long) as it parses them (DRY_RUN=1 stops there, --long's where they are
# refused before anything is built), and make's MOE= / CTX= / LONG=.
# The build and the benchmark themselves are not run here. Prints PASS/FAIL lines.
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail=0
# check NAME FLAGS WANT... / NOT...: the options for a CPU with these cpuinfo flags
check() {
    local name=$1 flags=$2; shift 2
    printf 'processor\t: 0\nmodel name\t: test\nflags\t\t: %s\n' "$flags" >"$tmp/cpuinfo"
    local out; out=$(CPUINFO="$tmp/cpuinfo" scripts/bench-peers.sh --print-build 2>&1)
    local bad=""
    for w in "$@"; do
        case $w in
            !*) grep -q -- "${w#!}" <<<"$out" && bad+=" has ${w#!}" ;;
            *) grep -q -- "$w" <<<"$out" || bad+=" lacks $w" ;;
        esac
    done
    if [ -z "$bad" ]; then echo "PASS bench-peers: $name"; else echo "FAIL bench-peers: $name:$bad"; echo "  $out"; fail=1; fi
}
spr="fpu sse4_2 avx avx2 bmi2 fma f16c avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16 avx_vnni amx_bf16 amx_tile amx_int8"
check "a Sapphire Rapids class CPU: every AVX-512 path, AMX off, not native" "$spr" \
    -DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_BF16=ON -DGGML_AVX512_VNNI=ON -DGGML_AMX_TILE=OFF \
    -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF "AMX off (this CPU has AMX: yes)" '!GGML_NATIVE=ON' '!AMX_[A-Z0-9]*=ON'
check "an AVX2 CPU (machine A): AVX2 and FMA, no AVX-512" "fpu sse4_2 avx avx2 bmi2 fma f16c" \
    -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_AVX512=OFF -DGGML_AVX512_BF16=OFF "paths: SSE42 AVX AVX2 BMI2 FMA F16C;"
check "AVX-512 only with all five subsets ggml compiles it with" "avx2 avx512f avx512cd avx512vl" -DGGML_AVX512=OFF
# flags NAME WANT ARGS...: the script's one line under DRY_RUN=1 is WANT (exit 0), or with WANT "!MSG" names
# MSG in one line on stderr (exit 2)
flags() {
    local name=$1 want=$2; shift 2
    local out rc; out=$(DRY_RUN=1 scripts/bench-peers.sh "$@" 2>&1); rc=$?
    local ok=1
    case $want in
        !*) [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -qF -- "${want#!}" <<<"$out" || ok=0 ;;
        *) [ "$rc" = 0 ] && [ "$out" = "$want" ] || ok=0 ;;
    esac
    if [ $ok = 1 ]; then echo "PASS bench-peers: $name"; else echo "FAIL bench-peers: $name: exit $rc: $out"; fail=1; fi
}
moe=bench-out/moe/olmoe-1b-7b-shape.Q4_0.gguf
flags "defaults: SmolLM2, contexts 512 and 2048" \
    "model models/SmolLM2-135M-Instruct.Q4_1.gguf; ctx 512 2048; moe 0; reps 3; threads 2" --reps 3
flags "--moe: the OLMoE-shaped file, context 512" "model $moe; ctx 512; moe 1; reps 3; threads 2" --moe --reps 3
flags "--moe --ctx 512,1024 --model M: both kept" "model m.gguf; ctx 512 1024; moe 1; reps 2; threads 2" \
    --moe --ctx 512,1024 --model m.gguf --reps 2
for bad in 500 512, ,512 0 256,512,768,1024,1280,1536,1792,2048,2304; do
    flags "--ctx $bad refused" "!--ctx '$bad': not a list of at most 8 multiples of 256" --ctx "$bad"
done
flags "--ctx without a value refused" "!--ctx needs a value" --ctx
mk=$(make -n bench-peers MOE=1 CTX=512,1024 2>&1 | grep 'scripts/bench-peers.sh' | tr -s ' ' | sed 's/ $//')
if [ "$mk" = "scripts/bench-peers.sh --moe --ctx 512,1024" ]; then echo "PASS bench-peers: make MOE=1 CTX=... passes --moe --ctx"
else echo "FAIL bench-peers: make MOE=1 CTX=512,1024 runs '$mk'"; fail=1; fi
# refused NAME WANT CMD...: CMD exits 2 and its message holds WANT
refused() {
    local name=$1 want=$2; shift 2
    local out rc; out=$("$@" 2>&1); rc=$?
    if [ "$rc" = 2 ] && grep -qF -- "$want" <<<"$out"; then echo "PASS bench-peers: $name"
    else echo "FAIL bench-peers: $name: rc $rc, want 2 and '$want':"; echo "  $out"; fail=1; fi
}
grep -q -- '--long' <<<"$(scripts/bench-peers.sh --help)" && echo "PASS bench-peers: --help lists --long" ||
    { echo "FAIL bench-peers: --help does not list --long"; fail=1; }
refused "--long is a flag: its --reps 0 is the error" "'0' is not a count" scripts/bench-peers.sh --long --reps 0
refused "--long: LENGTHS not multiples of 256 refused" "LENGTHS: '1000' is not a multiple of 256" \
    env LENGTHS="8192 1000" scripts/bench-peers.sh --long
refused "--long --moe: one at a time" "--long and --moe: one at a time" scripts/bench-peers.sh --long --moe
mk=$(make -n bench-peers LONG=1 2>&1 | grep 'scripts/bench-peers.sh' | tr -s ' ' | sed 's/ $//')
if [ "$mk" = "scripts/bench-peers.sh --long" ]; then echo "PASS bench-peers: make LONG=1 passes --long"
else echo "FAIL bench-peers: make LONG=1 runs '$mk'"; fail=1; fi
exit $fail
