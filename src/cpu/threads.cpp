// Thread-count setting and parallel_for (contract in parallel.hpp).
//
// One process-wide pool. A job is published under the mutex with a new
// generation; workers that see it claim chunks under the mutex (a handful per
// call) and run them unlocked; the caller claims chunks too, then waits until
// every chunk is done. A worker that finished a job polls the generation for
// kSpin before sleeping on the condition variable: a decode step issues its
// linear calls tens of microseconds apart, and a futex wake-up per call would
// cost as much as the call itself.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel.hpp"
#include "trellis/cpu/threads.hpp"

namespace trellis::cpu {

namespace {

std::atomic<int> g_threads{0};

constexpr auto kSpin = std::chrono::microseconds(200);
constexpr int64_t kChunksPerThread = 4;

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Runs the job on the caller and up to `helpers` workers; false (nothing
  // run) when another thread's job holds the pool.
  bool run(int64_t n, int64_t chunks, int helpers, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy) return false;
    std::unique_lock lock(mu_);
    while (int(workers_.size()) < helpers) {
      const int index = int(workers_.size());
      workers_.emplace_back([this, index] { work(index); });
    }
    job_ = &fn;
    n_ = n;
    chunks_ = chunks;
    helpers_ = helpers;
    next_ = done_ = 0;
    generation_.store(generation_.load() + 1, std::memory_order_release);
    lock.unlock();
    start_.notify_all();
    lock.lock();
    run_chunks(lock);
    finished_.wait(lock, [this] { return done_ == chunks_; });
    job_ = nullptr;
    return true;
  }

 private:
  // Claims and runs chunks until none is left; `lock` is held on entry and exit.
  void run_chunks(std::unique_lock<std::mutex>& lock) {
    while (job_ && next_ < chunks_) {
      const int64_t c = next_++;
      const auto* fn = job_;
      const int64_t n = n_, chunks = chunks_;
      lock.unlock();
      (*fn)(n * c / chunks, n * (c + 1) / chunks);
      lock.lock();
      if (++done_ == chunks_) finished_.notify_one();
    }
  }

  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
        relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
      }
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
      if (index < helpers_) run_chunks(lock);
    }
  }

  std::mutex busy_;  // held by the caller of the running job
  std::mutex mu_;
  std::condition_variable start_, finished_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0, chunks_ = 0, next_ = 0, done_ = 0;
  int helpers_ = 0;
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

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
  if (threads <= 1 || !pool().run(n, std::min(n, threads * kChunksPerThread), int(threads - 1), fn)) fn(0, n);
}

}  // namespace trellis::cpu
