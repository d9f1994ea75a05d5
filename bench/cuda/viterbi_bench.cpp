// viterbi_bench: quality and speed of the CUDA tail-biting Viterbi encoder
// (trellis/cuda/viterbi.hpp) through quantize_tensor, as `trellis quantize
// --device cuda` runs it.
//
// 1. MSE on iid N(0,1) weights (Box–Muller over splitmix64 with the CPU
//    bench's seeds, bench/viterbi_mse.cpp), [weights/4096, 4096] on axis 1,
//    T = 256, L = 12 and 16, k = 2, 3, 4, default options (2 scale passes,
//    2 overlap candidates): MSE = mean (W − Ŵ)² with Ŵ decoded by the CPU
//    decoder (expand_to_f32), against the bars, and the wall time.
// 2. Per (L, k), blocks coded straight by the encoder at the starting scale:
//    every block's words decoded by the CPU (decode_block_states) must give
//    the returned states, which must form a circular stream; the same blocks
//    through the CPU encoder: how many chose the same states, both mean
//    errors, the certified fractions.
// 3. One Qwen3-14B-shaped decoder layer (q, o 5120×5120; k, v 1024×5120;
//    gate, up 17408×5120 on axis 1; down 5120×17408 on axis 0; N(0, 0.02²)
//    weights) at k = 3, L = 12: quantize_tensor with the CUDA encoder per
//    tensor (gather, scale search, encodes, copies; the encoder built once,
//    included), wall time per tensor and in all, against the 15 s bar.
// 4. The encoder alone at k = 3, L = 12 (2^23 targets, copies included).
// Writes one JSON file: GPU, SMs, clocks, driver, runtime, host threads,
// driver (TRELLIS_DRIVER, as nvidia-smi names it), commit (TRELLIS_COMMIT),
// the numbers.
//
// Usage: viterbi_bench OUT.json
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/codec/quantize_tensor.hpp"
#include "trellis/codec/viterbi.hpp"
#include "trellis/cuda/viterbi.hpp"

namespace {

constexpr int kT = 256;
constexpr int64_t kCols = 4096;
constexpr int64_t kWeights = int64_t(1) << 20;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// iid N(0, sd²) by Box–Muller over splitmix64 (the CPU bench's generator), in
// `parts` independently seeded slices filled by threads.
std::vector<float> gaussian(int64_t n, uint64_t seed, float sd = 1.0f, int parts = 1) {
  std::vector<float> out(static_cast<size_t>(n));
  auto fill = [&](int64_t begin, int64_t end, uint64_t s) {
    auto next = [&s] {
      uint64_t z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return double((z ^ (z >> 31)) >> 11) * 0x1p-53;
    };
    for (int64_t i = begin; i < end; i += 2) {
      const double u1 = 1.0 - next(), u2 = next();
      const double r = std::sqrt(-2.0 * std::log(u1));
      out[size_t(i)] = sd * float(r * std::cos(2.0 * M_PI * u2));
      if (i + 1 < end) out[size_t(i + 1)] = sd * float(r * std::sin(2.0 * M_PI * u2));
    }
  };
  std::vector<std::thread> pool;
  for (int p = 0; p < parts; ++p)
    pool.emplace_back(fill, n * p / parts / 2 * 2, p + 1 == parts ? n : n * (p + 1) / parts / 2 * 2,
                      seed + uint64_t(p) * 0x1234567ull);
  for (auto& t : pool) t.join();
  return out;
}

double acceptance(int L, int k) {
  const double l12[] = {0.0745, 0.0197, 0.0055}, l16[] = {0.0690, 0.0178, 0.0046};
  return (L == 12 ? l12 : l16)[k - 2];
}

nlohmann::json mse_run(int k, int L) {
  const int64_t rows = kWeights / kCols;
  const std::vector<float> W = gaussian(rows * kCols, 0x5eed0000ull + uint64_t(L * 16 + k));
  trellis::QuantizeOptions o;
  o.k = k;
  o.L = L;
  o.T = kT;
  const auto t0 = Clock::now();
  trellis::cuda::ViterbiEncoder enc(k, L, kT, o.max_overlaps);
  o.encoder = &enc;
  const trellis::QuantizedTensor q = trellis::quantize_tensor(W.data(), rows, kCols, o);
  const double secs = seconds_since(t0);
  std::vector<float> back(W.size());
  trellis::expand_to_f32(q.view(), back.data());
  double se = 0.0;
  for (size_t i = 0; i < W.size(); ++i) se += (double(W[i]) - back[i]) * (double(W[i]) - back[i]);
  const double mse = se / double(W.size());
  return {{"L", L},
          {"k", k},
          {"weights", W.size()},
          {"scale_passes", o.scale_passes},
          {"max_overlaps", o.max_overlaps},
          {"mse", mse},
          {"rel_error_squared", q.rel_error * q.rel_error},
          {"acceptance_mse", acceptance(L, k)},
          {"meets_acceptance", mse <= acceptance(L, k)},
          {"seconds", secs},
          {"weights_per_s", double(W.size()) / secs},
          {"in_flight_blocks", enc.slots()}};
}

// Circular stream rule on a state sequence.
bool circular(const uint32_t* s, int T, int k, int L) {
  const uint32_t low = (1u << (L - k)) - 1u;
  for (int t = 0; t + 1 < T; ++t)
    if ((s[t + 1] >> k) != (s[t] & low)) return false;
  return (s[0] >> k) == (s[T - 1] & low) && s[0] < (1u << L);
}

nlohmann::json block_check(int k, int L, int blocks) {
  const double scale_multiple[] = {1.04, 1.10, 1.13};
  const float f = float(scale_multiple[k - 2]) * trellis::kCodeRcp;
  const std::vector<float> w = gaussian(int64_t(blocks) * kT, 0x7a11ull + uint64_t(L * 16 + k));
  std::vector<float> v(w.size());
  for (size_t i = 0; i < w.size(); ++i) v[i] = w[i] / f;
  const int wpb = kT * k / 32;
  trellis::cuda::ViterbiEncoder enc(k, L, kT, 2);
  std::vector<uint32_t> words(size_t(blocks) * wpb), states(size_t(blocks) * kT), decoded(kT), cs(kT);
  std::vector<uint32_t> cw(static_cast<size_t>(wpb));
  std::vector<trellis::BlockEncoding> res(static_cast<size_t>(blocks));
  enc.encode(v.data(), blocks, words.data(), states.data(), res.data());
  trellis::ViterbiEncoder cpu(k, L, kT, 2);
  int decode_mismatch = 0, not_circular = 0, same = 0, cuda_cert = 0, cpu_cert = 0;
  double cuda_err = 0.0, cpu_err = 0.0, worst_excess = 0.0;
  for (int b = 0; b < blocks; ++b) {
    const uint32_t* s = states.data() + size_t(b) * kT;
    trellis::decode_block_states(words.data() + size_t(b) * wpb, kT, k, L, decoded.data());
    decode_mismatch += decoded != std::vector<uint32_t>(s, s + kT);
    not_circular += !circular(s, kT, k, L);
    const trellis::BlockEncoding c = cpu.encode_block(v.data() + size_t(b) * kT, cw.data(), cs.data());
    same += cs == std::vector<uint32_t>(s, s + kT);
    cuda_err += res[size_t(b)].error;
    cpu_err += c.error;
    cuda_cert += res[size_t(b)].certified;
    cpu_cert += c.certified;
    worst_excess = std::max(worst_excess, res[size_t(b)].error / c.error - 1.0);
  }
  const double n = double(blocks) * kT, ff = double(f) * double(f);
  return {{"blocks", blocks},
          {"max_overlaps", 2},
          {"decode_mismatches", decode_mismatch},
          {"not_circular", not_circular},
          {"same_states_as_cpu", same},
          {"cuda_mse", cuda_err * ff / n},
          {"cpu_mse", cpu_err * ff / n},
          {"worst_block_error_excess_over_cpu", worst_excess},
          {"cuda_certified_fraction", double(cuda_cert) / blocks},
          {"cpu_certified_fraction", double(cpu_cert) / blocks}};
}

// The encoder alone (host API: copies in and out included) at k = 3, L = 12:
// 2^23 targets at the starting scale, after one warm-up call.
nlohmann::json encoder_run() {
  const int64_t blocks = (int64_t(1) << 23) / kT;
  const float f = 1.10f * trellis::kCodeRcp;
  std::vector<float> v = gaussian(blocks * kT, 0xe11c0de, 1.0f / f, 8);
  std::vector<uint32_t> words(size_t(blocks * kT * 3 / 32)), states(size_t(blocks * kT));
  trellis::cuda::ViterbiEncoder enc(3, 12, kT, 2);
  enc.encode(v.data(), enc.slots(), words.data(), states.data());
  const auto t0 = Clock::now();
  enc.encode(v.data(), blocks, words.data(), states.data());
  const double secs = seconds_since(t0);
  return {{"k", 3}, {"L", 12}, {"max_overlaps", 2}, {"weights", blocks * kT}, {"seconds", secs},
          {"weights_per_s", double(blocks * kT) / secs}, {"in_flight_blocks", enc.slots()}};
}

nlohmann::json layer_run(int threads) {
  struct Linear {
    const char* name;
    int64_t out, in;
    int axis;
  };
  const Linear layer[] = {{"q_proj", 5120, 5120, 1},    {"k_proj", 1024, 5120, 1}, {"v_proj", 1024, 5120, 1},
                          {"o_proj", 5120, 5120, 1},    {"gate_proj", 17408, 5120, 1},
                          {"up_proj", 17408, 5120, 1}, {"down_proj", 5120, 17408, 0}};
  std::vector<std::vector<float>> W;
  for (int i = 0; i < 7; ++i)
    W.push_back(gaussian(layer[i].out * layer[i].in, 0xbeef00ull + uint64_t(i), 0.02f, threads));
  nlohmann::json tensors = nlohmann::json::array();
  int64_t weights = 0;
  const auto t0 = Clock::now();
  trellis::cuda::ViterbiEncoder enc(3, 12, kT, 2);
  for (int i = 0; i < 7; ++i) {
    const auto t1 = Clock::now();
    trellis::QuantizeOptions o;
    o.k = 3;
    o.L = 12;
    o.T = kT;
    o.axis = layer[i].axis;
    o.encoder = &enc;
    const trellis::QuantizedTensor q = trellis::quantize_tensor(W[size_t(i)].data(), layer[i].out, layer[i].in, o);
    const double s = seconds_since(t1);
    weights += layer[i].out * layer[i].in;
    tensors.push_back({{"module", layer[i].name},
                       {"shape", {layer[i].out, layer[i].in}},
                       {"axis", layer[i].axis},
                       {"seconds", s},
                       {"rel_error", q.rel_error}});
    std::printf("  %-9s %5lld x %5lld axis %d: %.2f s, rel_error %.4f\n", layer[i].name,
                static_cast<long long>(layer[i].out), static_cast<long long>(layer[i].in), layer[i].axis, s,
                q.rel_error);
  }
  const double secs = seconds_since(t0);
  return {{"model", "Qwen3-14B decoder layer shapes, N(0, 0.02^2) weights"},
          {"k", 3},
          {"L", 12},
          {"T", kT},
          {"rotate", false},
          {"scale_passes", 2},
          {"max_overlaps", 2},
          {"weights", weights},
          {"seconds", secs},
          {"target_seconds", 15},
          {"meets_target", secs <= 15.0},
          {"weights_per_s", double(weights) / secs},
          {"tensors", tensors}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
    return 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "viterbi_bench: no CUDA device\n");
    return 1;
  }
  int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  const char* commit = std::getenv("TRELLIS_COMMIT");
  const char* driver_name = std::getenv("TRELLIS_DRIVER");
  nlohmann::json doc = {{"bench", "viterbi_cuda"},
                        {"gpu", prop.name},
                        {"sm_count", prop.multiProcessorCount},
                        {"sm_clock_mhz", clock_khz / 1000},
                        {"mem_clock_mhz", mem_clock_khz / 1000},
                        {"driver", driver_name ? driver_name : "unknown"},
                        {"driver_version", driver},
                        {"runtime_version", runtime},
                        {"host_threads", threads},
                        {"commit", commit ? commit : "unknown"},
                        {"T", kT},
                        {"data", "iid N(0,1), Box-Muller over splitmix64 (seeds of bench/viterbi_mse.cpp), "
                                 "[weights/4096, 4096] axis 1, no rotation"}};
  auto save = [&] { std::ofstream(argv[1]) << doc.dump(1) << "\n"; };

  nlohmann::json runs = nlohmann::json::array();
  for (int L : {12, 16})
    for (int k : {2, 3, 4}) {
      nlohmann::json r = mse_run(k, L);
      r["blocks_vs_cpu"] = block_check(k, L, L == 12 ? 256 : 32);
      std::printf("L %d k %d: MSE %.5f (bar %.4f) in %.2f s; blocks: %d decode mismatches, %d not circular, "
                  "%d/%d as the CPU\n",
                  L, k, r["mse"].get<double>(), r["acceptance_mse"].get<double>(), r["seconds"].get<double>(),
                  r["blocks_vs_cpu"]["decode_mismatches"].get<int>(), r["blocks_vs_cpu"]["not_circular"].get<int>(),
                  r["blocks_vs_cpu"]["same_states_as_cpu"].get<int>(), r["blocks_vs_cpu"]["blocks"].get<int>());
      std::fflush(stdout);
      runs.push_back(r);
      doc["runs"] = runs;
      save();
    }
  doc["encoder_only"] = encoder_run();
  std::printf("encoder alone, k = 3, L = 12: %.3g weights/s\n", doc["encoder_only"]["weights_per_s"].get<double>());
  save();
  std::printf("Qwen3-14B-shaped layer, k = 3, L = 12:\n");
  doc["qwen3_14b_layer"] = layer_run(threads);
  std::printf("layer: %.2f s (bar 15 s)\n", doc["qwen3_14b_layer"]["seconds"].get<double>());
  save();
  return 0;
}
