#!/usr/bin/env bash
# L1 load traffic of the axis-1 integer decode kernels under Nsight Compute:
# global-load requests, sectors and L1 data-pipe wavefronts, shared-memory
# wavefronts, LSU-pipe warp instructions, the L1 throughput against its peak
# and the duration, for gate/up at M = 1 and k = 2, 3, 4 (one launch of each
# kernel the quick benchmark runs for that k: the warpgroup kernel serves
# imma at k = 2 and 4, the mma.sync kernel imma at k = 3 and the fp16 form
# at every k). The question it answers: does a k = 3 run, whose four words
# are only 4-byte aligned (four 32-bit loads per run where k = 2 and 4 use a
# wide load and a 32-bit one), cost more L1 wavefronts per weight.
# Builds the kernels-only tree (build/variants, as bench/kernel_variants.sh)
# unless DEVICE_BUILD names a built one. Writes $OUT/ncu_l1.txt.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh" none
B=${DEVICE_BUILD:-build/variants}
if [[ -z ${DEVICE_BUILD:-} ]]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=OFF -DTRELLIS_KERNELS_ONLY=ON \
    >"$OUT/ncu_l1_build.log" 2>&1 && cmake --build "$B" -j 16 --target trellis_kernels_bench >>"$OUT/ncu_l1_build.log" 2>&1 ||
    { tail -30 "$OUT/ncu_l1_build.log"; exit 1; }
fi
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
metrics+=,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__lsuin_requests.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
metrics+=,'regex:smsp__average_warps_issue_stalled_(lg_throttle|long_scoreboard|mio_throttle|short_scoreboard|math_pipe_throttle|wait)_per_issue_active\.ratio'
# (k, kernel): the imma form at M = 1 (warpgroup kernel at k = 2, 4; mma.sync
# at k = 3), and the mma.sync kernel with integer and with fp16 operands at every k.
for k in 2 3 4; do
  kernels=("mma_axis1_kernel<(1|true)," "mma_axis1_kernel<(0|false),")
  [[ $k != 3 ]] && kernels+=("wgmma_axis1_kernel<")
  for kernel in "${kernels[@]}"; do
    echo "### gate_up M=1 k=$k $kernel" >>"$OUT/ncu_l1.txt"
    ncu --clock-control none --kernel-name-base demangled -k regex:"$kernel" --launch-skip 3 --launch-count 1 \
      --metrics "$metrics" "./$B/bench/cuda/trellis_kernels_bench" /tmp/ncu_l1.json --quick --only gate_up --k $k \
      >>"$OUT/ncu_l1.txt" 2>&1
  done
done
grep -E "^###|  void|_kernel<|duration|inst_executed|l1tex|stalled" "$OUT/ncu_l1.txt" | head -200
