// Rotate-half RoPE in place (HF Llama/Qwen; the CPU backend's arithmetic):
// row m is at position p = pos0 + m; in every head of d = 2·half elements,
// for i < half, the pair (x_i, x_{i+half}) turns by fp32(p)·f_i
// (rope_angle / rope_rotate, device_math.cuh).
// pos0 comes from Pos (device memory for graph replays). One thread per
// (row, head, i), grid-stride.
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void rope_kernel(float* x, int64_t rows, int64_t cols, const float* f, int half, Pos pos) {
  const int64_t heads = cols / (2 * half), n = rows * heads * half;
  const int pos0 = read_pos(pos);
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int i = int(e % half);
    const int64_t h = (e / half) % heads, m = e / (half * heads);
    float* v = x + m * cols + h * 2 * half;
    rope_rotate(v[i], v[i + half], rope_angle(float(pos0 + m), f[i]));
  }
}

}  // namespace

void launch_rope(float* x, int64_t rows, int64_t cols, const float* inv_freq, int half, Pos pos, cudaStream_t stream) {
  const int64_t n = rows * (cols / 2);
  rope_kernel<<<elementwise_blocks(n), 256, 0, stream>>>(x, rows, cols, inv_freq, half, pos);
  check_launch("rope");
}

}  // namespace trellis::model::cuda
