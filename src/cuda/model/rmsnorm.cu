// RMSNorm over groups of n consecutive elements (n = hidden: the layer norms;
// n = head_dim: Qwen3's per-head QK-norm), the CPU backend's arithmetic:
//   scale = fp32(1 / sqrt(Σ x² / n + eps))  (sum and root in fp64)
//   out   = (x · scale) · w                 (fp32, no contraction)
// May run in place (out == x): each thread reads its elements before writing
// them. Launch: one block per group, about one thread per 4 elements (32 to
// 1024): a decode step's layer norm is one group of 5120, and one 128-thread
// block spent ≈ 20 µs there, each thread waiting on 40 loads in turn
// (bench/results/h200_runtime_profile.txt).
#include <algorithm>

#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kMaxThreads = 1024;

// blockDim.x: a multiple of 32, at most kMaxThreads.
__global__ void rmsnorm_kernel(const float* x, int n, const float* w, float eps, float* out) {
  __shared__ double warp_sums[kMaxThreads / 32];
  const int threads = int(blockDim.x);
  const float* in = x + int64_t(blockIdx.x) * n;
  float* o = out + int64_t(blockIdx.x) * n;
  double ss = 0;
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) ss += double(in[i]) * double(in[i]);
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  double total = 0;
  for (int i = 0; i < threads / 32; ++i) total += warp_sums[i];
  const float scale = float(1.0 / sqrt(total / double(n) + double(eps)));
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) o[i] = __fmul_rn(__fmul_rn(in[i], scale), w[i]);
}

}  // namespace

void launch_rmsnorm(const float* x, int64_t groups, int n, const float* w, float eps, float* out, cudaStream_t stream) {
  if (groups <= 0) return;
  const int threads = std::min(kMaxThreads, std::max(32, (n / 4 + 31) / 32 * 32));
  rmsnorm_kernel<<<unsigned(groups), unsigned(threads), 0, stream>>>(x, n, w, eps, out);
  check_launch("rmsnorm");
}

}  // namespace trellis::model::cuda
