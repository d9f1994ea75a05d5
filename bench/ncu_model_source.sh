#!/usr/bin/env bash
# Where the decode step's small kernels' warps wait, instruction by
# instruction: Nsight Compute's SourceCounters for one decode-step launch each
# of the residual norm, qk_norm_rope and the attention combine, in `trellis
# run --device cuda` on the synthetic Qwen3-14B (eager steps), exported as
# CSV ($OUT/ncu_model_source_KERNEL.csv) plus the WarpStateStats summary
# ($OUT/ncu_model_source.txt); bench/ncu_source_table.py summarises a CSV.
# The warp-state sampling interval is the shortest (32 cycles): at ncu's
# default a 6 us norm gave 5 samples (bench/results/h200_norm_weights_experiment.txt).
# Needs bench/runtime_device.sh's build and its bench step (/tmp/q14, the prompt),
# or kernel_variants.sh RUNTIME=1's (TRELLIS=/tmp/variant-bins/base).
#   bench/ncu_model_source.sh
set -uo pipefail
source "$(dirname "$0")/device_steps.sh" none
use_model_sysroot  # the build links the sysroot's ICU and PCRE2
B=${DEVICE_BUILD:-build/device-model}
TRELLIS=${TRELLIS:-$B/trellis}
[[ -f /tmp/prompt512.txt && -f /tmp/q14/config.json ]] || { echo "run bench/runtime_device.sh bench first"; exit 1; }
# kernel:launches to skip — past the 512-token prompt's (80 norms, 40 qk_norm_rope, no combine) into decode step 2.
for spec in add_rmsnorm:200 qk_norm_rope:90 attention_combine:45; do
  kernel=${spec%%:*} skip=${spec#*:}
  TRELLIS_CUDA_GRAPHS=0 timeout 120 ncu --clock-control none -k regex:"$kernel" --launch-skip "$skip" --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --sampling-interval 0 \
    -f -o "/tmp/model_src_$kernel" \
    "$TRELLIS" run -m /tmp/q14 --device cuda -p "$(cat /tmp/prompt512.txt)" -n 4 --temp 0 \
    >/dev/null 2>>"$OUT/ncu_model_source.txt"
  ncu --import "/tmp/model_src_$kernel.ncu-rep" --print-summary none >>"$OUT/ncu_model_source.txt" 2>&1
  ncu --import "/tmp/model_src_$kernel.ncu-rep" --page source --csv --print-source sass \
    >"$OUT/ncu_model_source_$kernel.csv" 2>>"$OUT/ncu_model_source.txt"
  echo "$kernel: $(wc -l <"$OUT/ncu_model_source_$kernel.csv") source rows"
done
