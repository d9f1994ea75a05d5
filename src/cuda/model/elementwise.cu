// Elementwise fp32 ops of the forward pass (grid-stride, 256 threads):
//   add         x += y                               the residual adds
//   swiglu_f32  out = g / (1 + e^−g) · u              the MLP tail when gate and
//               up are not served by one fused trellis call (dense weights,
//               or different rotations); the CPU backend's fp32 formula
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

__global__ void swiglu_f32_kernel(const float* g, const float* u, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

}  // namespace

void launch_add(float* x, const float* y, int64_t n, cudaStream_t stream) {
  add_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(x, y, n);
  check_launch("add");
}

void launch_swiglu_f32(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  swiglu_f32_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(gate, up, n, out);
  check_launch("swiglu_f32");
}

}  // namespace trellis::model::cuda
