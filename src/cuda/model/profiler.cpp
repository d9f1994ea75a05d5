// OpProfiler (contract in profiler.hpp).
#include "profiler.hpp"

#include <algorithm>

#include "kernels.hpp"
#include "launch_check.hpp"

namespace trellis::model::cuda {

using detail::check_cuda;

namespace {

// A forward of more launches than CUDA's launch queue holds blocks the host
// behind the hold; that blocked time must not grow the next hold, or it runs
// away (1 s per forward was seen on a 40-layer model). Hence the low cap.
constexpr double kMinHoldMs = 2.0, kMaxHoldMs = 50.0;

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

OpProfiler::~OpProfiler() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

std::size_t OpProfiler::event() {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate (profiler)");
    events_.push_back(e);
  }
  return used_++;
}

void OpProfiler::begin_forward(int64_t tokens) {
  const Clock::time_point now = Clock::now();
  if (open_) {  // a later batch of the same forward (no to_host in between)
    tokens_ += tokens;
    return;
  }
  open_ = true;
  phase_ = tokens > 1 ? 0 : 1;
  tokens_ = tokens;
  enqueue_ms_ = -1;
  if (have_last_end_) phases_[size_t(phase_)].between_ms += ms_between(last_end_, now);
  forward_start_ = now;
  launch_hold(uint64_t(hold_ms_[phase_] * 1e6), stream_);
}

void OpProfiler::begin(const std::string& op, const std::string& part) {
  if (!open_) return;
  if (in_span_) throw Error("cuda backend profiler: span '" + op + " / " + part + "' opened inside another");
  in_span_ = true;
  Span s;
  s.key = {op, part};
  s.start = event();
  s.stop = event();
  check_cuda(cudaEventRecord(events_[s.start], stream_), "cudaEventRecord (profiler)");
  spans_.push_back(std::move(s));
  span_start_ = Clock::now();
}

void OpProfiler::end() {
  if (!open_ || !in_span_) return;
  in_span_ = false;
  Span& s = spans_.back();
  check_cuda(cudaEventRecord(events_[s.stop], stream_), "cudaEventRecord (profiler)");
  s.host_ms = ms_between(span_start_, Clock::now());
}

void OpProfiler::abandon() {
  if (!open_ || !in_span_) return;
  in_span_ = false;
  spans_.pop_back();
}

void OpProfiler::enqueued() {
  if (open_ && enqueue_ms_ < 0) enqueue_ms_ = ms_between(forward_start_, Clock::now());
}

void OpProfiler::end_forward() {
  if (!open_) return;
  enqueued();
  Phase& p = phases_[size_t(phase_)];
  for (const Span& s : spans_) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events_[s.start], events_[s.stop]), "cudaEventElapsedTime (profiler)");
    Cell& c = p.cells[s.key];
    ++c.calls;
    c.gpu_ms += ms;
    c.host_ms += s.host_ms;
  }
  ++p.forwards;
  p.tokens += tokens_;
  p.enqueue_ms += enqueue_ms_;
  if (enqueue_ms_ < hold_ms_[phase_]) ++p.held;
  hold_ms_[phase_] = std::clamp(2.0 * enqueue_ms_ + kMinHoldMs, kMinHoldMs, kMaxHoldMs);
  spans_.clear();
  used_ = 0;
  open_ = in_span_ = false;
  last_end_ = Clock::now();
  have_last_end_ = true;
}

void OpProfiler::reset() {
  phases_ = {};
  have_last_end_ = false;
}

}  // namespace trellis::model::cuda
