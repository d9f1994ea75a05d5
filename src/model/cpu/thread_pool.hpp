// ThreadPool: persistent workers for the CPU backend's ops, so a decode step
// (dozens of small parallel ops) does not pay a thread start per op.
//
// parallel_for(n, fn) splits [0, n) into up to kChunksPerThread·size()
// contiguous chunks and runs fn(begin, end) once per chunk; the caller's
// thread and the workers claim chunks from a shared counter, so a worker
// that is slow to wake (a busy machine) costs nothing: the caller takes its
// chunks. It returns when every chunk is done. Chunks are disjoint, so ops
// that write only what their items own are deterministic whatever the
// thread count. fn must not throw. One parallel_for at a time.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trellis::model::cpu {

class ThreadPool {
 public:
  static constexpr int64_t kChunksPerThread = 4;

  // `threads` counts the caller; 1 means no workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void work();
  void run_chunks();

  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable finished_;
  // The current job; stable while a worker holds it (active_ > 0).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  uint64_t generation_ = 0;
  int active_ = 0;  // workers holding the job
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trellis::model::cpu
