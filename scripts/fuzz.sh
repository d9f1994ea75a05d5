#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: runs every libFuzzer target of the fuzz build
# (cmake --preset fuzz && cmake --build --preset fuzz) for SECONDS each
# (default 60), seeded from the committed fuzz/corpus/<target>/ (read only;
# new inputs go to build/fuzz/work/<target>/). Fails on any finding: a
# crash, sanitizer report, leak or timeout, whose input is kept under
# build/fuzz/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${TRELLIS_FUZZ_BUILD:-build/fuzz}"

for target in fuzz_safetensors_header fuzz_model_config; do
  bin="$build/fuzz/$target"
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not built (cmake --preset fuzz && cmake --build --preset fuzz)" >&2
    exit 1
  fi
  work="$build/work/$target"
  findings="$build/findings/$target"
  log="$build/$target.log"
  rm -rf "$work" "$findings"
  mkdir -p "$work" "$findings"
  echo "fuzz: $target for ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$findings/" -print_final_stats=1 "$work" "fuzz/corpus/$target" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED; input kept in $findings/, full log in $log" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units" "$log" | sed "s|^stat::number_of_executed_units:|fuzz: $target: runs|" || true
done
echo "fuzz: no findings"
