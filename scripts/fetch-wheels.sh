#!/bin/sh
# Fetch h5py wheels for the GPU machine, whose Python may have PyTorch (and
# numpy) but not h5py, and which reaches no registry: tests/test_device.py,
# the end-to-end CPU-vs-CUDA trace comparison, reads traces with h5py.
#
#   scripts/fetch-wheels.sh   here -> .deps/wheels/h5py-*-cp3XX-*.whl (git-ignored)
#
# One wheel per CPython 3.10-3.13 (about 5 MB each; manylinux_2_28, libhdf5
# inside). scripts/gpu-check.sh unzips the one matching the machine's python3
# into .deps/py and puts it on PYTHONPATH when h5py is missing there.
set -eu
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
[ -x "$PIP" ] || PIP="python3 -m pip"
mkdir -p .deps/wheels
for v in 3.10 3.11 3.12 3.13; do
    $PIP download h5py --only-binary=:all: --no-deps --python-version "$v" \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .deps/wheels -q
done
ls -l .deps/wheels
