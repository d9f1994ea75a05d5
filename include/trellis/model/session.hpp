// Session: one sequence running through a Model — its KV cache, its
// activation buffers and the tokens it holds. Borrows the Model, which must
// outlive it.
//
// forward(tokens) runs the decoder (src/model/forward.cpp) on the tokens at
// positions position() … position()+n−1 and advances position(). Prompts
// longer than max_batch run as consecutive batches of at most max_batch
// tokens (each one batched forward), which gives the same result as one.
// Returns fp32 logits [1, vocab] of the last token, or [n, vocab] of every
// token with all_logits; the span is valid until the next forward.
// forward_argmax(tokens) runs the same forward and returns the greedy next
// token, model::argmax of the last token's logits, found by the backend (on
// CUDA on the GPU: only the id comes back, not the logits).
// rewind(p) forgets positions ≥ p (p ≤ position()), so a chat can keep the
// prefix it shares with the next prompt.
// Pipelined decoding: launch(tokens, next) runs the forward of tokens, and
// launch_next(next) the one-token forward of the newest launched forward's
// token, without waiting for it; `next` says how the backend finds that
// token: the argmax (count 0: Backend::argmax_to_next, greedy decoding) or
// the choice from the count largest logits with the given parameters and
// draw (Backend::choose_to_next, sampling). take_token() returns the
// launched forwards' tokens in order. A token's position holds
// Backend::kNextToken in tokens() until it is taken. Where take_token()
// gives Backend::kDeclined (the choice was not settled by the largest
// logits), resample_declined(pick) takes back the
// forwards launched after it, runs the declined forward's last token again
// for its whole row of logits (the same values: the forward is
// deterministic) and returns pick(row), the token the caller then has.
// forward, forward_argmax and rewind need every launched token taken first.
// Errors (trellis::Error): no tokens, or position()+n beyond the context;
// launch_next before any launch; take_token with none to take;
// resample_declined after anything but a declined take_token; a forward or
// rewind with launched tokens not yet taken.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "trellis/model/backend.hpp"
#include "trellis/model/model.hpp"

namespace trellis::model {

// How a launched forward's next token is found (Session::launch).
struct NextToken {
  int count = 0;  // 0: the argmax; else choose_from_top from this many largest logits
  TopChoiceParams params;
  double u = 0.0;  // the choice's draw
};

class Session {
 public:
  Session(const Model& model, int64_t context, int64_t max_batch = 512);

  std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits = false);
  int32_t forward_argmax(std::span<const int32_t> tokens);
  void launch(std::span<const int32_t> tokens, const NextToken& next = {});
  void launch_next(const NextToken& next = {});
  int32_t take_token();
  int32_t resample_declined(const std::function<int32_t(std::span<const float>)>& pick);
  void rewind(int64_t position);

  int64_t position() const { return int64_t(tokens_.size()); }
  int64_t context() const { return cache_->capacity; }
  int64_t vocab() const;
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  enum class Logits { none, last_row, every_row };
  void check_fits(int64_t n) const;
  void check_all_taken(const char* what) const;
  // The decoder on one batch; the logits asked for, on the backend (an empty Act for none).
  Act run_batch(std::span<const int32_t> tokens, Logits logits);
  // The tokens in batches of at most max_batch; the last token's logits, on the backend.
  Act run_to_last(std::span<const int32_t> tokens);
  const Act& logits_rows(int64_t rows);

  const Model* model_;
  int64_t max_batch_;
  std::unique_ptr<KvCache> cache_;
  ActBuffer x_, h_, q_, k_, v_, attn_, proj_, mlp_, logits_;
  std::vector<int32_t> tokens_;
  std::vector<float> host_logits_;
  void queue_next(const Act& row, const NextToken& next);
  // Launched forwards whose tokens are not yet taken, oldest first: the
  // position that its input token holds as kNextToken (-1: its inputs came
  // from the host), and the position of its last input token.
  struct Launched {
    int64_t placeholder, last_input;
  };
  std::deque<Launched> launched_;
  // The newest taken token, once there is one; the last input position of
  // the forward whose token take_token() just declined.
  std::optional<int32_t> last_taken_;
  std::optional<int64_t> declined_;
};

}  // namespace trellis::model
