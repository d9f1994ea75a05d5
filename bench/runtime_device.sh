#!/usr/bin/env bash
# One GPU call for the CUDA model runtime (issue 5): build the whole tree in
# build/device-model (PCRE2, ICU and pkgconf from .carry/model-sysroot.tar.xz
# when the machine lacks them), run the CUDA model tests (one merged gtest
# JSON), write `trellis synth --like qwen3-14b --bits 3` to /tmp/q14 and
# measure `trellis run --device cuda` on a 512-token prompt with 256 tokens
# generated (greedy), CUDA graphs on and off. Results: $OUT/h200_runtime.json,
# $OUT/h200_model_tests.json, $OUT/runtime_log.txt.
#   bench/runtime_device.sh [tests|bench|all]...   (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/trellis-out}
mkdir -p "$OUT"
steps=${*:-all}
has() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }
export PATH=/usr/local/cuda/bin:$PATH
LOG="$OUT/runtime_log.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee -a "$LOG"

extra=()
if [[ -f .carry/model-sysroot.tar.xz ]]; then
  SR=/tmp/trellis-sysroot
  mkdir -p "$SR" && tar xJf .carry/model-sysroot.tar.xz -C "$SR"
  export PKG_CONFIG_PATH="$SR/usr/lib/x86_64-linux-gnu/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$SR"
  export LD_LIBRARY_PATH="$SR/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  # FindICU does not search the multiarch directory when the compiler names none: name the library.
  extra=(-DICU_ROOT="$SR/usr" -DICU_INCLUDE_DIR="$SR/usr/include"
         -DICU_UC_LIBRARY_RELEASE="$SR/usr/lib/x86_64-linux-gnu/libicuuc.so" -DPKG_CONFIG_EXECUTABLE="$SR/usr/bin/pkgconf")
fi
B=build/device-model
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >>"$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
cmake --build $B -j 16 --target trellis model_cuda_parity_test model_cuda_trellis_test model_cuda_ops_test -- -k 0 \
  >>"$LOG" 2>&1 || grep -E "error|FAILED" "$LOG" | head -30
[[ -x $B/trellis ]] || exit 1
echo "build done ($(( $(date +%s) - t0 )) s)" | tee -a "$LOG"

if has bench; then  # synthesis runs on the CPUs while the tests use the GPU
  rm -rf /tmp/q14
  ( $B/trellis synth --like qwen3-14b --bits 3 --out /tmp/q14 >>"$OUT/synth.txt" 2>&1; echo "synth exit $?" >>"$OUT/synth.txt" ) &
  synth_pid=$!
fi
if has tests; then
  for t in model_cuda_ops_test model_cuda_parity_test model_cuda_trellis_test; do
    [[ -x $B/tests/cuda/$t ]] || continue
    timeout 90 $B/tests/cuda/$t --gtest_output=json:/tmp/$t.json 2>&1 | grep -vE "^\[ *(RUN|OK) *\]" | tee -a "$LOG" | tail -25
  done
  python3 - "$OUT/h200_model_tests.json" /tmp/model_cuda_{ops,parity,trellis}_test.json <<'PY'
import json, sys
out, parts = sys.argv[1], sys.argv[2:]
import os
docs = [json.load(open(p)) for p in parts if os.path.exists(p)]
merged = {k: sum(d.get(k, 0) for d in docs) for k in ("tests", "failures", "disabled", "errors")}
merged["testsuites"] = [s for d in docs for s in d["testsuites"]]
merged["binaries"] = [p.split("/")[-1][:-5] for p in parts]
json.dump(merged, open(out, "w"), indent=1)
print("model tests:", merged["tests"], "tests,", merged["failures"], "failures")
PY
fi
if has bench; then
  wait "$synth_pid"; cat "$OUT/synth.txt" | tail -3 | tee -a "$LOG"
  python3 - <<'PY' >/tmp/prompt512.txt
from tokenizers import Tokenizer
t = Tokenizer.from_file("models/shakespeare-qwen3-15m/tokenizer.json")
text = open("data/tinyshakespeare.txt").read()[:20000]
print(t.decode(t.encode(text).ids[:512]), end="")
PY
  export CUDA_MODULE_LOADING=EAGER  # kernels loaded at start, not inside the timed prompt
  for graphs in 1 0; do
    TRELLIS_CUDA_GRAPHS=$graphs timeout 60 $B/trellis run -m /tmp/q14 --device cuda -p "$(cat /tmp/prompt512.txt)" -n 256 --temp 0 \
      >/dev/null 2>/tmp/run_$graphs.txt
    echo "graphs=$graphs exit $?: $(tail -1 /tmp/run_$graphs.txt)" | tee -a "$LOG"
  done
  python3 - "$OUT/h200_runtime.json" <<'PY'
import json, re, subprocess, sys
def stats(path):
    line = open(path).read().strip().splitlines()[-1]
    m = re.search(r"prompt: (\d+) tokens, ([\d.]+) tok/s \| generation: (\d+) tokens, ([\d.]+) tok/s \| (.*)", line)
    if not m: return {"error": line}
    return {"prompt_tokens": int(m[1]), "prompt_tok_s": float(m[2]), "generated_tokens": int(m[3]),
            "generation_tok_s": float(m[4]), "backend": m[5]}
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.mem",
                      "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().split(", ")
import os; commit = os.environ.get("COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
doc = {"bench": "runtime", "gpu": smi[0], "driver": smi[1], "max_sm_clock": smi[2], "mem_clock": smi[3],
       "commit": commit or "unknown",
       "model": "trellis synth --like qwen3-14b --bits 3 (L=12, T=256, no rotation; bf16 embeddings and LM head)",
       "method": "trellis run --device cuda --temp 0 -n 256 on a 512-token prompt (tinyshakespeare), one run each; "
                 "tok/s as trellis run reports them (prompt: one batched forward; generation: decode steps incl. "
                 "sampling); CUDA_MODULE_LOADING=EAGER",
       "graphs_on": stats("/tmp/run_1.txt"), "graphs_off": stats("/tmp/run_0.txt"),
       "acceptance": {"generation_tok_s": 250, "prompt_tok_s": 5000}}
json.dump(doc, open(sys.argv[1], "w"), indent=1)
print(json.dumps(doc, indent=1))
PY
fi
