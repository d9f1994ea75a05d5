// Thread-count setting and parallel_for (see parallel.hpp): static contiguous
// chunks, one std::thread per extra chunk, joined before returning.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "parallel.hpp"
#include "trellis/cpu/threads.hpp"

namespace trellis::cpu {

namespace {
std::atomic<int> g_threads{0};
}

void set_thread_count(int n) { g_threads.store(std::max(n, 0)); }

int thread_count() {
  const int n = g_threads.load();
  if (n > 0) return n;
  return std::max(1, int(std::thread::hardware_concurrency()));
}

void parallel_for(int64_t n, int64_t work_per_item,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t by_work = std::max<int64_t>(1, n * std::max<int64_t>(work_per_item, 1) / kMinWorkPerThread);
  const int64_t threads = std::min<int64_t>({int64_t(thread_count()), n, by_work});
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(size_t(threads - 1));
  for (int64_t c = 1; c < threads; ++c)
    workers.emplace_back(fn, n * c / threads, n * (c + 1) / threads);
  fn(0, n / threads);
  for (auto& t : workers) t.join();
}

}  // namespace trellis::cpu
