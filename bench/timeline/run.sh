#!/usr/bin/env bash
# A decode step's kernels as they run inside its CUDA graph (GPU machine):
# builds `trellis` (the full tree, sm_90a) and the CUPTI tracer
# (kernel_trace.cpp, against the machine's CUPTI), synthesizes Qwen3-14B at 3
# bits, and runs `trellis run --device cuda` on the 512-token prompt with N
# tokens generated (default 64, greedy, CUDA graphs) twice: plain (its tok/s,
# to see what the tracing costs) and traced. Writes $OUT/step_timeline.txt
# (step_timeline.py's table) and $OUT/kernel_trace.csv.gz.
# TIMELINE_BUILD: a full-tree build directory already configured (e.g. the one
# bench/runtime_device.sh made): only `trellis` is brought up to date there.
#   OUT=$OUT [N=64] [RUN_ARGS="--temp 0"] [TIMELINE_BUILD=DIR] bench/timeline/run.sh
set -uo pipefail
source "$(dirname "$0")/../device_steps.sh" none
LOG=$OUT/timeline_log.txt
use_model_sysroot
B=${TIMELINE_BUILD:-build/device-model}
if [[ -z ${TIMELINE_BUILD:-} ]]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=OFF -DTRELLIS_KERNELS_ONLY=OFF \
    "${model_cmake_args[@]}" >"$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
fi
cmake --build $B -j 16 --target trellis >>"$LOG" 2>&1 || { grep -E "error|FAILED" "$LOG" | head -20; exit 1; }
build_kernel_tracer >>"$LOG" 2>&1 || { tail -20 "$LOG"; exit 1; }
[[ -f /tmp/q14/config.json ]] || $B/trellis synth --like qwen3-14b --bits 3 --out /tmp/q14 >>"$LOG" 2>&1 ||
  { tail -5 "$LOG"; exit 1; }
write_prompt512
export CUDA_MODULE_LOADING=EAGER
run() { prompt_run $B/trellis q14 "${N:-64}" ${RUN_ARGS:---temp 0} >/dev/null; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  echo "plain:  $(run 2>&1 | tail -1)"
  echo "traced: $(CUDA_INJECTION64_PATH=/tmp/libkernel_trace.so TRELLIS_KERNEL_TRACE=$OUT/kernel_trace.csv run 2>&1 | tail -2 | tr '\n' ' ')"
  python3 bench/timeline/step_timeline.py "$OUT/kernel_trace.csv"
} >"$OUT/step_timeline.txt" 2>&1
gzip -f "$OUT/kernel_trace.csv"
cat "$OUT/step_timeline.txt"
