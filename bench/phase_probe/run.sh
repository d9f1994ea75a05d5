#!/usr/bin/env bash
# Where the time of the integer decode kernels goes, phase by phase (GPU
# machine): instruments a kernels-only build (instrument.py: timestamps at the
# phase boundaries of wgmma_axis1, mma_axis1 and imma_axis0 and inside the x
# staging), runs the quick kernel benchmark on it and writes $OUT/phases.txt
# (per op, k, M: the median / max over work units of each phase, the span of
# the launch, and for the last launch the distribution of one phase, each SM's
# spread of unit end times and the slowest units).
# The instrumented sources are put back when it ends. Only the phase table
# means something: each instrumented call synchronises.
#   ONLY=gate_up,down KS=2 OUT=$OUT bench/phase_probe/run.sh
set -uo pipefail
source "$(dirname "$0")/../device_steps.sh" none
files=(src/cuda/trellis/wgmma_axis1.cu src/cuda/trellis/mma_axis1.cu src/cuda/trellis/imma_axis0.cu src/cuda/trellis/stage_bytes.cuh)
saved=$(mktemp -d)
for f in "${files[@]}"; do cp -p "$f" "$saved/$(basename "$f")"; done
restore() {
  for f in "${files[@]}"; do cp "$saved/$(basename "$f")" "$f"; done
  rm -f src/cuda/trellis/phase_probe.cuh
}
trap restore EXIT
python3 bench/phase_probe/instrument.py . || exit 1
B=build/phase-probe
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=OFF -DTRELLIS_KERNELS_ONLY=ON \
  >"$OUT/phase_probe_build.log" 2>&1 || { tail -20 "$OUT/phase_probe_build.log"; exit 1; }
cmake --build $B -j 16 --target trellis_kernels_bench >>"$OUT/phase_probe_build.log" 2>&1 ||
  { grep error "$OUT/phase_probe_build.log" | head; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/phases.txt"
PHASE_OUT=$OUT/phases.txt timeout 300 ./$B/bench/cuda/trellis_kernels_bench /tmp/phase_probe_bench.json --quick \
  --only "${ONLY:-gate_up,up,down,k_v,q_o}" --k "${KS:-2,4}" >/dev/null 2>&1
echo "bench exit $?"
cat "$OUT/phases.txt"
