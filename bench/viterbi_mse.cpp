// viterbi_mse: distortion and speed of the CPU trellis quantizer on iid
// N(0, 1) weights (the number the QTIP-style bounds are stated in).
//
// For each L in {12, 16} and k in {2, 3, 4}: quantize_tensor (defaults:
// scale search with 2 encodes per row, 2 overlap candidates per block) on a
// [rows, 4096] axis-1 matrix of `weights` values, MSE = mean (W − Ŵ)² from
// expand_to_f32, weights/s of wall time with `threads` workers and weights
// per CPU-second (all threads; the honest number on a shared machine).
// A second measurement per (L, k) explains the tail-biting cost on 256 blocks
// at the starting scale: the best non-circular encoding (a lower bound for any
// circular one), the circular result with 1 overlap candidate (QTIP's two
// passes) and with 2 and 8, and how often each is certified optimal.
// Last, the speed target: the 28 linears of the fixture model
// (shakespeare-qwen3-15m: 4 layers of q, k, v, o, gate, up on axis 1 and down
// on axis 0, 11.0M weights; Gaussian stand-ins, speed does not depend on the
// values) at k = 3, L = 12 with rotation, timed end to end.
// Writes one JSON file (default bench/results/viterbi_mse_cpu.json).
//
// Usage: viterbi_mse [--out FILE] [--weights N] [--weights-l16 N]
//                    [--threads N] [--commit SHA]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/codec/quantize_tensor.hpp"
#include "trellis/codec/viterbi.hpp"

namespace {

constexpr int kT = 256;
constexpr int64_t kCols = 4096;

// iid N(0, 1) by Box–Muller over splitmix64, so every platform draws the same values.
std::vector<float> gaussian(int64_t n, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint64_t s = seed;
  auto next = [&s] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return double((z ^ (z >> 31)) >> 11) * 0x1p-53;
  };
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - next(), u2 = next();
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[size_t(i)] = float(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) out[size_t(i + 1)] = float(r * std::sin(2.0 * M_PI * u2));
  }
  return out;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the whole process (all threads): robust to a shared machine.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

nlohmann::json quantizer_run(int k, int L, int64_t weights, int threads) {
  const int64_t rows = weights / kCols;
  const std::vector<float> W = gaussian(rows * kCols, 0x5eed0000ull + uint64_t(L * 16 + k));
  trellis::QuantizeOptions o;
  o.k = k;
  o.L = L;
  o.T = kT;
  o.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  const trellis::QuantizedTensor q = trellis::quantize_tensor(W.data(), rows, kCols, o);
  const double secs = seconds_since(t0);
  const double cpu = cpu_seconds() - c0;
  std::vector<float> back(W.size());
  trellis::expand_to_f32(q.view(), back.data());
  double se = 0.0;
  for (size_t i = 0; i < W.size(); ++i) se += (double(W[i]) - back[i]) * (double(W[i]) - back[i]);
  return {{"rows", rows},
          {"cols", kCols},
          {"weights", rows * kCols},
          {"scale_passes", o.scale_passes},
          {"max_overlaps", o.max_overlaps},
          {"mse", se / double(W.size())},
          {"rel_error", q.rel_error},
          {"seconds", secs},
          {"weights_per_s", double(W.size()) / secs},
          {"cpu_seconds", cpu},
          {"weights_per_cpu_s", double(W.size()) / cpu}};
}

nlohmann::json tail_biting_run(int k, int L, int blocks) {
  // The quantizer's starting scale for unit-variance rows (c_k · 1).
  const double scale_multiple[8] = {0.87, 1.04, 1.10, 1.13, 1.15, 1.20, 1.20, 1.20};
  const float f = float(scale_multiple[k - 1]) * trellis::kCodeRcp;
  const std::vector<float> w = gaussian(int64_t(blocks) * kT, 0x7a11ull + uint64_t(L * 16 + k));
  std::vector<float> v(w.size());
  for (size_t i = 0; i < w.size(); ++i) v[i] = w[i] / f;
  std::vector<uint32_t> words(size_t(kT * k / 32));
  nlohmann::json out = {{"blocks", blocks}, {"scale_multiple", scale_multiple[k - 1]}};
  double lower = 0.0;
  for (int overlaps : {1, 2, 8}) {
    trellis::ViterbiEncoder enc(k, L, kT, overlaps);
    double err = 0.0;
    int certified = 0;
    lower = 0.0;
    for (int b = 0; b < blocks; ++b) {
      const trellis::BlockEncoding e = enc.encode_block(v.data() + size_t(b) * kT, words.data());
      err += e.error;
      lower += e.lower_bound;
      certified += e.certified;
    }
    const double n = double(blocks) * kT;
    out["circular_mse_overlaps_" + std::to_string(overlaps)] = err * f * f / n;
    out["certified_fraction_overlaps_" + std::to_string(overlaps)] = double(certified) / blocks;
    out["non_circular_mse"] = lower * f * f / n;
  }
  return out;
}

nlohmann::json fixture_run(int threads) {
  struct Linear {
    int64_t out, in;
    int axis;
  };
  const Linear layer[] = {{512, 512, 1},  {256, 512, 1},  {256, 512, 1}, {512, 512, 1},
                          {1280, 512, 1}, {1280, 512, 1}, {512, 1280, 0}};
  int64_t weights = 0;
  double secs = 0.0, cpu = 0.0;
  for (int l = 0; l < 4; ++l) {
    for (int i = 0; i < 7; ++i) {
      const Linear& lin = layer[i];
      const std::vector<float> W = gaussian(lin.out * lin.in, uint64_t(l * 7 + i));
      trellis::QuantizeOptions o;
      o.k = 3;
      o.L = 12;
      o.T = kT;
      o.axis = lin.axis;
      o.rotate = true;
      o.seed = uint64_t(l * 7 + i);
      o.threads = threads;
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      trellis::quantize_tensor(W.data(), lin.out, lin.in, o);
      secs += seconds_since(t0);
      cpu += cpu_seconds() - c0;
      weights += lin.out * lin.in;
    }
  }
  return {{"model", "shakespeare-qwen3-15m shapes"}, {"linears", 28}, {"weights", weights}, {"k", 3},
          {"L", 12}, {"rotate", true}, {"seconds", secs}, {"cpu_seconds", cpu},
          {"target_seconds_on_2_cores", 120}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"trellis CPU quantizer distortion and speed on iid N(0,1) weights"};
  std::string out_path = "bench/results/viterbi_mse_cpu.json";
  int64_t weights = int64_t(1) << 20;
  int64_t weights_l16 = int64_t(1) << 20;
  int threads = 2;
  std::string commit = "unknown";
  app.add_option("--out", out_path, "JSON file to write");
  app.add_option("--weights", weights, "weights per (L=12, k) run (multiple of 32768)");
  app.add_option("--weights-l16", weights_l16, "weights per (L=16, k) run (multiple of 32768)");
  app.add_option("--threads", threads, "worker threads");
  app.add_option("--commit", commit, "commit the binary was built from");
  CLI11_PARSE(app, argc, argv);

  const nlohmann::json bounds = {{"12", {{"2", 0.0745}, {"3", 0.0197}, {"4", 0.0055}}},
                                 {"16", {{"2", 0.0690}, {"3", 0.0178}, {"4", 0.0046}}}};
  nlohmann::json result = {{"bench", "viterbi_mse"},
                           {"commit", commit},
                           {"cpu", cpu_name()},
                           {"hardware_threads", std::thread::hardware_concurrency()},
                           {"threads", threads},
                           {"T", kT},
                           {"data", "iid N(0,1), Box-Muller over splitmix64, [weights/4096, 4096] axis 1, no rotation"},
                           {"runs", nlohmann::json::array()}};
  for (int L : {12, 16}) {
    for (int k : {2, 3, 4}) {
      std::cerr << "L=" << L << " k=" << k << " ..." << std::flush;
      nlohmann::json run = {{"L", L}, {"k", k}};
      run["quantizer"] = quantizer_run(k, L, L == 16 ? weights_l16 : weights, threads);
      run["tail_biting"] = tail_biting_run(k, L, 256);
      const double bound = bounds[std::to_string(L)][std::to_string(k)];
      run["acceptance_mse"] = bound;
      run["meets_acceptance"] = run["quantizer"]["mse"].get<double>() <= bound;
      std::cerr << " mse " << run["quantizer"]["mse"].get<double>() << " ("
                << run["quantizer"]["weights_per_s"].get<double>() << " weights/s, "
                << run["quantizer"]["weights_per_cpu_s"].get<double>() << " weights/cpu-s)\n";
      result["runs"].push_back(run);
    }
  }
  std::cerr << "fixture shapes, k=3 L=12 rotated ..." << std::flush;
  result["fixture"] = fixture_run(threads);
  std::cerr << " " << result["fixture"]["seconds"].get<double>() << " s\n";
  std::ofstream(out_path) << result.dump(2) << "\n";
  std::cerr << "wrote " << out_path << "\n";
  return 0;
}
