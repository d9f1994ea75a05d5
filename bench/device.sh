#!/usr/bin/env bash
# One full GPU call: build the kernels-only tree, run the CUDA tests (JSON),
# compute-sanitizer on the small cases, the kernel benchmark, and dump SASS
# and an Nsight Compute profile of the decode kernels. Everything lands in $OUT.
#   (bench/device_session.sh runs this after bench/runtime_device.sh in one call)
#   bench/device.sh [sass|tests|bench|ncu|all]...   (default: all; QUICK=1: M = 1, 4, 8 only)
# To measure exactly one commit (not the work in progress of the shared tree),
# pack it here and run the unpacked copy on the GPU machine:
#   git archive --format=tar.gz -o .carry/head.tar.gz HEAD -- src include tests bench cmake \
#       CMakeLists.txt CMakePresets.json fuzz && git rev-parse --short HEAD >.carry/head.commit
#   device run, carrying .carry/head.tar.gz and .carry/head.commit:
#   export TRELLIS_COMMIT=$(cat .carry/head.commit); mkdir -p /tmp/clean &&
#   tar -xzf .carry/head.tar.gz -C /tmp/clean && cd /tmp/clean && OUT=$OUT bash bench/device.sh ...
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"

# DEVICE_BUILD: an already configured build directory to use instead (e.g. the
# full tree bench/runtime_device.sh built); else build/device, kernels only.
BUILD=${DEVICE_BUILD:-build/device}
if [[ -z ${DEVICE_BUILD:-} ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_KERNELS_ONLY=ON >"$OUT/build.log" 2>&1 ||
    { tail -50 "$OUT/build.log"; exit 1; }
fi
cmake --build "$BUILD" -j 16 --target test_trellis_forms test_residual_norm test_context trellis_kernels_bench >>"$OUT/build.log" 2>&1 ||
  { tail -50 "$OUT/build.log"; exit 1; }
echo "build ok"

if has sass; then
  forms=(mma_axis1 wgmma_axis1 mma_axis0 imma_axis0 reduce scatter)
  for f in "${forms[@]}"; do
    cuobjdump --dump-sass --gpu-architecture sm_90a "$BUILD/src/cuda/CMakeFiles/trellis_cuda.dir/trellis/$f.cu.o" \
      >"/tmp/$f.sass" 2>&1
  done
  (cd /tmp && cat "${forms[@]/%/.sass}") >/tmp/forms.sass
  # To a file first: a pipe into head would end the script before it writes the JSON.
  python3 bench/sass_loop_stats.py /tmp/forms.sass --json "$OUT/sass_loop_stats.json" >/tmp/sass_loop_stats.txt
  head -80 /tmp/sass_loop_stats.txt
  gzip -c /tmp/forms.sass >"$OUT/forms_sass.txt.gz"  # tens of MB as text
fi
if has tests; then
  ./$BUILD/tests/cuda/test_trellis_forms --gtest_output=json:"$OUT/cuda_tests.json" 2>&1 | tail -40
  compute-sanitizer --tool memcheck --error-exitcode 9 ./$BUILD/tests/cuda/test_trellis_forms \
    --gtest_filter='*264x768*:*768x264*' >"$OUT/memcheck.log" 2>&1
  echo "memcheck exit $? ($(grep -c 'ERROR SUMMARY: 0' "$OUT/memcheck.log") clean summaries)"; tail -3 "$OUT/memcheck.log"
  ./$BUILD/tests/cuda/test_residual_norm --gtest_output=json:"$OUT/residual_norm_tests.json" 2>&1 | tail -20
  compute-sanitizer --tool memcheck --error-exitcode 9 ./$BUILD/tests/cuda/test_residual_norm \
    >"$OUT/memcheck_residual_norm.log" 2>&1
  echo "memcheck (residual norm) exit $?"; tail -3 "$OUT/memcheck_residual_norm.log"
  ./$BUILD/tests/cuda/test_context --gtest_output=json:"$OUT/context_tests.json" 2>&1 | tail -20
fi
if has bench; then
  ./$BUILD/bench/cuda/trellis_kernels_bench "$OUT/trellis_kernels.json" ${QUICK:+--quick} 2>&1
fi
if has ncu; then
  sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
            --section InstructionStats --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis"
  for k in mma_axis1 imma_axis0; do
    ncu --clock-control none $sections -k regex:"$k" --launch-skip 12 --launch-count 1 \
        ./$BUILD/bench/cuda/trellis_kernels_bench /tmp/ncu_bench.json --quick >>"$OUT/ncu.txt" 2>&1
  done
  grep -E "  [a-z_]+kernel|Duration|Issue Slots Busy|Issued Ipc Active|Registers Per|Achieved Occupancy|No Eligible|Eligible Warps Per|Memory Throughput|Compute \(SM\) Throughput|L1/TEX Hit|Mem Busy|Max Bandwidth" "$OUT/ncu.txt" | head -80
fi
