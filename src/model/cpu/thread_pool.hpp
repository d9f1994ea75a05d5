// ThreadPool: persistent workers for the CPU backend's ops, so a decode step
// (dozens of small parallel ops) does not pay a thread start per op.
//
// parallel_for(n, fn) splits [0, n) into min(size(), n) contiguous chunks,
// runs fn(begin, end) on each — chunk 0 on the caller's thread — and returns
// when all are done. Chunks are disjoint, so ops that write only what their
// items own are deterministic whatever the thread count. fn must not throw.
// One parallel_for at a time (the backend is single-caller).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trellis::model::cpu {

class ThreadPool {
 public:
  // `threads` counts the caller; 1 means no workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void work(int index);

  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trellis::model::cpu
