# Sourced by the GPU-machine scripts (device.sh, runtime_device.sh,
# kernel_variants.sh): run from the repository root, results under $OUT, the
# CUDA tools on PATH, and `has STEP` true when STEP (or "all") was asked for on
# the command line. Also defines
#   use_model_sysroot   the full tree's CMake arguments in model_cmake_args:
#                       PCRE2, ICU and pkgconf from .carry/model-sysroot.tar.xz
#                       when it is there (bench/make_device_sysroot.sh builds it)
#   write_prompt512     the runtime benchmark's prompt, /tmp/prompt512.txt: the
#                       first 512 tokens of tinyshakespeare (fixture tokenizer)
#   prompt_run BIN MODEL N ARGS...  BIN's `run` on /tmp/MODEL with that prompt,
#                       N tokens generated, on CUDA, then ARGS (60 s at most)
#   build_kernel_tracer /tmp/libkernel_trace.so from bench/timeline/kernel_trace.cpp,
#                       against this machine's CUPTI (bench/timeline/run.sh)
#   turns LOG RUNS ARM...  runs the function turn_ARM of each ARM in turn, RUNS
#                       rounds, each run's stdout to /tmp/turn_ARM.out and its
#                       stderr to /tmp/turn_ARM.txt, and
#                       writes a line per run to LOG (and $LOG when set):
#                       "arm=ARM run R exit E: <the last line of its stderr>"
#                       (bench/runtime_turns.py reads them)
#   overlay DIR         copies DIR's files (a variant: replacement files at
#                       their paths in the repository) over the tree, keeping
#                       each original, and notes them in $B/.overlaid (the
#                       build directory's record of files a variant touched)
#   restore             puts the originals back (with a new modification
#                       time, so the next build recompiles what the variant
#                       changed) and removes the files a variant added
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/trellis-out}
mkdir -p "$OUT"
steps=${*:-all}
has() { [[ " $steps " == *" all "* || " $steps " == *" $1 "* ]]; }
export PATH=/usr/local/cuda/bin:$PATH

model_cmake_args=()
use_model_sysroot() {
  [[ -f .carry/model-sysroot.tar.xz ]] || return 0
  local sr=/tmp/trellis-sysroot
  mkdir -p "$sr" && tar xJf .carry/model-sysroot.tar.xz -C "$sr"
  export PKG_CONFIG_PATH="$sr/usr/lib/x86_64-linux-gnu/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$sr"
  export LD_LIBRARY_PATH="$sr/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  # FindICU does not search the multiarch directory when the compiler names none: name the library.
  model_cmake_args=(-DICU_ROOT="$sr/usr" -DICU_INCLUDE_DIR="$sr/usr/include"
                    -DICU_UC_LIBRARY_RELEASE="$sr/usr/lib/x86_64-linux-gnu/libicuuc.so"
                    -DPKG_CONFIG_EXECUTABLE="$sr/usr/bin/pkgconf")
}

write_prompt512() {
  python3 - <<'PY' >/tmp/prompt512.txt
from tokenizers import Tokenizer
t = Tokenizer.from_file("models/shakespeare-qwen3-15m/tokenizer.json")
text = open("data/tinyshakespeare.txt").read()[:20000]
print(t.decode(t.encode(text).ids[:512]), end="")
PY
}

prompt_run() {
  local bin=$1 model=$2 n=$3
  shift 3
  timeout 60 "$bin" run -m "/tmp/$model" --device cuda -p "$(cat /tmp/prompt512.txt)" -n "$n" "$@"
}

build_kernel_tracer() {
  local cuda header lib
  cuda=$(dirname "$(dirname "$(command -v nvcc)")")
  header=$(find "$cuda" /usr/local/cuda* -name cupti.h 2>/dev/null | head -1)
  lib=$(find "$cuda" /usr/local/cuda* -name 'libcupti.so*' 2>/dev/null | head -1)
  [[ -n $header && -n $lib ]] || { echo "no CUPTI under $cuda (cupti.h: '$header', libcupti: '$lib')"; return 1; }
  g++ -std=c++17 -O2 -shared -fPIC bench/timeline/kernel_trace.cpp -I"$(dirname "$header")" "$lib" \
    -Wl,-rpath,"$(dirname "$lib")" -o /tmp/libkernel_trace.so
}

turns() {
  local log=$1 runs=$2 r arm rc
  shift 2
  rm -f "$log"
  for ((r = 1; r <= runs; ++r)); do
    for arm; do
      "turn_$arm" >"/tmp/turn_$arm.out" 2>"/tmp/turn_$arm.txt"
      rc=$?
      echo "arm=$arm run $r exit $rc: $(tail -1 "/tmp/turn_$arm.txt")" | tee -a "$log" ${LOG:+"$LOG"}
    done
  done
}

overlay_saved=$(mktemp -d)
overlay() {
  local dir=$1 f
  while IFS= read -r f; do
    echo "$f" >>"$B/.overlaid"
    mkdir -p "$overlay_saved/$(dirname "$f")"
    if [[ -e $f ]]; then cp -p "$f" "$overlay_saved/$f"; else echo "$f" >>"$overlay_saved/.created"; fi
    mkdir -p "$(dirname "$f")" && cp "$dir/$f" "$f"
  done < <(cd "$dir" && find . -type f | sed 's|^\./||')
}
restore() {
  local f
  while IFS= read -r f; do cp "$overlay_saved/$f" "$f"; done < <(cd "$overlay_saved" && find . -type f ! -name .created | sed 's|^\./||')
  [[ -f $overlay_saved/.created ]] && xargs rm -f <"$overlay_saved/.created"
  rm -rf "$overlay_saved" && mkdir -p "$overlay_saved"
}
