#!/usr/bin/env bash
# Kernel experiments in one device call: build the kernels-only tree once per
# variant (sm_90a only, TRELLIS_CUDA_PORTABLE=OFF, which halves nvcc's time),
# run the CUDA form and residual-norm tests and the kernel benchmark for each, and write one
# table that puts the variants side by side.
#
#   OUT=$OUT bench/kernel_variants.sh [VARIANT_DIR...]
#
# The working tree as it is runs first, as "base". A variant is a directory
# holding replacement files at their paths in the repository (e.g.
# .carry/variants/quarter/src/cuda/trellis/run_decode.cuh): they are copied
# over the tree for that variant's build and the originals put back after it
# (also when the script is interrupted). Variant directories are ignored
# paths, so name them in the device call's carry. A control variant — a
# directory holding an unchanged copy of one source file, e.g.
# src/cuda/trellis/swiglu_op.cu — builds the base code as its own binary and
# takes its own turn: its difference from base is the comparison's own spread.
#
# Environment: ONLY (ops, default gate_up,up,down), KS (default 2,3,4),
# LIMIT (seconds; a variant is not started when the time so far plus the
# longest variant so far would pass it; default 540, under the device's 600),
# RUNTIME=1: build the full tree instead (with the model sysroot when
# .carry/model-sysroot.tar.xz is there) and keep each variant's `trellis`;
# after the builds, synthesize qwen3-14b at 3 bits once and run `trellis run
# --device cuda` (the 512-token prompt, 256 generated, CUDA graphs) RUNS times
# per variant (default 2), the variants taking turns so that drift between
# runs falls on all of them alike; runs stop at RUN_LIMIT s (default 580). LIMIT
# then defaults to 420.
# Results in $OUT: variants.txt (the table) and variants.tgz (tests_NAME.json and
# tests_residual_norm_NAME.json: the form tests and the residual-norm tests,
# bench_NAME.json, runtime_NAME.txt, variants_build.log). With RUNTIME=1 and
# TIMELINE=1, each variant also runs once more (64 tokens) under the CUPTI
# kernel tracer (bench/timeline), and its step timeline goes into variants.txt
# and timeline_NAME.txt.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh" none
ONLY=${ONLY:-gate_up,up,down}
KS=${KS:-2,3,4}
RUNTIME=${RUNTIME:-0}
RUNS=${RUNS:-2}
RUN_LIMIT=${RUN_LIMIT:-580}
CHECKS=${CHECKS:-1}
if [[ $RUNTIME == 1 ]]; then LIMIT=${LIMIT:-420}; else LIMIT=${LIMIT:-540}; fi
B=build/variants
bins=/tmp/variant-bins
LOG=$OUT/variants_build.log
t_start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/variants.txt"
trap restore EXIT

targets=(test_trellis_forms test_residual_norm trellis_kernels_bench)
[[ $RUNTIME == 1 && $CHECKS == 0 ]] && targets=()
if [[ $RUNTIME == 1 ]]; then
  use_model_sysroot
  # OFF explicitly: a kernels-only call on the same machine left ON in the cache.
  tree=(-DTRELLIS_KERNELS_ONLY=OFF "${model_cmake_args[@]}")
  targets+=(trellis)
  rm -rf "$bins" && mkdir -p "$bins"
else
  tree=(-DTRELLIS_KERNELS_ONLY=ON)
fi
# A variant's objects outlive its call in $B, and the next call's tree comes
# with its own (older) modification times, so the base build would take them
# for up to date: the files an earlier call overlaid are rebuilt.
if [[ -f $B/.overlaid ]]; then
  sort -u "$B/.overlaid" | while IFS= read -r f; do [[ -e $f ]] && touch "$f"; done
  rm -f "$B/.overlaid"
fi
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=OFF "${tree[@]}" >"$LOG" 2>&1 ||
  { tail -30 "$LOG"; exit 1; }

longest=0
run_variant() {
  local name=$1 t0 built
  t0=$(date +%s)
  if (( t0 - t_start + longest > LIMIT )); then
    echo "== $name: not run (time so far $(( t0 - t_start )) s, longest variant $longest s, limit $LIMIT s)" | tee -a "$OUT/variants.txt"
    return
  fi
  if ! cmake --build $B -j 16 --target "${targets[@]}" >>"$LOG" 2>&1; then
    echo "== $name: build failed" | tee -a "$OUT/variants.txt"
    grep -E "error" "$LOG" | tail -5
    return
  fi
  built=$(( $(date +%s) - t0 ))
  [[ $RUNTIME == 1 ]] && cp $B/trellis "$bins/$name"
  local tests_rc=skipped
  if [[ $CHECKS == 1 ]]; then
    timeout 120 ./$B/tests/cuda/test_trellis_forms --gtest_output=json:"$OUT/tests_$name.json" >/dev/null 2>&1
    tests_rc=$?
    timeout 120 ./$B/tests/cuda/test_residual_norm --gtest_output=json:"$OUT/tests_residual_norm_$name.json" >/dev/null 2>&1
    tests_rc="$tests_rc (residual norm $?)"
    timeout 120 ./$B/bench/cuda/trellis_kernels_bench "$OUT/bench_$name.json" --quick --only "$ONLY" --k "$KS" >/dev/null 2>&1
  fi
  local t=$(( $(date +%s) - t0 ))
  (( t > longest )) && longest=$t
  echo "== $name: build $built s, tests exit $tests_rc, all $t s" | tee -a "$OUT/variants.txt"
}

names=(base)
run_variant base
for dir in "$@"; do
  name=$(basename "$dir")
  names+=("$name")
  overlay "$dir"
  run_variant "$name"
  restore
done
if [[ $RUNTIME == 1 && -x $bins/base ]]; then
  "$bins/base" synth --like qwen3-14b --bits 3 --out /tmp/q14 --force >>"$LOG" 2>&1 || { tail -5 "$LOG"; exit 1; }
  write_prompt512
  export CUDA_MODULE_LOADING=EAGER  # kernels loaded at start, not inside the timed prompt
  for ((r = 1; r <= RUNS; ++r)); do
    for name in "${names[@]}"; do
      [[ -x $bins/$name ]] || continue
      (( $(date +%s) - t_start > RUN_LIMIT )) && break 2
      prompt_run "$bins/$name" q14 256 --temp 0 >/dev/null 2>/tmp/variant_run.txt
      echo "run $r exit $?: $(tail -1 /tmp/variant_run.txt)" >>"$OUT/runtime_$name.txt"
    done
  done
fi
python3 bench/variants_table.py "$OUT" "${names[@]}" | tee -a "$OUT/variants.txt"
if [[ $RUNTIME == 1 && ${TIMELINE:-0} == 1 ]] && build_kernel_tracer >>"$LOG" 2>&1; then
  for name in "${names[@]}"; do
    [[ -x $bins/$name ]] || continue
    CUDA_INJECTION64_PATH=/tmp/libkernel_trace.so TRELLIS_KERNEL_TRACE=/tmp/trace_$name.csv \
      prompt_run "$bins/$name" q14 64 --temp 0 >/dev/null 2>>"$LOG"
    python3 bench/timeline/step_timeline.py /tmp/trace_$name.csv >"$OUT/timeline_$name.txt" 2>&1
    { echo "== step timeline: $name"; head -16 "$OUT/timeline_$name.txt"; } | tee -a "$OUT/variants.txt"
  done
fi
# At most 8 files come back from a device call: everything but the table goes into one archive.
(cd "$OUT" && files=$(ls | grep -v -e '^variants.txt$' -e '\.tgz$') && [[ -n $files ]] && tar czf variants.tgz $files && rm -f $files)
