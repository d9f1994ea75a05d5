// The generation loop. generate() runs `prompt` (the tokens that follow what
// the session already holds) as one batched forward, then repeats:
//   sample a token from the last logits (history = the session's tokens;
//   a greedy sampler's token is the backend's argmax, Session::forward_argmax,
//   and no logits come back);
//   stop if it is one of stop_ids (it is not reported);
//   report it to on_token (returning false stops);
//   stop after max_new tokens or when the context is full;
//   run it through a one-token forward.
// The last reported token is not run, so the session holds the prompt and
// every reported token but the last. Greedy decoding, and sampling where
// the largest logits decide it (Sampler::top_count > 0: top-k, no
// repetition penalty), are pipelined: a token's one-token forward is
// launched before the token reaches the host (Session::launch_next; the
// backend finds the token: the argmax, or the sampler's choice from the
// largest logits, Backend::choose_to_next) wherever the loop would run it
// once the token is reported, and taken back (its position rewound, its
// draw given back to the sampler) where the token stops the loop instead;
// the tokens, the session, the sampler's draws and the stats are those of
// the loop above. Errors (trellis::Error): an empty prompt, one that does
// not fit the context ("prompt is N tokens, ..."), max_new below 0.
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "trellis/model/sampling.hpp"
#include "trellis/model/session.hpp"

namespace trellis::model {

enum class StopReason { length, stop_token, context_full, callback };

struct GenerationStats {
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;  // one-token forwards
  double decode_seconds = 0;  // sampling and one-token forwards after the prompt
  StopReason stop = StopReason::length;

  double prompt_tokens_per_second() const { return prompt_seconds > 0 ? double(prompt_tokens) / prompt_seconds : 0; }
  double generation_tokens_per_second() const {
    return decode_seconds > 0 ? double(decode_steps) / decode_seconds : 0;
  }
};

GenerationStats generate(Session& session, std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                         std::span<const int32_t> stop_ids, const std::function<bool(int32_t)>& on_token);

}  // namespace trellis::model
