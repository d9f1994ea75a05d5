// The generation loop (contract in trellis/model/generate.hpp).
#include "trellis/model/generate.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "trellis/error.hpp"

namespace trellis::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Greedy: the same loop, pipelined. The one-token forward of a token is
// launched before the host has the token (Session::launch_argmax_next),
// whenever the loop would run it should the token be reported; then the
// token is taken and checked. When it stops the loop after all (a stop
// token, on_token returning false), that forward is taken back: its token
// discarded and its position rewound. So the device runs one forward while
// the host reports the last token and prepares the next.
GenerationStats generate_greedy(Session& session, std::span<const int32_t> prompt, int64_t max_new,
                                std::span<const int32_t> stop_ids, const std::function<bool(int32_t)>& on_token,
                                GenerationStats stats) {
  const auto take_back = [&] {
    session.take_token();
    session.rewind(session.position() - 1);
  };
  auto t0 = std::chrono::steady_clock::now();
  session.launch_argmax(prompt);
  bool first = true;
  for (;;) {
    // The loop below runs the token's forward if it reports the token, is
    // not at max_new after it and the context has room.
    const bool ahead = stats.generated_tokens + 1 < max_new && session.position() < session.context();
    if (ahead) session.launch_argmax_next();
    const int32_t id = session.take_token();
    if (first) {
      stats.prompt_seconds = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      first = false;
    }
    if (stats.generated_tokens == max_new) break;
    if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
      stats.stop = StopReason::stop_token;
      if (ahead) take_back();
      break;
    }
    ++stats.generated_tokens;
    if (!on_token(id)) {
      stats.stop = StopReason::callback;
      if (ahead) take_back();
      break;
    }
    if (!ahead) {
      if (stats.generated_tokens < max_new) stats.stop = StopReason::context_full;
      break;
    }
    ++stats.decode_steps;
  }
  stats.decode_seconds = seconds_since(t0);
  return stats;
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
  if (sampler.greedy()) return generate_greedy(session, prompt, max_new, stop_ids, on_token, stats);
  // The next token after `tokens`: the sampler on the logits, or on their
  // largest few where those settle it (only they come back from a device).
  std::vector<float> logits;
  const int top_count = sampler.top_count(session.vocab());
  const auto next = [&](std::span<const int32_t> tokens) {
    std::span<const float> last;
    if (top_count > 0) {
      if (const std::optional<int32_t> id = sampler.sample_top(session.forward_top(tokens, top_count))) return *id;
      last = session.last_logits();
    } else {
      last = session.forward(tokens);
    }
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
