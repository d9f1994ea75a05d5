// Context scratch (trellis_ops.hpp): the split-K counters read back zero on
// the context's own stream as soon as they grow, on a non-blocking stream and
// over memory that held other bytes just before. The kernels add into them
// without clearing first, so a zeroing not ordered before the stream's next
// work (a plain cudaMemset on the legacy stream, as before 6f74329) gives
// wrong sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "trellis/cuda/trellis_ops.hpp"
#include "trellis_fixture.hpp"

namespace trellis::test {
namespace {

TEST(ContextScratch, CountersReadZeroOnTheContextStreamAfterEachGrowth) {
  TRELLIS_REQUIRE_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  TRELLIS_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    cuda::Context ctx(stream);
    for (const std::size_t n : {std::size_t(1) << 14, std::size_t(1) << 18, std::size_t(1) << 22}) {
      // Non-zero bytes where the next allocation is likely to land.
      void* junk = nullptr;
      TRELLIS_CUDA_OK(cudaMalloc(&junk, n * sizeof(unsigned)));
      TRELLIS_CUDA_OK(cudaMemset(junk, 0xff, n * sizeof(unsigned)));
      TRELLIS_CUDA_OK(cudaDeviceSynchronize());
      TRELLIS_CUDA_OK(cudaFree(junk));
      const unsigned* counters = ctx.counters(n);
      std::vector<unsigned> host(n, 1u);
      TRELLIS_CUDA_OK(cudaMemcpyAsync(host.data(), counters, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
      TRELLIS_CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_EQ(std::size_t(std::count(host.begin(), host.end(), 0u)), n) << n << " counters";
    }
  }
  TRELLIS_CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace trellis::test
