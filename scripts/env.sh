# Sourced by the scripts: puts a CUDA toolkit in /usr/local/cuda on PATH when
# one is there, so CMake finds nvcc and builds the CUDA backend.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
jobs=$(nproc)
