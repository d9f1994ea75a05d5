// parse_device, make_backend and the profile hooks (contract in
// trellis/model/device.hpp).
#include "trellis/model/device.hpp"

#include <string>

#include "trellis/error.hpp"
#include "trellis/model/cpu_backend.hpp"
#ifdef TRELLIS_HAVE_CUDA_BACKEND
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "trellis/model/cuda_backend.hpp"
#endif

namespace trellis::model {

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw Error("unknown device '" + std::string(name) + "' (cpu or cuda)");
}

#ifdef TRELLIS_HAVE_CUDA_BACKEND
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::unique_ptr<Backend> make_backend(Device device) {
  if (device == Device::cpu) return make_cpu_backend();
  return make_cuda_backend({.graphs = env("TRELLIS_CUDA_GRAPHS") != "0",
                            .profile = !env("TRELLIS_PROFILE").empty(),
                            .fuse_norms = env("TRELLIS_NORM_FUSION") != "0"});
}

bool profiling(const Backend& backend) { return cuda_profile(backend).has_value(); }

void reset_profile(Backend& backend) { reset_cuda_profile(backend); }

void report_profile(const Backend& backend) {
  const auto report = cuda_profile(backend);
  if (!report) return;
  std::fputs(report->table.c_str(), stderr);
  const std::string path = env("TRELLIS_PROFILE");
  std::ofstream out(path);
  out << report->json << "\n";
  if (!out.flush()) throw Error("TRELLIS_PROFILE: cannot write the profile to '" + path + "'");
  std::fprintf(stderr, "profile written to %s\n", path.c_str());
}

std::string step_report(const Backend& backend) {
  const auto g = cuda_graph_stats(backend);
  const int64_t steps = g ? g->replays + g->eager_steps : 0;
  if (steps == 0) return "";
  char line[256];
  std::snprintf(line, sizeof line,
                "one-token steps: %lld (%lld replayed a graph, %lld eager), per step %.0f us on the host "
                "before the launch and %.0f us waiting for a result",
                (long long)steps, (long long)g->replays, (long long)g->eager_steps, 1e6 * g->host_seconds / double(steps),
                1e6 * g->wait_seconds / double(steps));
  return line;
}
#else
std::unique_ptr<Backend> make_backend(Device device) {
  if (device == Device::cpu) return make_cpu_backend();
  throw Error("CUDA backend not built/available (this build runs models on the CPU only)");
}

bool profiling(const Backend&) { return false; }
void reset_profile(Backend&) {}
void report_profile(const Backend&) {}
std::string step_report(const Backend&) { return ""; }
#endif

}  // namespace trellis::model
