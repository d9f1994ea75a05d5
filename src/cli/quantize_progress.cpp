// QuantizeProgress (contract in quantize_progress.hpp).
#include "quantize_progress.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace trellis::cli {
namespace {

std::string clock_string(double seconds) {
  const auto s = int64_t(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

QuantizeProgress::QuantizeProgress(int64_t total_weights, size_t modules, bool terminal)
    : total_weights_(total_weights), modules_(modules), terminal_(terminal) {}

void QuantizeProgress::rows(const quant::CodedModule& m, int64_t done, int64_t total) {
  if (!terminal_) return;
  const auto now = Clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done != total) return;
  last_draw_ = now;
  draw(m, finished_weights_ + m.out_features * m.in_features * done / total);
}

void QuantizeProgress::draw(const quant::CodedModule& m, int64_t weights_done) {
  constexpr int kWidth = 30;
  const double f = total_weights_ ? double(weights_done) / double(total_weights_) : 1.0;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const int filled = int(f * kWidth);
  const std::string eta = f > 0.0 ? clock_string(elapsed * (1.0 - f) / f) : "?";
  std::fprintf(stderr, "\r\033[K[%s%s] %3d%% %zu/%zu %s  elapsed %s  ETA %s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), int(f * 100.0), finished_ + 1, modules_, m.module.c_str(),
               clock_string(elapsed).c_str(), eta.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void QuantizeProgress::tensor(const quant::TensorReport& r) {
  ++finished_;
  finished_weights_ += r.out_features * r.in_features;
  if (terminal_) return;
  std::fprintf(stderr, "[%zu/%zu] %s k=%d axis=%d [%lld, %lld] rel_error %.4f %.2f s\n", finished_, modules_,
               r.module.c_str(), r.k, r.axis, (long long)r.out_features, (long long)r.in_features, r.rel_error,
               r.seconds);
}

void QuantizeProgress::finish() {
  if (terminal_ && drawn_) std::fprintf(stderr, "\n");
}

}  // namespace trellis::cli
