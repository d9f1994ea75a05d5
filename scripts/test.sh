#!/usr/bin/env bash
# Builds and runs every test: the ASan+UBSan CPU suite, a bounded libFuzzer
# run of the header/config parsers, then the release build (CUDA when nvcc is
# found; CUDA tests skip visibly without a GPU) and its whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh

cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
scripts/fuzz.sh "${TRELLIS_FUZZ_SECONDS:-60}"

cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
