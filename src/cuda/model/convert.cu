// bf16 <-> fp32 conversions of activation matrices (n elements, elementwise,
// grid-stride, 256 threads per block):
//   f32_to_bf16   y = bf16_rne(x)                 the trellis kernels' input
//   bf16_to_f32   y = float(x)                    exact
//   split_bf16    hi = bf16_rne(x), lo = bf16_rne(x − hi): x = hi + lo to
//                 ~2^-17 relative, so a bf16 GEMM over both (fp32 accumulate)
//                 multiplies fp32 activations by bf16 weights at fp32 accuracy
//   add_halves    out = a + b                     the two partial products
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void f32_to_bf16_kernel(const float* x, uint16_t* y, int64_t n) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = float_to_bf16_bits(x[i]);
}

__global__ void bf16_to_f32_kernel(const uint16_t* x, float* y, int64_t n) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bf16_bits_to_float(x[i]);
}

__global__ void split_bf16_kernel(const float* x, int64_t n, uint16_t* hi, uint16_t* lo) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint16_t h = float_to_bf16_bits(x[i]);
    hi[i] = h;
    lo[i] = float_to_bf16_bits(x[i] - bf16_bits_to_float(h));
  }
}

__global__ void add_halves_kernel(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

}  // namespace

void launch_f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream) {
  launch_programmatic(f32_to_bf16_kernel, elementwise_blocks(n), 256, 0, stream, x, y, n);
  check_launch("f32_to_bf16");
}

void launch_bf16_to_f32(const uint16_t* x, float* y, int64_t n, cudaStream_t stream) {
  launch_programmatic(bf16_to_f32_kernel, elementwise_blocks(n), 256, 0, stream, x, y, n);
  check_launch("bf16_to_f32");
}

void launch_split_bf16(const float* x, int64_t n, uint16_t* hi, uint16_t* lo, cudaStream_t stream) {
  split_bf16_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(x, n, hi, lo);
  check_launch("split_bf16");
}

void launch_add_halves(const float* a, const float* b, int64_t n, float* out, cudaStream_t stream) {
  add_halves_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(a, b, n, out);
  check_launch("add_halves");
}

}  // namespace trellis::model::cuda
