// A launch's error as trellis::Error naming the kernel.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "trellis/error.hpp"

namespace trellis::model::cuda::detail {

inline void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + kernel + " launch: " + cudaGetErrorString(e));
}

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace trellis::model::cuda::detail
