#!/usr/bin/env bash
# Installs the Debian packages the build needs. Idempotent: quiet and fast
# when everything is already installed. Needs root (or sudo) only to install.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config   # the build
  clang libclang-rt-14-dev           # the libFuzzer target (fuzz preset)
  nlohmann-json3-dev                 # JSON: safetensors headers, config.json, tokenizer.json, results
  libcli11-dev                       # command-line parsing of the trellis verbs
  libfmt-dev                         # formatting of tables and messages
  libpcre2-dev                       # the tokenizer's pre-tokenizer regex
  libicu-dev                         # the tokenizer's Unicode normalizers (NFC, NFKC, ...)
  libcpp-httplib-dev                 # the OpenAI-compatible HTTP server
  libgtest-dev                       # unit tests
  libbenchmark-dev                   # CPU micro-benchmarks
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
