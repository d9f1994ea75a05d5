#!/usr/bin/env bash
# Load traffic, pipe use and stall reasons of chosen kernel launches of the
# quick benchmark under Nsight Compute, one launch per case:
#   - global-load requests and sectors, L1 data-pipe wavefronts (all, and the
#     shared-memory part), LSU-pipe warp instructions and the L1 throughput
#     against its peak: whether a k = 3 run, whose four words are only 4-byte
#     aligned (four 32-bit loads per run where k = 2 and 4 use a wide load and
#     a 32-bit one), costs the axis-1 decode more L1 wavefronts per weight;
#   - issued warp instructions, ALU/FMA/LSU pipe use and every stall reason
#     per issued instruction: what holds the CUDA-core reduce form (q, k, v
#     and o of a decode step) at its issue rate.
# Cases (op, k, kernel), M = 1: gate/up at k = 2, 3, 4 — the imma form (the
# mma.sync kernel with integer operands at k = 3, the warpgroup kernel at
# k = 2 and 4) and the fp16 mma form (the same mma.sync kernel at every k);
# q_o and down at k = 3 — the reduce kernel and the integer axis-0 kernel;
# q_o at k = 2 in the reduce kernel; the warpgroup kernel at k = 3 (which
# runs there only where a build lets it serve M = 1 at k = 3). Also per launch: shared-memory bank
# conflicts, registers, the occupancy limits and the waves per SM.
# (ncu matches the demangled name, where a bool argument reads "(bool)1".)
# CASES (an extended regex) keeps only the cases it matches. Builds the
# kernels-only tree (build/variants, as bench/kernel_variants.sh) unless
# DEVICE_BUILD names a configured one, where it builds just the benchmark.
# Writes $OUT/ncu_counters.txt.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh" none
B=${DEVICE_BUILD:-build/variants}
{ [[ -n ${DEVICE_BUILD:-} ]] ||
    cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=OFF -DTRELLIS_KERNELS_ONLY=ON; } \
  >"$OUT/ncu_build.log" 2>&1 && cmake --build "$B" -j 16 --target trellis_kernels_bench >>"$OUT/ncu_build.log" 2>&1 ||
  { tail -30 "$OUT/ncu_build.log"; exit 1; }
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active
metrics+=,smsp__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
metrics+=,smsp__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,launch__occupancy_limit_registers
metrics+=,launch__occupancy_limit_shared_mem,launch__waves_per_multiprocessor,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
cases=(  # the most wanted first: a call may stop the script at its time limit
  "gate_up 3 mma_axis1_kernel<.bool.1,"
  "gate_up 2 wgmma_axis1_kernel<"
  "gate_up 3 mma_axis1_kernel<.bool.0,"
  "gate_up 2 mma_axis1_kernel<.bool.0,"
  "q_o 3 reduce_kernel<"
  "down 3 imma_axis0_kernel<"
  "gate_up 4 mma_axis1_kernel<.bool.0,"
  "gate_up 4 wgmma_axis1_kernel<"
  "q_o 2 reduce_kernel<"
  "gate_up 3 wgmma_axis1_kernel<"
)
for c in "${cases[@]}"; do
  [[ -n ${CASES:-} && ! $c =~ $CASES ]] && continue
  read -r op k kernel <<<"$c"
  echo "### $op M=1 k=$k $kernel" >>"$OUT/ncu_counters.txt"
  ncu --clock-control none --kernel-name-base demangled -k regex:"$kernel" --launch-skip 3 --launch-count 1 \
    --metrics "$metrics" "./$B/bench/cuda/trellis_kernels_bench" /tmp/ncu_counters.json --quick --only "$op" --k "$k" \
    >>"$OUT/ncu_counters.txt" 2>&1
done
grep -E "^###|  void|_kernel<|duration|inst_executed|issue_active|warps_active|l1tex|stalled|launch__" "$OUT/ncu_counters.txt" |
  awk '!/stalled/ || ($NF + 0 > 0.05)' | head -300
