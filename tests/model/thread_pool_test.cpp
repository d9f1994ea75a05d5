// The CPU backend's ThreadPool: every index of [0, n) is visited exactly
// once, for any n and thread count, call after call (workers that wake late
// must not run a finished job).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "../../src/model/cpu/thread_pool.hpp"

namespace trellis {
namespace {

TEST(ThreadPool, VisitsEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    model::cpu::ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 64, 1000}) {
      for (int rep = 0; rep < 200; ++rep) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          EXPECT_LT(b, e);
          for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " " << n << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace trellis
