// ThreadPool (contract in thread_pool.hpp). A job is published under the
// mutex with a new generation; a worker that wakes while it is still
// published joins it (active_ + 1) and claims chunks until none are left.
// The caller claims chunks too, then waits only for the workers that joined,
// and withdraws the job so a late worker goes back to sleep.
#include "thread_pool.hpp"

#include <algorithm>

namespace trellis::model::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (int64_t c; (c = next_.fetch_add(1)) < chunks_;) (*job_)(n_ * c / chunks_, n_ * (c + 1) / chunks_);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_ = n;
    chunks_ = std::min(n, kChunksPerThread * size());
    next_.store(0);
    ++generation_;
  }
  start_.notify_all();
  run_chunks();
  std::unique_lock lock(mu_);
  finished_.wait(lock, [this] { return active_ == 0; });
  job_ = nullptr;
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || (job_ && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    run_chunks();
    std::lock_guard lock(mu_);
    if (--active_ == 0) finished_.notify_one();
  }
}

}  // namespace trellis::model::cpu
