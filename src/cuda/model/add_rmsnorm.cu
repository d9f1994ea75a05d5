// The residual add and the RMSNorm after it in one pass (the forward's
// add_rmsnorm; the CPU backend's add then rmsnorm, arithmetic for arithmetic),
// over groups of n consecutive elements:
//   x     = x + y                           (fp32, stored: the residual stream)
//   scale = fp32(1 / sqrt(Σ x² / n + eps))  (sum and root in fp64)
//   out   = (x · scale) · w                 (fp32, no contraction)
// out must not alias x or y. Each thread re-reads only the elements of x it
// wrote. Launch: one block per group, norm_threads(n) threads
// (norm_reduce.cuh); allocates nothing (CUDA-graph capturable).
#include "device_math.cuh"
#include "launch_check.hpp"
#include "norm_reduce.cuh"

namespace trellis::model::cuda {
namespace {

using namespace detail;

__global__ void add_rmsnorm_kernel(float* x, const float* y, int n, const float* w, float eps, float* out) {
  const int threads = int(blockDim.x);
  const int64_t base = int64_t(blockIdx.x) * n;
  float* r = x + base;
  const float* d = y + base;
  float* o = out + base;
  double ss = 0;
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) {
    const float v = __fadd_rn(r[i], d[i]);
    r[i] = v;
    ss += double(v) * double(v);
  }
  const double total = block_sum(ss);
  const float scale = float(1.0 / sqrt(total / double(n) + double(eps)));
#pragma unroll 4
  for (int i = threadIdx.x; i < n; i += threads) o[i] = __fmul_rn(__fmul_rn(r[i], scale), w[i]);
}

}  // namespace

void launch_add_rmsnorm(float* x, const float* y, int64_t groups, int n, const float* w, float eps, float* out,
                        cudaStream_t stream) {
  if (groups <= 0) return;
  add_rmsnorm_kernel<<<unsigned(groups), unsigned(norm_threads(n)), 0, stream>>>(x, y, n, w, eps, out);
  check_launch("add_rmsnorm");
}

}  // namespace trellis::model::cuda
