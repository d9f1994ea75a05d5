// RMSNorm over groups of n consecutive elements (n = hidden: the layer norms;
// n = head_dim: Qwen3's per-head QK-norm), the CPU backend's arithmetic:
//   scale = fp32(1 / sqrt(Σ x² / n + eps))  (sum and root in fp64)
//   out   = (x · scale) · w                 (fp32, no contraction)
// May run in place (out == x): each thread reads its elements before writing
// them. Launch: one block per group, norm_threads(n) threads (norm_reduce.cuh).
#include "device_math.cuh"
#include "launch_check.hpp"
#include "norm_reduce.cuh"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void rmsnorm_kernel(const float* x, int n, const float* w, float eps, float* out) {
  allow_dependent_grids();
  wait_for_prerequisite_grids();  // programmatic launch: before any global access
  const int threads = int(blockDim.x);
  const float* in = x + int64_t(blockIdx.x) * n;
  float* o = out + int64_t(blockIdx.x) * n;
  double ss = 0;
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) ss += double(in[i]) * double(in[i]);
  const float scale = rms_scale(ss, n, eps);
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) o[i] = __fmul_rn(__fmul_rn(in[i], scale), w[i]);
}

}  // namespace

void launch_rmsnorm(const float* x, int64_t groups, int n, const float* w, float eps, float* out, cudaStream_t stream) {
  if (groups <= 0) return;
  launch_programmatic(rmsnorm_kernel, unsigned(groups), unsigned(norm_threads(n)), 0, stream, x, n, w, eps, out);
  check_launch("rmsnorm");
}

}  // namespace trellis::model::cuda
