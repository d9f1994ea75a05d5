// ThreadPool (contract in thread_pool.hpp): workers sleep on a condition
// variable until the generation counter moves, run their chunk, and the last
// one to finish wakes the caller.
#include "thread_pool.hpp"

#include <algorithm>

namespace trellis::model::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = int(std::min<int64_t>(size(), n));
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_ = n;
    chunks_ = chunks;
    pending_ = chunks - 1;
    ++generation_;
  }
  start_.notify_all();
  fn(0, n / chunks);
  std::unique_lock lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock lock(mu_);
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (index >= chunks_) continue;
    const auto* fn = job_;
    const int64_t begin = n_ * index / chunks_, end = n_ * (index + 1) / chunks_;
    lock.unlock();
    (*fn)(begin, end);
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace trellis::model::cpu
