// RMSNorm over groups of n consecutive elements (n = hidden: the layer norms;
// n = head_dim: Qwen3's per-head QK-norm), the CPU backend's arithmetic:
//   scale = fp32(1 / sqrt(Σ x² / n + eps))  (sum and root in fp64)
//   out   = (x · scale) · w                 (fp32, no contraction)
// May run in place (out == x): each thread reads its elements before writing
// them. Launch: one block of 128 threads per group.
#include "device_math.cuh"
#include "launch_check.hpp"

namespace trellis::model::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 128;

__global__ void rmsnorm_kernel(const float* x, int n, const float* w, float eps, float* out) {
  __shared__ double warp_sums[kThreads / 32];
  const float* in = x + int64_t(blockIdx.x) * n;
  float* o = out + int64_t(blockIdx.x) * n;
  double ss = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) ss += double(in[i]) * double(in[i]);
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  double total = 0;
  for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  const float scale = float(1.0 / sqrt(total / double(n) + double(eps)));
  for (int i = threadIdx.x; i < n; i += kThreads) o[i] = __fmul_rn(__fmul_rn(in[i], scale), w[i]);
}

}  // namespace

void launch_rmsnorm(const float* x, int64_t groups, int n, const float* w, float eps, float* out, cudaStream_t stream) {
  if (groups <= 0) return;
  rmsnorm_kernel<<<unsigned(groups), kThreads, 0, stream>>>(x, n, w, eps, out);
  check_launch("rmsnorm");
}

}  // namespace trellis::model::cuda
