#!/usr/bin/env bash
# Quality sweep of the fixture: quantize models/shakespeare-qwen3-15m at
# k bits and L state bits, with and without --rotate, and score each over
# the whole tinyshakespeare validation split in 512-token windows: PPL, and
# KLD / same top-1 against the bf16 model (whose log-probs are computed once
# and cached). Results merge into bench/results/quality_fixture.json (runs
# keyed by L, k, rotate; a rerun replaces its entry); then
# `bench/quality_table.py > docs/QUALITY.md`.
#
# usage: bench/quality_sweep.sh [-b BUILD_DIR] [-L "12 16"] [-k "2 3 4"] [-r "0 1"] [-w WORK_DIR]
#   WORK_DIR (default /tmp/trellis-quality) keeps the models and per-run
#   JSON; a run whose JSON exists there is not redone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/eval Ls="12" ks="2 3 4" rots="0 1" work=/tmp/trellis-quality
while getopts "b:L:k:r:w:" opt; do
  case $opt in
    b) build=$OPTARG ;; L) Ls=$OPTARG ;; k) ks=$OPTARG ;; r) rots=$OPTARG ;; w) work=$OPTARG ;;
    *) sed -n 10,12p "$0"; exit 2 ;;
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

for L in $Ls; do for k in $ks; do for r in $rots; do
  name=k${k}_L${L}$([ "$r" = 1 ] && echo _rot || true)
  [ -s "$work/$name.json" ] && continue
  "$bin" quantize --in "$fixture" --out "$work/$name" --bits "$k" --L "$L" $([ "$r" = 1 ] && echo --rotate) \
    --force > /dev/null
  "$bin" eval -m "$work/$name" --ppl "$text" -c $ctx --kl-ref-logits "$work/bf16_log_probs.safetensors" --json \
    > "$work/$name.eval.json"
  python3 - "$work/$name" "$k" "$L" "$r" > "$work/$name.json" <<'PY'
import json, os, sys
d, k, L, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
rep = json.load(open(d + "/quant_report.json"))["totals"]
ev = json.load(open(d + ".eval.json"))
print(json.dumps({"k": k, "L": L, "rotate": r, "bits_per_weight": rep["bits_per_weight"],
                  "rel_error": rep["rel_error"], "quantize_seconds": rep["seconds"],
                  "machine": {"cpu": cpu, "hardware_threads": os.cpu_count(), "note": "where the merge ran; each run names its own"}, "eval": ev}))
PY
  echo "$name: $(python3 -c "import json,sys; e=json.load(open('$work/$name.json'))['eval']; print(f\"PPL {e['ppl']:.2f}  KLD {e['kl']['mean_kld']:.4f}  same top {e['kl']['same_top']:.3f}\")")" >&2
done; done; done

python3 - "$root" "$work" "$bin" <<'PY'
import glob, json, os, platform, subprocess, sys
root, work, binary = sys.argv[1:4]
out = os.path.join(root, "bench", "results", "quality_fixture.json")
doc = json.load(open(out)) if os.path.exists(out) else {"runs": []}
runs = {(x["L"], x["k"], x["rotate"]): x for x in doc["runs"]}
for f in glob.glob(os.path.join(work, "k*_L*.json")):
    if f.endswith(".eval.json"):
        continue
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
print("wrote", out, file=sys.stderr)
PY
