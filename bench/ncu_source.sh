#!/usr/bin/env bash
# Where the decode kernels' warps wait, instruction by instruction: Nsight
# Compute's SourceCounters (warp-state samples per SASS instruction) for one
# launch each of gate/up (mma_axis1, imma form) and down (imma_axis0)
# at M = 1, k = K (default 3), exported as CSV ($OUT/ncu_source_OP_kK.csv,
# one row per SASS instruction) plus the WarpStateStats summary
# ($OUT/ncu_source.txt); bench/ncu_source_table.py summarises a CSV.
# Needs a build (DEVICE_BUILD, default build/device). OPS picks other
# (bench op, kernel) pairs, e.g. OPS="k_v:mma_axis1 up:mma_axis1".
#   K=3 bench/ncu_source.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/trellis-out}
K=${K:-3}
bench=./${DEVICE_BUILD:-build/device}/bench/cuda/trellis_kernels_bench
for spec in ${OPS:-gate_up:mma_axis1 down:imma_axis0}; do
  op=${spec%%:*} kernel=${spec#*:}
  # The 6th launch of the kernel: past the imma form's warm-up, still M = 1.
  ncu --clock-control none -k regex:"$kernel" --launch-skip 5 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight -f -o "/tmp/src_$op" \
      "$bench" /tmp/ncu_source_bench.json --quick --only "$op" --k "$K" >>"$OUT/ncu_source.txt" 2>&1
  ncu --import "/tmp/src_$op.ncu-rep" --print-summary none >>"$OUT/ncu_source.txt" 2>&1
  ncu --import "/tmp/src_$op.ncu-rep" --page source --csv --print-source sass >"$OUT/ncu_source_${op}_k$K.csv" 2>>"$OUT/ncu_source.txt"
  echo "$op: $(wc -l <"$OUT/ncu_source_${op}_k$K.csv") source rows"
done
