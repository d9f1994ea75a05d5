// CUDA/cuBLAS status checks that throw trellis::Error naming the call.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "trellis/error.hpp"

namespace trellis::cuda::detail {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace trellis::cuda::detail
