# Sourced by the GPU-machine scripts (device.sh, runtime_device.sh): run from
# the repository root, results under $OUT, the CUDA tools on PATH, and
# `has STEP` true when STEP (or "all") was asked for on the command line.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/trellis-out}
mkdir -p "$OUT"
steps=${*:-all}
has() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }
export PATH=/usr/local/cuda/bin:$PATH
