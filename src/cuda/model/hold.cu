// The profiler's hold (profiler.hpp): one thread waits until `ns`
// nanoseconds have passed on the GPU's global timer, so the work queued
// behind it meets a busy stream and runs back to back once it ends.
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(uint64_t ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < ns) __nanosleep(1000);
}

}  // namespace

void launch_hold(uint64_t ns, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(ns);
  detail::check_launch("hold");
}

}  // namespace trellis::model::cuda
