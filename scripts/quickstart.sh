#!/usr/bin/env bash
# Builds trellis (installing what the build needs) and runs the main job on
# the small model the repo ships.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh
cmake --preset release >/dev/null
cmake --build --preset release --target trellis -j "$jobs"
./build/release/trellis run -p "ROMEO:" -n 64
