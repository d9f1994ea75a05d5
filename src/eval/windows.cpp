// Evaluation windows and a model run over them (contract in trellis/eval/windows.hpp).
#include "trellis/eval/windows.hpp"

#include <algorithm>
#include <string>

#include "trellis/error.hpp"
#include "trellis/eval/token_scores.hpp"

namespace trellis::eval {

WindowPlan plan_windows(int64_t tokens, int64_t context, int64_t max_windows) {
  if (context < 2)
    throw Error("context " + std::to_string(context) + ": a window needs at least 2 tokens (one predicted)");
  if (tokens < context)
    throw Error("the text is " + std::to_string(tokens) + " tokens, fewer than one window of " +
                std::to_string(context) + " (use a longer text or a smaller -c)");
  int64_t count = tokens / context;
  if (max_windows > 0) count = std::min(count, max_windows);
  return {context, count};
}

WindowRunner::WindowRunner(const model::Model& model, int64_t context)
    : session_(model, context), vocab_(model.arch().vocab) {}

std::span<const float> WindowRunner::log_probs(std::span<const int32_t> window) {
  session_.rewind(0);
  const auto logits = session_.forward(window, /*all_logits=*/true);
  const size_t rows = window.size() - 1, v = size_t(vocab_);
  out_.resize(rows * v);
  for (size_t i = 0; i < rows; ++i)
    log_softmax(logits.subspan(i * v, v), std::span<float>(out_).subspan(i * v, v));
  return out_;
}

}  // namespace trellis::eval
