// OpProfiler: GPU time of every backend op, by CUDA events (the backend's
// Options.profile; contract in trellis/model/cuda_backend.hpp).
//
// A forward runs from begin_forward (at the embedding, after its token ids
// are on the device) to end_forward (in to_host, after the stream sync).
// begin_forward enqueues a hold: a kernel that waits `hold` ns on the GPU
// while the host queues the forward, so every op's events then time its
// kernels back to back, not the host's launch gaps. The hold of a phase is
// 2 x the host time the previous forward of that phase took to queue, plus
// 2 ms, within [2 ms, 50 ms] (first forward: 200 ms prefill, 20 ms decode). A
// forward counts as "held" when the host had queued it (enqueued(), called
// before to_host's blocking copy) before its hold ended on the host clock;
// the GPU times of a forward that was not held include launch gaps.
//
// Each op or stage of an op runs inside span(op, part): a start and a stop
// event on the stream and the host time of the call. end_forward reads the
// events and adds them to the sums per (phase, op, part): calls, GPU ms,
// host ms. Phases: "prefill" (a forward whose first batch has M > 1 tokens)
// and "decode" (one token). The host time from one forward's end to the
// next one's begin (the caller: sampling, copying logits) is added to the
// next forward's phase. Spans outside a forward are not timed.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trellis/model/cuda_backend.hpp"

namespace trellis::model::cuda {

class OpProfiler {
 public:
  explicit OpProfiler(cudaStream_t stream) : stream_(stream) {}
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  void begin_forward(int64_t tokens);
  void begin(const std::string& op, const std::string& part);
  void end();
  void abandon();  // drops the open span (its launch threw)
  void enqueued();
  void end_forward();
  void reset();
  CudaProfileReport report() const;

  // The sums, per phase (report() formats them; profile_report.cpp).
  struct Cell {
    int64_t calls = 0;
    double gpu_ms = 0;
    double host_ms = 0;
  };
  struct Phase {
    int64_t forwards = 0, tokens = 0, held = 0;
    double enqueue_ms = 0;  // host: begin_forward to enqueued()
    double between_ms = 0;  // host: the previous end_forward to begin_forward
    std::map<std::pair<std::string, std::string>, Cell> cells;  // (op, part)
  };
  static constexpr std::array<const char*, 2> kPhaseNames = {"prefill", "decode"};

 private:
  using Clock = std::chrono::steady_clock;
  struct Span {
    std::pair<std::string, std::string> key;
    std::size_t start = 0, stop = 0;  // indices into events_
    double host_ms = 0;
  };
  std::size_t event();

  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  std::size_t used_ = 0;
  std::vector<Span> spans_;
  bool open_ = false, in_span_ = false;
  int phase_ = 0;
  int64_t tokens_ = 0;
  double hold_ms_[2] = {200.0, 20.0};
  Clock::time_point forward_start_, span_start_, last_end_;
  bool have_last_end_ = false;
  double enqueue_ms_ = -1;
  std::array<Phase, 2> phases_;
};

// Runs `launch`, inside span(op, part) when `p` is non-null.
template <typename F>
void timed(OpProfiler* p, const std::string& op, const std::string& part, F&& launch) {
  if (!p) return launch();
  p->begin(op, part);
  try {
    launch();
  } catch (...) {
    p->abandon();
    throw;
  }
  p->end();
}

}  // namespace trellis::model::cuda
