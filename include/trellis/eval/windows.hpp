// Evaluation windows and a model run over them.
//
// The scored tokens are cut into non-overlapping windows of `context`
// tokens: window w = tokens[w·c, (w+1)·c), w < count, count = floor(n / c)
// (at most max_windows when that is > 0); a trailing partial window is
// dropped. Each window runs as a fresh sequence at positions 0 … c−1 and
// gives c − 1 predictions: row i (the model after tokens 0 … i) predicts
// token i + 1. The first token is context only.
// Errors (trellis::Error): c < 2 ("a window needs at least 2 tokens"), or
// fewer than c tokens (no whole window).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "trellis/model/model.hpp"
#include "trellis/model/session.hpp"

namespace trellis::eval {

struct WindowPlan {
  int64_t context = 0;
  int64_t count = 0;
  int64_t predictions() const { return count * (context - 1); }
};

WindowPlan plan_windows(int64_t tokens, int64_t context, int64_t max_windows = 0);

// Tokens of window w.
inline std::span<const int32_t> window_tokens(std::span<const int32_t> tokens, const WindowPlan& plan, int64_t w) {
  return tokens.subspan(size_t(w * plan.context), size_t(plan.context));
}

// One model's log-probabilities over windows: a Session of `context` positions, rewound per window.
class WindowRunner {
 public:
  WindowRunner(const model::Model& model, int64_t context);

  // log_softmax of the logits of every prediction of `window` (context
  // tokens): [context − 1, vocab] fp32, row-major; valid until the next call.
  std::span<const float> log_probs(std::span<const int32_t> window);
  int64_t vocab() const { return vocab_; }

 private:
  model::Session session_;
  int64_t vocab_;
  std::vector<float> out_;
};

}  // namespace trellis::eval
