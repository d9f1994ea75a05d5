#!/usr/bin/env bash
# Stall breakdown of the tensor-core decode kernels under Nsight Compute:
# cycles per issued instruction spent in each stall reason, plus occupancy and
# pipe utilisation and warp instructions executed per pipe, executed warp
# instructions and duration, for gate/up (axis 1) and down (axis 0) at M = 1,
# k = 2 (the 13th launch of each in the quick benchmark: the imma form).
# Needs a build (DEVICE_BUILD, default build/device, which bench/device.sh
# builds). Writes $OUT/ncu_stalls.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/trellis-out}
bench=./${DEVICE_BUILD:-build/device}/bench/cuda/trellis_kernels_bench
for k in mma_axis1 imma_axis0; do
  ncu --clock-control none -k regex:"$k" --launch-skip 12 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section SchedulerStats --section ComputeWorkloadAnalysis \
      --metrics smsp__inst_executed.sum,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio','regex:^smsp__inst_executed_pipe_[a-z_]+\.sum$','regex:^sm__pipe_[a-z_]+_cycles_active\.avg\.pct_of_peak_sustained_active$',smsp__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active \
      "$bench" /tmp/ncu_bench.json --quick >>"$OUT/ncu_stalls.txt" 2>&1
done
grep -E "  [a-z_0-9]+kernel|stalled_|pipe_|inst_executed.sum|Duration|Eligible|Occupancy|Issue" "$OUT/ncu_stalls.txt" |
  awk '($NF+0 > 0.05 && $NF != "0") || !/stalled|pipe_/' | head -120
