// The decoder forward pass, written once against the Backend ops, for llama
// and qwen3 (trellis/model/architecture.hpp). For a batch of M tokens at
// positions pos0 … pos0+M−1, with x the residual stream [M, hidden]:
//
//   x = embed(tokens)
//   per layer:
//     h = rmsnorm(x, input_norm)
//     q = h Wqᵀ, k = h Wkᵀ, v = h Wvᵀ
//     qwen3: q, k = rmsnorm per head (q_norm, k_norm)
//     q, k = rope(q, k at their positions)
//     x += attention(q, k, v; KV cache) Woᵀ
//     h = rmsnorm(x, post_attention_norm)
//     x += (silu(h Wgᵀ) ⊙ (h Wuᵀ)) Wdᵀ
//   logits = rmsnorm(x, final_norm) Wheadᵀ   (last row, or every row)
// in the Backend's fused ops (backend.hpp): the projections, QK-norm and RoPE
// are one qkv_rope; each residual branch ends in one op with the add and the
// norm that follows it (linear_add_rmsnorm: o_proj and the post-attention
// norm; mlp_add_rmsnorm: the MLP and the next layer's input norm or the final
// norm, which is then computed for every row).
#include <algorithm>
#include <string>

#include "trellis/error.hpp"
#include "trellis/model/session.hpp"

namespace trellis::model {

Session::Session(const Model& model, int64_t context, int64_t max_batch) : model_(&model) {
  const Architecture& a = model.arch();
  if (context < 1) throw Error("session: the context must hold at least one token, got " + std::to_string(context));
  max_batch_ = std::clamp<int64_t>(max_batch, 1, context);
  Backend& b = model.backend();
  cache_ = b.make_kv_cache(a.layers, a.kv_heads, a.head_dim, context);
  x_ = b.alloc(max_batch_, a.hidden);
  h_ = b.alloc(max_batch_, a.hidden);
  q_ = b.alloc(max_batch_, a.heads * a.head_dim);
  k_ = b.alloc(max_batch_, a.kv_heads * a.head_dim);
  v_ = b.alloc(max_batch_, a.kv_heads * a.head_dim);
  attn_ = b.alloc(max_batch_, a.heads * a.head_dim);
  proj_ = b.alloc(max_batch_, a.hidden);
  mlp_ = b.alloc(max_batch_, a.intermediate);
  logits_ = b.alloc(1, a.vocab);
  b.reserve(model.weights(), *cache_, max_batch_);
}

void Session::check_fits(int64_t n) const {
  if (n == 0) throw Error("session: forward needs at least one token");
  if (position() + n > context())
    throw Error("session: " + std::to_string(n) + " tokens at position " + std::to_string(position()) +
                " do not fit the context of " + std::to_string(context()) + " tokens");
}

void Session::check_all_taken(const char* what) const {
  if (!launched_.empty())
    throw Error(std::string("session: ") + what + " with " + std::to_string(launched_.size()) +
                " launched forward(s) whose tokens are not taken");
}

std::span<const float> Session::forward(std::span<const int32_t> tokens, bool all_logits) {
  const int64_t n = int64_t(tokens.size()), vocab = model_->arch().vocab;
  check_all_taken("forward");
  check_fits(n);
  last_taken_.reset();
  declined_.reset();
  host_logits_.resize(size_t((all_logits ? n : 1) * vocab));
  Backend& b = model_->backend();
  if (!all_logits) {
    b.to_host(run_to_last(tokens), host_logits_.data());
    return host_logits_;
  }
  for (int64_t begin = 0; begin < n; begin += max_batch_) {
    const int64_t m = std::min(max_batch_, n - begin);
    b.to_host(run_batch(tokens.subspan(size_t(begin), size_t(m)), Logits::every_row),
              host_logits_.data() + begin * vocab);
  }
  return host_logits_;
}

int32_t Session::forward_argmax(std::span<const int32_t> tokens) {
  check_all_taken("forward_argmax");
  check_fits(int64_t(tokens.size()));
  last_taken_.reset();
  declined_.reset();
  return model_->backend().argmax(run_to_last(tokens));
}

int64_t Session::vocab() const { return model_->arch().vocab; }

void Session::queue_next(const Act& row, const NextToken& next) {
  if (next.count > 0) model_->backend().choose_to_next(row, next.count, next.params, next.u);
  else model_->backend().argmax_to_next(row);
}

void Session::launch(std::span<const int32_t> tokens, const NextToken& next) {
  check_fits(int64_t(tokens.size()));
  const int64_t last = position() + int64_t(tokens.size()) - 1;
  declined_.reset();
  queue_next(run_to_last(tokens), next);
  launched_.push_back({-1, last});
}

void Session::launch_next(const NextToken& next) {
  if (launched_.empty()) {
    // The newest token is on the host already: it goes in as a host token.
    if (!last_taken_) throw Error("session: launch_next needs an earlier launch");
    const int32_t token = *last_taken_;
    return launch(std::span(&token, 1), next);
  }
  check_fits(1);
  const int64_t at = position();
  const int32_t token = Backend::kNextToken;
  queue_next(run_to_last(std::span(&token, 1)), next);
  launched_.push_back({at, at});
}

int32_t Session::take_token() {
  if (launched_.empty()) throw Error("session: take_token with no launched forward");
  declined_.reset();
  const int32_t token = model_->backend().take_token();
  const Launched taken = launched_.front();
  launched_.pop_front();
  if (token == Backend::kDeclined) {
    declined_ = taken.last_input;
    return token;
  }
  if (!launched_.empty() && launched_.front().placeholder >= 0) tokens_[size_t(launched_.front().placeholder)] = token;
  last_taken_ = token;
  return token;
}

int32_t Session::resample_declined(const std::function<int32_t(std::span<const float>)>& pick) {
  if (!declined_) throw Error("session: resample_declined needs take_token to have declined a token just before");
  const int64_t at = *declined_;
  // The forwards launched after the declined one read token 0 in its place.
  while (!launched_.empty()) {
    model_->backend().take_token();
    launched_.pop_front();
  }
  const int32_t input = tokens_[size_t(at)];
  rewind(at);
  const int32_t token = pick(forward(std::span(&input, 1)));
  last_taken_ = token;
  return token;
}

Act Session::run_to_last(std::span<const int32_t> tokens) {
  const int64_t n = int64_t(tokens.size());
  int64_t begin = 0;
  for (; n - begin > max_batch_; begin += max_batch_)
    run_batch(tokens.subspan(size_t(begin), size_t(max_batch_)), Logits::none);
  return run_batch(tokens.subspan(size_t(begin)), Logits::last_row);
}

void Session::rewind(int64_t position) {
  check_all_taken("rewind");
  last_taken_.reset();
  declined_.reset();
  if (position < 0 || position > this->position())
    throw Error("session: cannot rewind to position " + std::to_string(position) + " (holding " +
                std::to_string(this->position()) + ")");
  tokens_.resize(size_t(position));
}

const Act& Session::logits_rows(int64_t rows) {
  if (logits_.act.rows < rows) logits_ = model_->backend().alloc(rows, model_->arch().vocab);
  return logits_.act;
}

Act Session::run_batch(std::span<const int32_t> tokens, Logits logits) {
  const Architecture& a = model_->arch();
  const ModelWeights& w = model_->weights();
  Backend& b = model_->backend();
  const int64_t M = int64_t(tokens.size()), pos0 = position();
  const Act x = x_.act.slice(0, M), h = h_.act.slice(0, M), q = q_.act.slice(0, M), k = k_.act.slice(0, M),
            v = v_.act.slice(0, M), attn = attn_.act.slice(0, M), proj = proj_.act.slice(0, M),
            mlp = mlp_.act.slice(0, M);

  b.embed(*w.embedding, tokens, x);
  b.rmsnorm(x, *w.layers.front().input_norm, a.rms_eps, h);
  for (int64_t i = 0; i < a.layers; ++i) {
    const LayerWeights& l = w.layers[size_t(i)];
    b.qkv_rope(*l.q, *l.k, *l.v, h, l.q_norm.get(), l.k_norm.get(), a.rms_eps, *w.rope_inv_freq, pos0, q, k, v);
    b.attention(q, k, v, *cache_, i, pos0, attn);
    b.linear_add_rmsnorm(*l.o, attn, proj, x, *l.post_attention_norm, a.rms_eps, h);
    const VectorWeight& next_norm = i + 1 < a.layers ? *w.layers[size_t(i + 1)].input_norm : *w.final_norm;
    b.mlp_add_rmsnorm(*l.gate_up, *l.down, h, mlp, proj, x, next_norm, a.rms_eps, h);
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (logits == Logits::none) return {};

  const int64_t first = logits == Logits::every_row ? 0 : M - 1, rows = M - first;
  const Act out = logits_rows(rows).slice(0, rows);
  b.linear(*w.lm_head, h.slice(first, rows), out);
  return out;
}

}  // namespace trellis::model
