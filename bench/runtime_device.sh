#!/usr/bin/env bash
# One GPU call for the CUDA model runtime (issues 5 and 6): build the whole
# tree in build/device-model (PCRE2, ICU and pkgconf from
# .carry/model-sysroot.tar.xz when the machine lacks them; bench/make_device_sysroot.sh
# builds it), then
#   tests    the CUDA model tests, the KL gates and the profiler test (one
#            merged gtest JSON; the KL gates' own JSON too)
#   eval     trellis eval --ppl on the bf16 fixture's first validation
#            window (1025 tokens), CPU and CUDA, against transformers' 114.62
#   bench    trellis synth --like qwen3-14b --bits 3 to /tmp/q14, trellis run
#            --device cuda on a 512-token prompt with 256 tokens generated
#            (greedy), CUDA graphs on and off, and on with TRELLIS_PDL=0;
#            then sampled with trellis run's default sampling (--seed 1)
#   norm_ab  (after bench) the same run with the in-layer residual norms
#            fused (the default) and launched (TRELLIS_NORM_FUSION=0), taking
#            turns, NORM_AB_RUNS (default 3) each: h200_runtime_norm_fusion.json
#   head     (after bench) the same greedy run on /tmp/q14 and on /tmp/q14h
#            (the same synthesis with --quantize-head: a 3-bit coded LM head
#            instead of bf16), taking turns, HEAD_RUNS (default 3) each:
#            h200_runtime_coded_head.json
#   sampled  (after bench) the same run greedy and with trellis run's default
#            sampling (--seed 1), taking turns, SAMPLED_RUNS (default 3) each:
#            h200_runtime_sampled_ab.json; with SAMPLED_BASE=DIR (a variant
#            directory, as bench/kernel_variants.sh takes: the files of the
#            build to compare with) also that build's sampled run, built
#            here by overlaying DIR on the tree (arm sampled_base)
#   profile  (after bench) the same prompt with 64 tokens generated under
#            TRELLIS_PROFILE (every op timed on the GPU)
#   kernels  (after bench) the same prompt and 4 generated tokens, eager, under
#            Nsight Compute: every kernel's GPU time; the table of the second
#            decode step (bench/ncu_step_table.py) in h200_decode_kernels.txt.
#            The profile step's event times include host gaps for small ops
#            when the host falls behind; these do not. KERNELS_ARGS (default
#            --temp 0) and KERNELS_TABLE (the file) for another run, e.g.
#            KERNELS_ARGS="--seed 1": a sampled step
#   quality  quality-sweep rows quantized by the CUDA encoder and scored on
#            this machine's CPUs: by default the L = 16 rows of docs/QUALITY.md
#            that were made this way (k = 4 with and without --rotate, k = 3
#            with it); QUALITY_SELECT="-L 16 -k 2 -r 0;..." picks others. The
#            per-run JSON in $OUT/quality.tar.gz (merge here: unpack into the
#            sweep's work dir, rerun the sweep with the same selection)
# Results in $OUT: h200_runtime.json, h200_runtime_coded_head.json, h200_runtime_sampled_ab.json, h200_runtime_profile.json (+ the table
# in runtime_profile.txt), h200_model_tests.json, h200_kl_gates.json,
# h200_eval_ppl.json, h200_decode_kernels.txt, runtime_log.txt.
#   bench/runtime_device.sh [tests|eval|bench|norm_ab|head|sampled|profile|kernels|quality|all]...   (default: all)
# PORTABLE=OFF builds for sm_90a only (TRELLIS_CUDA_PORTABLE, about half of
# nvcc's time); the H200 runs the sm_90a code either way.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
LOG="$OUT/runtime_log.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee -a "$LOG"

use_model_sysroot
B=build/device-model
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_CUDA_PORTABLE=${PORTABLE:-ON} "${model_cmake_args[@]}" >>"$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
tests=(model_cuda_ops_test model_cuda_parity_test model_cuda_trellis_test model_cuda_kl_test model_cuda_profile_test
  model_cuda_norm_fusion_test)
cmake --build $B -j 16 --target trellis "${tests[@]}" -- -k 0 \
  >>"$LOG" 2>&1 || grep -E "error|FAILED" "$LOG" | head -30
[[ -x $B/trellis ]] || exit 1
# The timed run: trellis run on MODEL (/tmp/MODEL) with the 512-token prompt, 256 tokens generated, then ARGS.
# TRELLIS_BIN: another build's binary.
run512() {
  local model=$1
  shift
  prompt_run "${TRELLIS_BIN:-$B/trellis}" "$model" 256 "$@"
}
echo "build done ($(( $(date +%s) - t0 )) s)" | tee -a "$LOG"

synth_pid=
if has bench && [[ ! -f /tmp/q14/config.json ]]; then  # synthesis runs on the CPUs while the tests use the GPU
  rm -rf /tmp/q14
  ( $B/trellis synth --like qwen3-14b --bits 3 --out /tmp/q14 >>"$OUT/synth.txt" 2>&1; echo "synth exit $?" >>"$OUT/synth.txt" ) &
  synth_pid=$!
fi
head_synth_pid=
if has head && [[ ! -f /tmp/q14h/config.json ]]; then
  rm -rf /tmp/q14h
  ( $B/trellis synth --like qwen3-14b --bits 3 --quantize-head --out /tmp/q14h >>"$OUT/synth_head.txt" 2>&1
    echo "synth (coded head) exit $?" >>"$OUT/synth_head.txt" ) &
  head_synth_pid=$!
fi
if has tests; then
  for t in "${tests[@]}"; do
    [[ -x $B/tests/cuda/$t ]] || continue
    timeout 120 $B/tests/cuda/$t --gtest_output=json:/tmp/$t.json 2>&1 | grep -vE "^\[ *(RUN|OK) *\]" | tee -a "$LOG" | tail -25
  done
  [[ -f /tmp/model_cuda_kl_test.json ]] && cp /tmp/model_cuda_kl_test.json "$OUT/h200_kl_gates.json"
  python3 - "$OUT/h200_model_tests.json" "${tests[@]/#//tmp/}" <<'PY'
import json, os, sys
out, parts = sys.argv[1], [p + ".json" for p in sys.argv[2:]]
docs = [json.load(open(p)) for p in parts if os.path.exists(p)]
merged = {k: sum(d.get(k, 0) for d in docs) for k in ("tests", "failures", "disabled", "errors")}
merged["testsuites"] = [s for d in docs for s in d["testsuites"]]
merged["binaries"] = [p.split("/")[-1][:-5] for p in parts if os.path.exists(p)]
merged["missing"] = [p.split("/")[-1][:-5] for p in parts if not os.path.exists(p)]
json.dump(merged, open(out, "w"), indent=1)
print("model tests:", merged["tests"], "tests,", merged["failures"], "failures; missing:", merged["missing"])
PY
fi
if has eval; then  # issue 6: the first validation window's PPL within 1% of transformers' 114.62
  for dev in cpu cuda; do
    timeout 120 $B/trellis eval -m models/shakespeare-qwen3-15m --ppl data/tinyshakespeare.txt -c 1025 \
      --max-windows 1 --device $dev --json >/tmp/eval_$dev.json 2>/tmp/eval_$dev.txt
    echo "eval $dev exit $?: $(grep Final /tmp/eval_$dev.txt)" | tee -a "$LOG"
  done
  python3 - "$OUT/h200_eval_ppl.json" <<'PY'
import json, sys
ref = json.load(open("models/shakespeare-qwen3-15m/reference.json"))["val_ppl_first_1024"]
doc = {"bench": "eval_ppl", "reference_ppl": ref, "bound": "within 1% of the reference (issue 6)",
       "command": "trellis eval -m models/shakespeare-qwen3-15m --ppl data/tinyshakespeare.txt -c 1025 "
                  "--max-windows 1 --device DEV --json"}
for dev in ("cpu", "cuda"):
    try:
        r = json.load(open(f"/tmp/eval_{dev}.json"))
        r["within_1pct"] = abs(r["ppl"] - ref) <= 0.01 * ref
    except Exception as e:
        r = {"error": f"{type(e).__name__}: {e}; stderr: " + open(f"/tmp/eval_{dev}.txt").read()[-2000:]}
    doc[dev] = r
json.dump(doc, open(sys.argv[1], "w"), indent=1)
print(json.dumps({d: doc[d].get("ppl", doc[d].get("error")) for d in ("cpu", "cuda")}))
PY
fi
if has bench; then
  [[ -n $synth_pid ]] && { wait "$synth_pid"; tail -3 "$OUT/synth.txt" | tee -a "$LOG"; }
  # No synthesis may share the CPUs with the timed runs.
  [[ -n $head_synth_pid ]] && { wait "$head_synth_pid"; tail -2 "$OUT/synth_head.txt" | tee -a "$LOG"; }
  write_prompt512
  export CUDA_MODULE_LOADING=EAGER  # kernels loaded at start, not inside the timed prompt
  for graphs in 1 0; do
    TRELLIS_CUDA_GRAPHS=$graphs run512 q14 --temp 0 >/dev/null 2>/tmp/run_$graphs.txt
    echo "graphs=$graphs exit $?: $(tail -1 /tmp/run_$graphs.txt)" | tee -a "$LOG"
  done
  # The same with graphs and without programmatic dependent launches (trellis/cuda/programmatic_launch.cuh).
  TRELLIS_PDL=0 run512 q14 --temp 0 >/dev/null 2>/tmp/run_nopdl.txt
  echo "graphs=1 TRELLIS_PDL=0 exit $?: $(tail -1 /tmp/run_nopdl.txt)" | tee -a "$LOG"
  # Sampled with trellis run's defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05): the largest 48 logits
  # come back (Backend::top_logits) and the host draws the token.
  run512 q14 --seed 1 >/dev/null 2>/tmp/run_sampled.txt
  echo "graphs=1 sampled exit $?: $(tail -1 /tmp/run_sampled.txt)" | tee -a "$LOG"
  python3 - "$OUT/h200_runtime.json" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, "bench")
from runtime_turns import gpu_info, run_stats
def stats(path):
    line = open(path).read().strip().splitlines()[-1]
    return run_stats(line) or {"error": line}
commit = os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
doc = {"bench": "runtime", **gpu_info(),
       "commit": commit or "unknown",
       "model": "trellis synth --like qwen3-14b --bits 3 (L=12, T=256, no rotation; bf16 embeddings and LM head)",
       "method": "trellis run --device cuda --temp 0 -n 256 on a 512-token prompt (tinyshakespeare), one run each; "
                 "tok/s as trellis run reports them (prompt: one batched forward; generation: decode steps incl. "
                 "sampling); graphs_on_sampled: --seed 1 (trellis run's default sampling) instead of --temp 0; "
                 "CUDA_MODULE_LOADING=EAGER",
       "graphs_on": stats("/tmp/run_1.txt"), "graphs_off": stats("/tmp/run_0.txt"),
       "graphs_on_no_programmatic_launch": stats("/tmp/run_nopdl.txt"),
       "graphs_on_sampled": stats("/tmp/run_sampled.txt"),
       "acceptance": {"generation_tok_s": 250, "prompt_tok_s": 5000}}
json.dump(doc, open(sys.argv[1], "w"), indent=1)
print(json.dumps(doc, indent=1))
PY
fi
if has norm_ab; then
  [[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "norm_ab: run the bench step first"; exit 1; }
  export CUDA_MODULE_LOADING=EAGER
  turn_fused() { TRELLIS_NORM_FUSION=1 run512 q14 --temp 0; }
  turn_launched() { TRELLIS_NORM_FUSION=0 run512 q14 --temp 0; }
  turns /tmp/norm_turns.txt "${NORM_AB_RUNS:-3}" fused launched
  python3 bench/runtime_turns.py /tmp/norm_turns.txt "$OUT/h200_runtime_norm_fusion.json" runtime_norm_fusion \
    "trellis run -m (trellis synth --like qwen3-14b --bits 3) --device cuda --temp 0 -n 256, 512-token prompt, \
CUDA graphs; TRELLIS_NORM_FUSION=1 and 0 taking turns" \
    "fused=TRELLIS_NORM_FUSION=1 (the default)" "launched=TRELLIS_NORM_FUSION=0" --same-output
fi
if has head; then
  [[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "head: run the bench step first"; exit 1; }
  # Without the bench step in this call the coded-head synthesis is still running.
  [[ -n $head_synth_pid ]] && ! has bench && { wait "$head_synth_pid"; tail -2 "$OUT/synth_head.txt" | tee -a "$LOG"; }
  [[ -f /tmp/q14h/config.json ]] || { echo "head: /tmp/q14h was not written"; tail -5 "$OUT/synth_head.txt"; exit 1; }
  export CUDA_MODULE_LOADING=EAGER
  turn_bf16_head() { run512 q14 --temp 0; }
  turn_coded_head() { run512 q14h --temp 0; }
  turns /tmp/head_turns.txt "${HEAD_RUNS:-3}" bf16_head coded_head
  python3 bench/runtime_turns.py /tmp/head_turns.txt "$OUT/h200_runtime_coded_head.json" runtime_coded_head \
    "trellis run --device cuda --temp 0 -n 256, 512-token prompt, CUDA graphs; the two models taking turns" \
    "bf16_head=trellis synth --like qwen3-14b --bits 3" \
    "coded_head=trellis synth --like qwen3-14b --bits 3 --quantize-head"
fi
if has sampled; then
  [[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "sampled: run the bench step first"; exit 1; }
  export CUDA_MODULE_LOADING=EAGER
  turn_greedy() { run512 q14 --temp 0; }
  turn_sampled() { run512 q14 --seed 1; }
  arms=(greedy sampled)
  arm_notes=()
  if [[ -n ${SAMPLED_BASE:-} ]]; then
    trap restore EXIT
    overlay "$SAMPLED_BASE"
    cmake --build $B -j 16 --target trellis >>"$LOG" 2>&1 && cp $B/trellis /tmp/trellis-sampled-base
    echo "sampled: base build ($SAMPLED_BASE) exit $?" | tee -a "$LOG"
    restore
    cmake --build $B -j 16 --target trellis >>"$LOG" 2>&1 || { echo "sampled: rebuild after the base failed"; exit 1; }
    turn_sampled_base() { TRELLIS_BIN=/tmp/trellis-sampled-base run512 q14 --seed 1; }
    arms+=(sampled_base)
    arm_notes=("sampled_base=--seed 1 on the build with $SAMPLED_BASE overlaid")
  fi
  turns /tmp/sampled_turns.txt "${SAMPLED_RUNS:-3}" "${arms[@]}"
  python3 bench/runtime_turns.py /tmp/sampled_turns.txt "$OUT/h200_runtime_sampled_ab.json" runtime_sampled_ab \
    "trellis run -m (trellis synth --like qwen3-14b --bits 3) --device cuda -n 256, 512-token prompt, CUDA graphs; \
${arms[*]} taking turns" \
    "greedy=--temp 0" "sampled=--seed 1 (trellis run's default sampling: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05)" \
    "${arm_notes[@]}"
fi
if has profile; then
  # Where a decode step's and the prompt's GPU time goes: every op timed by CUDA events (after a warm-up).
  [[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "profile: run the bench step first"; exit 1; }
  # 64 generated tokens: every op's events and the host's per-span bookkeeping make a profiled step slower.
  TRELLIS_PROFILE="$OUT/h200_runtime_profile.json" timeout 90 $B/trellis run -m /tmp/q14 --device cuda \
    -p "$(cat /tmp/prompt512.txt)" -n 64 --temp 0 >/tmp/profile_stdout.txt 2>"$OUT/runtime_profile.txt"
  echo "profile exit $? after $(wc -c </tmp/profile_stdout.txt) bytes of output" | tee -a "$LOG"
  python3 - "$OUT/h200_runtime_profile.json" "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
json.dump({"commit": sys.argv[2] or "unknown", **doc}, open(sys.argv[1], "w"), indent=1)
PY
  grep -A40 "^decode:" "$OUT/runtime_profile.txt" | head -45
fi
if has kernels; then
  [[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "kernels: run the bench step first"; exit 1; }
  # shellcheck disable=SC2086  # KERNELS_ARGS is a list of trellis run options
  TRELLIS_CUDA_GRAPHS=0 timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    $B/trellis run -m /tmp/q14 --device cuda -p "$(cat /tmp/prompt512.txt)" -n 4 ${KERNELS_ARGS:---temp 0} \
    >/tmp/ncu_step.csv 2>/tmp/ncu_step.err
  echo "kernels: ncu exit $?" | tee -a "$LOG"
  python3 bench/ncu_step_table.py /tmp/ncu_step.csv | tee "$OUT/${KERNELS_TABLE:-h200_decode_kernels.txt}" | head -20
fi
if has quality; then
  IFS=';' read -ra selections <<<"${QUALITY_SELECT:--L 16 -k 4 -r 0;-L 16 -k 4 -r 1;-L 16 -k 3 -r 1}"
  for sel in "${selections[@]}"; do
    # shellcheck disable=SC2086  # the selection is a list of options
    bench/quality_sweep.sh -b $B -d cuda $sel -w /tmp/quality -C "${COMMIT:-$(git rev-parse --short HEAD)}" -n \
      2>&1 | tee -a "$LOG" | grep -E "^k[0-9]"
  done
  (cd /tmp/quality && tar czf "$OUT/quality.tar.gz" ./*.json ./*.log ./*.commit ./*.nice)
fi
