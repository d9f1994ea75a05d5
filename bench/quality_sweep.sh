#!/usr/bin/env bash
# Quality sweep of the fixture: quantize models/shakespeare-qwen3-15m at
# k bits and L state bits, with and without --rotate, and score each over
# the whole tinyshakespeare validation split in 512-token windows: PPL, and
# KLD / same top-1 against the bf16 model (whose log-probs are computed once
# and cached). Results merge into bench/results/quality_fixture.json (runs
# keyed by L, k, rotate; the configurations selected by -L/-k/-r replace
# their entries, every other entry is kept as it is); then
# `bench/quality_table.py > docs/QUALITY.md`.
#
# usage: bench/quality_sweep.sh [-b BUILD_DIR] [-L "12 16"] [-k "2 3 4"] [-r "0 1"] [-d cpu|cuda] [-w WORK_DIR] [-C COMMIT] [-n]
#   -b  build directory holding the trellis binary (default build/eval)
#   -L  trellis state bits to sweep (default "12 16"; L = 16 costs ~20x L = 12's
#       CPU time: ~13 CPU-minutes of quantization per configuration at k = 2)
#   -k  bits per weight (default "2 3 4");  -r  rotate off/on (default "0 1")
#   -d  the device that quantizes (trellis quantize --device; default cpu);
#       the scoring always runs on the CPU backend
#   -w  WORK_DIR (default /tmp/trellis-quality) keeps the models and per-run
#       JSON; a run whose JSON exists there is not redone (delete it to redo)
#   -C  the commit BUILD_DIR's binary was built from, recorded in each new run
#       (default: the checkout when the run is recorded, git describe --dirty)
#   -n  do not merge into bench/results/quality_fixture.json
# Quantize and eval run one at a time; run the sweep under `nice -n 19` on a
# shared machine. Each run records its wall and CPU seconds, the commit
# (-C), the binary's build time, and the machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/eval Ls="12 16" ks="2 3 4" rots="0 1" work=/tmp/trellis-quality merge=1 commit= qdev=cpu
usage() { sed -n 11,25p "$0" | sed 's/^# \{0,1\}//'; }
while getopts "b:L:k:r:d:w:C:nh" opt; do
  case $opt in
    b) build=$OPTARG ;; L) Ls=$OPTARG ;; k) ks=$OPTARG ;; r) rots=$OPTARG ;; d) qdev=$OPTARG ;; w) work=$OPTARG ;; C) commit=$OPTARG ;; n) merge=0 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
bin=$build/trellis
fixture=$root/models/shakespeare-qwen3-15m
text=$root/data/tinyshakespeare.txt
ctx=512
mkdir -p "$work"
[ -x "$bin" ] || { echo "no trellis binary at $bin (build it, or pass -b)" >&2; exit 1; }

# The bf16 reference: its own PPL, and its log-probs for every KL run.
if [ ! -s "$work/bf16.json" ] || [ ! -s "$work/bf16_log_probs.safetensors" ]; then
  "$bin" eval -m "$fixture" --ppl "$text" -c $ctx --save-logits "$work/bf16_log_probs.safetensors" --json \
    > "$work/bf16.json"
fi

selected=()
for L in $Ls; do for k in $ks; do for r in $rots; do
  name=k${k}_L${L}$([ "$r" = 1 ] && echo _rot || true)
  selected+=("$work/$name.json")
  [ -s "$work/$name.json" ] && { echo "$name: cached ($work/$name.json)" >&2; continue; }
  # each step's log ends with its wall, user and system seconds (bash's time keyword); a step whose
  # outputs are complete in WORK_DIR (an interrupted run) is not redone
  TIMEFORMAT="%R %U %S"
  if [ -s "$work/$name/quant_report.json" ] && [ -s "$work/$name.quantize.log" ]; then
    echo "$name: quantized already ($work/$name)" >&2
  else
    echo "$name: quantizing ($(date -u +%H:%M:%S))" >&2
    nice > "$work/$name.nice"
    { time "$bin" quantize --in "$fixture" --out "$work/$name" --bits "$k" --L "$L" $([ "$r" = 1 ] && echo --rotate) \
        --device "$qdev" --force > /dev/null ; } 2> "$work/$name.quantize.log"
  fi
  if python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$work/$name.eval.json" 2>/dev/null; then
    echo "$name: evaluated already ($work/$name.eval.json)" >&2
  else
    echo "$name: evaluating ($(date -u +%H:%M:%S))" >&2
    { time "$bin" eval -m "$work/$name" --ppl "$text" -c $ctx --kl-ref-logits "$work/bf16_log_probs.safetensors" --json \
        > "$work/$name.eval.json" ; } 2> "$work/$name.eval.log"
  fi
  # provenance: -C, else the checkout now (+dirty: uncommitted changes to tracked files)
  if [ -n "$commit" ]; then echo "$commit"; else git -C "$root" describe --always --abbrev=7 --dirty=+dirty 2>/dev/null || echo "?"; fi \
    > "$work/$name.commit"
  python3 - "$work/$name" "$k" "$L" "$r" "$root" "$bin" "$qdev" <<'PY' > "$work/$name.json"
import datetime, json, os, sys
d, k, L, r, root, binary, qdev = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6], sys.argv[7]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
rep = json.load(open(d + "/quant_report.json"))["totals"]
ev = json.load(open(d + ".eval.json"))
wall, user, sys_ = (float(x) for x in open(d + ".quantize.log").read().split()[-3:])
commit = open(d + ".commit").read().strip()
binary_built = datetime.datetime.fromtimestamp(os.path.getmtime(binary), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"k": k, "L": L, "rotate": r, "bits_per_weight": rep["bits_per_weight"],
                  "rel_error": rep["rel_error"], "quantize_seconds": rep["seconds"], "quantize_device": qdev,
                  "quantize_cpu_seconds": user + sys_,
                  "quantize_weights_per_cpu_s": rep["coded_weights"] / (user + sys_),
                  "commit": commit, "binary_built": binary_built, "niceness": int(open(d + ".nice").read()) if os.path.exists(d + ".nice") else os.nice(0),
                  "machine": {"cpu": cpu, "hardware_threads": os.cpu_count()}, "eval": ev}))
PY
  echo "$name: $(python3 -c "import json,sys; x=json.load(open('$work/$name.json')); e=x['eval']; print(f\"PPL {e['ppl']:.2f}  KLD {e['kl']['mean_kld']:.4f}  same top {e['kl']['same_top']:.3f}  quantize {x['quantize_seconds']:.0f} s ({x['quantize_cpu_seconds']:.0f} CPU s)  eval {e['seconds']:.0f} s\")")" >&2
done; done; done

[ "$merge" = 1 ] || exit 0
python3 - "$root" "$work" "${selected[@]}" <<'PY'
import json, os, platform, subprocess, sys
root, work, files = sys.argv[1], sys.argv[2], sys.argv[3:]
out = os.path.join(root, "bench", "results", "quality_fixture.json")
doc = json.load(open(out)) if os.path.exists(out) else {"runs": []}
runs = {(x["L"], x["k"], x["rotate"]): x for x in doc["runs"]}
for f in files:
    x = json.load(open(f))
    runs[(x["L"], x["k"], x["rotate"])] = x
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
doc.update({
    "bench": "quality_sweep",
    "commit": commit,
    "machine": {"cpu": cpu, "hardware_threads": os.cpu_count(), "note": "where the merge ran; each run names its own"},
    "model": "models/shakespeare-qwen3-15m",
    "text": "data/tinyshakespeare.txt, validation split (bytes [1003854, end))",
    "settings": {"context": 512, "windows": "non-overlapping, all 511 predictions of each",
                 "reference": "the bf16 model's log-probs (fp32), cached", "quantize": "trellis quantize, 28 decoder linears, lm_head bf16"},
    "bf16": json.load(open(os.path.join(work, "bf16.json"))),
    "runs": [runs[key] for key in sorted(runs)],
})
json.dump(doc, open(out, "w"), indent=1)
print("wrote", out, f"({len(files)} runs merged, {len(runs)} in all)", file=sys.stderr)
PY
