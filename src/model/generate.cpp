// The generation loop (contract in trellis/model/generate.hpp).
#include "trellis/model/generate.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "trellis/error.hpp"

namespace trellis::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

GenerationStats generate(Session& session, std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                         std::span<const int32_t> stop_ids, const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) throw Error("generate: the prompt has no tokens");
  if (session.position() + int64_t(prompt.size()) > session.context())
    throw Error("prompt is " + std::to_string(session.position() + int64_t(prompt.size())) +
                " tokens, longer than the context of " + std::to_string(session.context()) + " tokens");
  GenerationStats stats;
  stats.prompt_tokens = int64_t(prompt.size());
  // The next token after `tokens`: the backend's argmax when greedy, else the sampler on the logits.
  std::vector<float> logits;
  const auto next = [&](std::span<const int32_t> tokens) {
    if (sampler.greedy()) return session.forward_argmax(tokens);
    const std::span<const float> last = session.forward(tokens);
    logits.assign(last.begin(), last.end());
    return sampler.sample(logits, session.tokens());
  };
  auto t0 = std::chrono::steady_clock::now();
  int32_t id = next(prompt);
  stats.prompt_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (stats.generated_tokens == max_new) break;
    if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
      stats.stop = StopReason::stop_token;
      break;
    }
    ++stats.generated_tokens;
    if (!on_token(id)) {
      stats.stop = StopReason::callback;
      break;
    }
    if (stats.generated_tokens == max_new) break;
    if (session.position() == session.context()) {
      stats.stop = StopReason::context_full;
      break;
    }
    id = next(std::span(&id, 1));
    ++stats.decode_steps;
  }
  stats.decode_seconds = seconds_since(t0);
  return stats;
}

}  // namespace trellis::model
