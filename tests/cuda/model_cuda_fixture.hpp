// Shared by the CUDA model tests: the shipped models opened on the CUDA and
// CPU backends (one each per test binary), the reference logits, and the
// comparisons. Every test first skips, visibly, without a CUDA device.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/format/safetensors.hpp"
#include "trellis/model/cpu_backend.hpp"
#include "trellis/model/cuda_backend.hpp"
#include "trellis/model/generate.hpp"
#include "trellis/model/model.hpp"
#include "trellis/model/session.hpp"

#define TRELLIS_REQUIRE_GPU() \
  if (!trellis::model::cuda_device_available()) GTEST_SKIP() << "no CUDA device: CUDA model test not run"

namespace trellis::test {

inline const std::filesystem::path kBf16Dir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m";
inline const std::filesystem::path k3BitDir = TRELLIS_SOURCE_DIR "/models/shakespeare-qwen3-15m-3bit";
constexpr int64_t kRefTokens = 128;

struct ReferenceLogits {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [128, vocab]
};

inline ReferenceLogits reference_logits() {
  const format::SafetensorsFile f(kBf16Dir / "reference_logits.safetensors");
  const auto tokens = f.find("tokens")->values<int32_t>();
  const auto logits = f.find("logits")->values<float>();
  return {{tokens.begin(), tokens.end()}, {logits.begin(), logits.end()}};
}

inline nlohmann::json reference_json() {
  std::ifstream in(kBf16Dir / "reference.json");
  return nlohmann::json::parse(in);
}

inline int64_t top1(std::span<const float> row) { return std::max_element(row.begin(), row.end()) - row.begin(); }

struct Agreement {
  double max_abs = 0;  // +inf when any value is not finite
  int same_top1 = 0;
  int rows = 0;
};

// Row by row over `rows` rows of `vocab` logits.
inline Agreement compare_logits(std::span<const float> got, std::span<const float> ref, int64_t vocab) {
  Agreement a;
  a.rows = int(ref.size() / size_t(vocab));
  for (int64_t t = 0; t < a.rows; ++t) {
    const auto g = got.subspan(size_t(t * vocab), size_t(vocab));
    const auto r = ref.subspan(size_t(t * vocab), size_t(vocab));
    for (int64_t i = 0; i < vocab; ++i) {
      const double d = std::fabs(double(g[size_t(i)]) - double(r[size_t(i)]));
      a.max_abs = std::isfinite(g[size_t(i)]) ? std::max(a.max_abs, d) : INFINITY;
    }
    a.same_top1 += top1(g) == top1(r);
  }
  return a;
}

// Logits of every token: one batched forward (the prefill path).
inline std::vector<float> batched_logits(const model::Model& m, std::span<const int32_t> tokens) {
  model::Session s(m, int64_t(tokens.size()), int64_t(tokens.size()));
  const auto l = s.forward(tokens, true);
  return {l.begin(), l.end()};
}

// Logits of every token: a prefill of `prefill` tokens, then one token per
// forward (the decode path, CUDA graphs on a CUDA backend).
inline std::vector<float> incremental_logits(const model::Model& m, std::span<const int32_t> tokens,
                                             int64_t prefill) {
  const int64_t vocab = m.arch().vocab;
  model::Session s(m, int64_t(tokens.size()));
  std::vector<float> out(tokens.size() * size_t(vocab));
  const auto pre = s.forward(tokens.first(size_t(prefill)), true);
  std::copy(pre.begin(), pre.end(), out.begin());
  for (size_t t = size_t(prefill); t < tokens.size(); ++t) {
    const auto row = s.forward(tokens.subspan(t, 1));
    std::copy(row.begin(), row.end(), out.begin() + int64_t(t) * vocab);
  }
  return out;
}

inline std::vector<int32_t> greedy(const model::Model& m, std::span<const int32_t> prompt, int64_t n) {
  model::Session s(m, 256);
  model::Sampler sampler({.temperature = 0});
  std::vector<int32_t> got;
  model::generate(s, prompt, n, sampler, {}, [&](int32_t id) {
    got.push_back(id);
    return true;
  });
  return got;
}

}  // namespace trellis::test
