// Test support: random trellis tensors and per-run seeds.
//
// test_seed() is fresh every run (std::random_device) unless the environment
// sets TRELLIS_TEST_SEED, which reproduces a failing run; seed_trace(seed)
// is the text to put in SCOPED_TRACE so a failure prints it.
// RandomTrellis holds uniformly random code words and fp16 scales of either
// sign with |scale| in [2^-8, 2^-4) for a given geometry (no encoder needed:
// every word pattern is a valid trellis tensor).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "trellis/half.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::test {

inline uint64_t test_seed() {
  if (const char* s = std::getenv("TRELLIS_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

inline std::string seed_trace(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with TRELLIS_TEST_SEED=" + std::to_string(seed) + ")";
}

struct RandomTrellis {
  TrellisGeometry geom;
  std::vector<uint32_t> codes;
  std::vector<uint16_t> scales;

  TrellisTensorView view() const { return TrellisTensorView{codes.data(), scales.data(), geom}; }
};

inline RandomTrellis random_trellis(std::mt19937_64& rng, const TrellisGeometry& g) {
  RandomTrellis t;
  t.geom = g;
  t.codes.resize(size_t(g.total_words()));
  for (auto& w : t.codes) w = uint32_t(rng());
  std::uniform_real_distribution<float> mag(1.0f / 256.0f, 1.0f / 16.0f);
  t.scales.resize(size_t(g.rows));
  for (auto& s : t.scales) s = float_to_fp16((rng() & 1) ? mag(rng) : -mag(rng));
  return t;
}

// n random bf16 activations, roughly N(0, 1).
inline std::vector<uint16_t> random_bf16(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(d(rng));
  return v;
}

}  // namespace trellis::test
