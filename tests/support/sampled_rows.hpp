// The reference for sampled generation: each token sampled (Sampler::sample)
// from its forward's whole row of logits, one forward per token, the next
// forward fed the token just sampled; on any backend's model.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "trellis/model/model.hpp"
#include "trellis/model/sampling.hpp"
#include "trellis/model/session.hpp"

namespace trellis::test {

inline std::vector<int32_t> sampled_rows(const model::Model& m, std::span<const int32_t> prompt,
                                         const model::SamplingParams& params, int64_t n) {
  model::Session session(m, 256);
  model::Sampler sampler(params);
  std::vector<int32_t> out;
  std::vector<float> logits;
  std::span<const int32_t> input = prompt;
  int32_t id = 0;
  while (int64_t(out.size()) < n) {
    const auto row = session.forward(input);
    logits.assign(row.begin(), row.end());
    out.push_back(id = sampler.sample(logits, session.tokens()));
    input = std::span(&id, 1);
  }
  return out;
}

}  // namespace trellis::test
