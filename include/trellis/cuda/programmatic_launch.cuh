// Programmatic dependent launch (Hopper, compute capability 9.0+): a kernel
// launched with launch_programmatic may start while the kernel before it in
// the stream is still finishing, so its launch, block scheduling and any
// prologue that reads nothing the earlier kernel writes overlap that
// kernel's tail. The contract, for every kernel launched this way:
//   - it calls allow_dependent_grids() (the next kernel may be scheduled once
//     every block of this one has started) and wait_for_prerequisite_grids()
//     in every block, the wait before its first read of anything an earlier
//     kernel wrote and before its first global write (model weights, which
//     no kernel writes, may be loaded before it, and so may a decode step's
//     parameters, which a copy uploads before the step's first kernel);
//   - the wait returns when the previous kernel has completed and its writes
//     are visible; since that kernel waited on its own predecessor before it
//     could complete, every earlier kernel's writes are visible too.
// On devices below 9.0, or with TRELLIS_PDL=0 in the environment (for
// measurements), it is an ordinary launch and the two calls do nothing.
// Inside a captured CUDA graph the attribute becomes a programmatic edge.
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <utility>

namespace trellis::cuda {

__device__ __forceinline__ void wait_for_prerequisite_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches are programmatic in this process: the current device is
// compute capability 9.0+ and TRELLIS_PDL is not "0" (checked once).
inline bool programmatic_launches() {
  static const bool on = [] {
    const char* env = std::getenv("TRELLIS_PDL");
    if (env && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return on;
}

// kernel<<<grid, block, smem, stream>>>(args...), programmatic where
// programmatic_launches(); the launch error is left for cudaGetLastError.
template <typename... Params, typename... Args>
void launch_programmatic(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                         Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = programmatic_launches() ? 1 : 0;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace trellis::cuda
