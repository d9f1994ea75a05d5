// The activation side of the Hadamard rotation (SPEC §5; the CPU backend's
// rotate_rows / unrotate_rows in src/codec/rotation.cpp, mirrored step for
// step so the fp32 results are the same):
//   rotate_to_bf16   axis 1, input side:  y = bf16(H_T (s ⊙ x)) per T-block
//   unrotate_to_f32  axis 0, output side: out = s ⊙ (H_T float(y)) per T-block
// H_T = (1/√T)·Walsh–Hadamard: log2(T) butterfly stages (a, b) ← (a + b, a − b)
// at distance 1, 2, …, T/2 (butterflies.cuh), then each element times fp32(1/√T).
// Launch: one block of T/2 threads per (row, T-block), the block in shared memory.
#include <cmath>
#include <string>

#include "butterflies.cuh"
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void rotate_to_bf16_kernel(const float* x, const int8_t* signs, int64_t cols, int T, float norm,
                                      uint16_t* y) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  extern __shared__ float b[];
  const int64_t base = blockIdx.y * cols + int64_t(blockIdx.x) * T;
  const int64_t col0 = int64_t(blockIdx.x) * T;
  for (int i = threadIdx.x; i < T; i += blockDim.x) b[i] = x[base + i] * float(signs[col0 + i]);
  hadamard_butterflies(b, T, T);
  for (int i = threadIdx.x; i < T; i += blockDim.x) y[base + i] = float_to_bf16_bits(b[i] * norm);
}

__global__ void unrotate_to_f32_kernel(const uint16_t* y, const int8_t* signs, int64_t cols, int T, float norm,
                                       float* out) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  extern __shared__ float b[];
  const int64_t base = blockIdx.y * cols + int64_t(blockIdx.x) * T;
  const int64_t col0 = int64_t(blockIdx.x) * T;
  for (int i = threadIdx.x; i < T; i += blockDim.x) b[i] = bf16_bits_to_float(y[base + i]);
  hadamard_butterflies(b, T, T);
  for (int i = threadIdx.x; i < T; i += blockDim.x) out[base + i] = (b[i] * norm) * float(signs[col0 + i]);
}

void check_shape(int64_t rows, int64_t cols, int T) {
  if (T < 2 || T > 1024 || (T & (T - 1)) != 0 || cols % T != 0 || rows > 65535)
    throw Error("cuda backend: hadamard rotation of " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                " in blocks of " + std::to_string(T) + " (T a power of two in 2..1024 dividing the row, <= 65535 rows)");
}

float norm_of(int T) { return float(1.0 / std::sqrt(double(T))); }

}  // namespace

void launch_rotate_to_bf16(const float* x, const int8_t* signs, int64_t rows, int64_t cols, int T, uint16_t* y,
                           cudaStream_t stream) {
  check_shape(rows, cols, T);
  const dim3 grid(unsigned(cols / T), unsigned(rows));
  launch_programmatic(rotate_to_bf16_kernel, grid, T / 2, T * sizeof(float), stream, x, signs, cols, T, norm_of(T), y);
  check_launch("rotate_to_bf16");
}

void launch_unrotate_to_f32(const uint16_t* y, const int8_t* signs, int64_t rows, int64_t cols, int T, float* out,
                            cudaStream_t stream) {
  check_shape(rows, cols, T);
  const dim3 grid(unsigned(cols / T), unsigned(rows));
  launch_programmatic(unrotate_to_f32_kernel, grid, T / 2, T * sizeof(float), stream, y, signs, cols, T, norm_of(T),
                      out);
  check_launch("unrotate_to_f32");
}

}  // namespace trellis::model::cuda
