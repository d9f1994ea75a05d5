#!/usr/bin/env bash
# One GPU call for the CUDA Viterbi encoder: build the kernels-only tree
# (only the encoder's test and bench), run the test (gtest JSON), the bench
# (bench/cuda/viterbi_bench.cpp) and a compute-sanitizer pass over the
# small-trellis test. Everything lands in $OUT (≤ 8 files):
#   gpu.txt build.log viterbi_tests.json memcheck.log viterbi.json bench.log
# TRELLIS_COMMIT names the commit in the bench JSON (the device copy has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/trellis-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv |
  tee "$OUT/gpu.txt"

export TRELLIS_DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)

B=build/device-quant
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_KERNELS_ONLY=ON &&
  cmake --build $B -j 16 --target viterbi_encoder_test viterbi_bench; } >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "build ok"

timeout 60 $B/tests/cuda/viterbi_encoder_test --gtest_output=json:"$OUT/viterbi_tests.json" 2>&1 | tail -25
timeout 150 $B/bench/cuda/viterbi_bench "$OUT/viterbi.json" 2>&1 | tee "$OUT/bench.log"
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/cuda/viterbi_encoder_test \
  --gtest_filter='*EveryOverlap*' >"$OUT/memcheck.log" 2>&1
echo "memcheck exit $?"; tail -3 "$OUT/memcheck.log"
