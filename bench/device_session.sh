#!/usr/bin/env bash
# The whole GPU check of a commit in one device call (a session's device
# time is short, and at most 8 files come back from $OUT):
#   1. bench/runtime_device.sh tests bench   the full tree, the CUDA model
#      tests and KL gates, trellis run on the synthetic Qwen3-14B
#   2. bench/device.sh sass tests bench      on that same build (QUICK=1):
#      the kernel tests, memcheck, the kernel benchmark, the SASS stats
#   3. bench/runtime_device.sh STEPS...      anything else (default: profile kernels)
#   4. bench/timeline/run.sh                  a decode step's kernels inside its graph (CUPTI)
#   5. with SOURCE=1, bench/ncu_source.sh     Nsight source counters of gate/up and down
# After each stage its files are packed into one archive in $OUT
# (runtime.tgz, kernels.tgz, late.tgz, timeline.tgz, source.tgz), so a call cut short keeps what ran.
# Needs .carry/model-sysroot.tar.xz where the machine lacks PCRE2/ICU
# (bench/make_device_sysroot.sh builds it), and
# COMMIT (the commit being measured; the device copy has no .git).
#   COMMIT=abc1234 [SOURCE=1] bench/device_session.sh [STEPS...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/trellis-out}
mkdir -p "$OUT"
export COMMIT=${COMMIT:?set COMMIT to the commit being measured} TRELLIS_COMMIT=$COMMIT
late=(profile kernels)
(($#)) && late=("$@")
pack() {
  local files
  files=$(cd "$OUT" && ls | grep -v '\.tgz$')
  [[ -n $files ]] && (cd "$OUT" && tar czf "$1.tgz" $files && rm -f $files)
}
OUT=$OUT bash bench/runtime_device.sh tests bench >"$OUT/runtime_stage.txt" 2>&1
grep -E "model tests|graphs=|Failure|FAILED" "$OUT/runtime_stage.txt" | head -20
pack runtime
DEVICE_BUILD=build/device-model QUICK=1 OUT=$OUT bash bench/device.sh sass tests bench >"$OUT/kernels_stage.txt" 2>&1
grep -E "PASSED|FAILED|tests ran|memcheck exit| k=[234] M=1:" "$OUT/kernels_stage.txt" | head -60
pack kernels
OUT=$OUT bash bench/runtime_device.sh "${late[@]}" >"$OUT/late_stage.txt" 2>&1
grep -E "^k[0-9]_|profile exit|kernels: |graphs=" "$OUT/late_stage.txt"
pack late
TIMELINE_BUILD=build/device-model OUT=$OUT bash bench/timeline/run.sh >"$OUT/timeline_stage.txt" 2>&1
grep -E "^step span|^(mma_axis1|imma_axis0|reduce)_kernel" "$OUT/timeline_stage.txt"
pack timeline
if [[ ${SOURCE:-0} == 1 ]]; then
  DEVICE_BUILD=build/device-model OUT=$OUT bash bench/ncu_source.sh >"$OUT/source_stage.txt" 2>&1
  tail -2 "$OUT/source_stage.txt"
  pack source
fi
