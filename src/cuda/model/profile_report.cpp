// OpProfiler::report (profiler.hpp): the sums per phase as a text table and
// as JSON. Per phase, per forward: GPU µs of every (op, part), its share of
// the phase's GPU total, µs per call and the host µs spent in the call; the
// same summed per op; the host's queueing time and its time between
// forwards (the caller's sampling and logits copy). Rows by GPU time, most
// first.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler.hpp"

namespace trellis::model::cuda {
namespace {

struct Row {
  std::string op, part;
  double calls = 0, gpu_us = 0, host_us = 0;  // per forward
};

std::string line(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

CudaProfileReport OpProfiler::report() const {
  nlohmann::ordered_json phases = nlohmann::ordered_json::object();
  std::string table =
      "CUDA op profile: GPU time by CUDA events on eager forwards (device-side hold first), per forward\n";
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (p.forwards == 0) continue;
    const double n = double(p.forwards);
    std::vector<Row> rows;
    std::map<std::string, double> by_op;
    double total = 0;
    for (const auto& [key, c] : p.cells) {
      rows.push_back({key.first, key.second, c.calls / n, 1e3 * c.gpu_ms / n, 1e3 * c.host_ms / n});
      by_op[key.first] += 1e3 * c.gpu_ms / n;
      total += 1e3 * c.gpu_ms / n;
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.gpu_us > b.gpu_us; });
    std::vector<std::pair<std::string, double>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    const double share = total > 0 ? 100.0 / total : 0;

    table += line("\n%s: %lld forwards, %.1f tokens each; GPU %.1f us/forward (%.2f us/token); host queueing "
                  "%.1f us/forward; host between forwards %.1f us; held %lld/%lld\n",
                  kPhaseNames[i], (long long)p.forwards, double(p.tokens) / n, total, total * n / double(p.tokens),
                  1e3 * p.enqueue_ms / n, 1e3 * p.between_ms / n, (long long)p.held, (long long)p.forwards);
    table += line("  %-10s %12s %7s\n", "op", "GPU us/fwd", "%");
    for (const auto& [op, us] : ops) table += line("  %-10s %12.1f %6.1f%%\n", op.c_str(), us, us * share);
    table += line("  %-10s %-28s %9s %12s %7s %10s %12s\n", "op", "part", "calls/fwd", "GPU us/fwd", "%", "us/call",
                  "host us/fwd");
    for (const Row& r : rows)
      table += line("  %-10s %-28s %9.1f %12.1f %6.1f%% %10.2f %12.1f\n", r.op.c_str(), r.part.c_str(), r.calls,
                    r.gpu_us, r.gpu_us * share, r.calls > 0 ? r.gpu_us / r.calls : 0.0, r.host_us);

    nlohmann::ordered_json j_ops = nlohmann::ordered_json::array(), j_rows = nlohmann::ordered_json::array();
    for (const auto& [op, us] : ops)
      j_ops.push_back({{"op", op}, {"gpu_us_per_forward", us}, {"share", us * share / 100}});
    for (const Row& r : rows)
      j_rows.push_back({{"op", r.op},
                        {"part", r.part},
                        {"calls_per_forward", r.calls},
                        {"gpu_us_per_forward", r.gpu_us},
                        {"us_per_call", r.calls > 0 ? r.gpu_us / r.calls : 0.0},
                        {"host_us_per_forward", r.host_us},
                        {"share", r.gpu_us * share / 100}});
    phases[kPhaseNames[i]] = {{"forwards", p.forwards},
                              {"tokens", p.tokens},
                              {"held_forwards", p.held},
                              {"gpu_us_per_forward", total},
                              {"gpu_us_per_token", total * n / double(p.tokens)},
                              {"host_queue_us_per_forward", 1e3 * p.enqueue_ms / n},
                              {"host_between_us_per_forward", 1e3 * p.between_ms / n},
                              {"by_op", j_ops},
                              {"by_part", j_rows}};
  }
  const nlohmann::ordered_json doc = {
      {"profile", "cuda ops"},
      {"method",
       "CUDA events around every backend op (and each stage of a linear) on eager forwards (no graphs); each forward "
       "starts behind a device-side hold so the events time kernels back to back; held_forwards counts the forwards "
       "fully queued before their hold ended (their times exclude launch gaps). host_between: the caller's time "
       "between forwards (sampling, logits copy)"},
      {"phases", phases}};
  return {table, doc.dump(1)};
}

}  // namespace trellis::model::cuda
