// Runner: a model directory ready to turn text into text — its Tokenizer,
// its Model on the chosen device and one Session — for `trellis run` and
// anything else that wants text in and streamed text out.
//
// Loading checks, in order, with a trellis::Error naming what is wrong: the
// directory exists, tokenizer.json is present ("<dir>: no tokenizer.json ..."), the tokenizer,
// the model (architecture, weights; trellis/model/model.hpp), the context
// (≥ 1). The context defaults to the model's max_position_embeddings, at
// most kDefaultContext (kDefaultContext when the config does not say).
//
// complete(prompt_tokens, ...) runs a fresh sequence (the session is
// rewound to 0); chat continuation keeps the session's tokens that the new
// prompt starts with and runs only the rest (continue_with). Generated text
// is streamed to on_text in pieces that are complete UTF-8; generation stops
// at the tokenizer's and config's EOS ids.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/model/device.hpp"
#include "trellis/model/generate.hpp"
#include "trellis/model/model.hpp"
#include "trellis/model/session.hpp"
#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::model {

inline constexpr int64_t kDefaultContext = 4096;

struct RunnerOptions {
  std::filesystem::path dir;
  Device device = Device::cpu;
  int64_t context = 0;  // 0: the default above
};

class Runner {
 public:
  explicit Runner(const RunnerOptions& options);

  // A plain prompt's tokens: the BOS token first when the tokenizer adds one.
  std::vector<int32_t> encode_prompt(std::string_view text) const;

  using TextSink = std::function<void(std::string_view)>;
  // A fresh sequence: `prompt` from position 0.
  GenerationStats complete(std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                           const TextSink& on_text);
  // The session keeps its longest prefix shared with `prompt` (at least one
  // prompt token is always run) and generates after the whole prompt.
  GenerationStats continue_with(std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                                const TextSink& on_text);

  // The session's length in tokens (prompt and generated).
  int64_t context() const { return session_.context(); }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  const Model& model() const { return model_; }

 private:
  tokenizer::Tokenizer tokenizer_;
  Model model_;
  Session session_;
  std::vector<int32_t> stop_ids_;
};

}  // namespace trellis::model
