// The generation loop (contract in trellis/model/generate.hpp).
#include "trellis/model/generate.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "trellis/error.hpp"

namespace trellis::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The pipelined loop (greedy, and sampling where the largest logits
// decide): the one-token forward of a token is launched before the host has
// the token (Session::launch_next), whenever the loop would run it should
// the token be reported; then the token is taken and checked. When it stops
// the loop after all (a stop token, on_token returning false), that forward
// is taken back: its token discarded and its position rewound. So the
// device runs one forward while the host reports the last token and
// prepares the next. Sampling: each launched forward's choice
// (choose_from_top, on the device where the backend has one) gets its own
// draw, taken in launch order; a forward taken back gives its draw back to
// the sampler, so the n-th token takes the n-th draw, as the synchronous
// loop's would. A declined choice is sampled from the whole row
// (Session::resample_declined) with its draw.
GenerationStats generate_pipelined(Session& session, std::span<const int32_t> prompt, int64_t max_new,
                                   Sampler& sampler, std::span<const int32_t> stop_ids,
                                   const std::function<bool(int32_t)>& on_token, GenerationStats stats) {
  const bool greedy = sampler.greedy();
  const int count = greedy ? 0 : sampler.top_count(session.vocab());
  std::deque<double> drawn;  // the launched forwards' draws, oldest first
  const auto next = [&]() -> NextToken {
    if (greedy) return {};
    const double u = sampler.draw();
    drawn.push_back(u);
    return {count, top_choice_params(sampler.params()), u};
  };
  // The oldest launched forward's draw, now that its token is taken.
  const auto take_draw = [&] {
    double u = 0.0;
    if (!greedy) u = drawn.front(), drawn.pop_front();
    return u;
  };
  const auto take_back = [&] {
    session.take_token();
    if (!greedy) sampler.give_back(take_draw());
    session.rewind(session.position() - 1);
  };
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  session.launch(prompt, next());
  bool first = true;
  for (;;) {
    // The loop below runs the token's forward if it reports the token, is
    // not at max_new after it and the context has room.
    const bool room = stats.generated_tokens + 1 < max_new && session.position() < session.context();
    bool ahead = room;
    if (ahead) session.launch_next(next());
    int32_t id = session.take_token();
    if (id == Backend::kDeclined) {
      const double u = take_draw();
      id = session.resample_declined([&](std::span<const float> row) {
        logits.assign(row.begin(), row.end());
        return sampler.sample(logits, session.tokens(), u);
      });
      if (ahead && !greedy) sampler.give_back(take_draw());  // resample_declined took that forward back
      ahead = false;
    } else {
      take_draw();
    }
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
    if (!room) {
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
  if (max_new < 0) throw Error("generate: max_new (the most tokens to generate) must be 0 or more, got " +
                               std::to_string(max_new));
  if (session.position() + int64_t(prompt.size()) > session.context())
    throw Error("prompt is " + std::to_string(session.position() + int64_t(prompt.size())) +
                " tokens, longer than the context of " + std::to_string(session.context()) + " tokens");
  GenerationStats stats;
  stats.prompt_tokens = int64_t(prompt.size());
  if (sampler.greedy() || sampler.top_count(session.vocab()) > 0)
    return generate_pipelined(session, prompt, max_new, sampler, stop_ids, on_token, stats);
  // Sampling from the whole row (a repetition penalty, top-k 0 or above
  // Sampler::kMaxTopK): the host has each token before the next forward.
  std::vector<float> logits;
  const auto next = [&](std::span<const int32_t> tokens) {
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
