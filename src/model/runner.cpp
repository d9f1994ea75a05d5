// Runner (contract in trellis/model/runner.hpp).
#include "trellis/model/runner.hpp"

#include <algorithm>

#include "trellis/error.hpp"
#include "trellis/tokenizer/stream_decoder.hpp"

namespace trellis::model {
namespace {

tokenizer::Tokenizer load_tokenizer(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir.string() + ": not a model directory");
  if (!std::filesystem::exists(dir / "tokenizer.json"))
    throw Error(dir.string() + ": no tokenizer.json (the model directory needs its tokenizer)");
  return tokenizer::Tokenizer::from_dir(dir);
}

int64_t context_of(const Model& model, int64_t requested) {
  if (requested != 0) return requested;
  const int64_t max = model.arch().max_positions;
  return max > 0 ? std::min(max, kDefaultContext) : kDefaultContext;
}

std::vector<int32_t> stop_ids_of(const tokenizer::Tokenizer& t, const Model& m) {
  std::vector<int32_t> ids = t.eos_ids();
  for (const int64_t id : m.dir().config().eos_token_ids) ids.push_back(int32_t(id));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

Runner::Runner(const RunnerOptions& options)
    : tokenizer_(load_tokenizer(options.dir)),
      model_(options.dir, make_backend(options.device)),
      session_(model_, context_of(model_, options.context)),
      stop_ids_(stop_ids_of(tokenizer_, model_)) {}

std::vector<int32_t> Runner::encode_prompt(std::string_view text) const {
  std::vector<int32_t> ids;
  if (tokenizer_.add_bos() && tokenizer_.bos_id()) ids.push_back(*tokenizer_.bos_id());
  const std::vector<int32_t> body = tokenizer_.encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

GenerationStats Runner::complete(std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                                 const TextSink& on_text) {
  session_.rewind(0);
  return continue_with(prompt, max_new, sampler, on_text);
}

GenerationStats Runner::continue_with(std::span<const int32_t> prompt, int64_t max_new, Sampler& sampler,
                                      const TextSink& on_text) {
  const std::vector<int32_t>& held = session_.tokens();
  const size_t limit = std::min(held.size(), prompt.size() ? prompt.size() - 1 : 0);
  size_t shared = 0;
  while (shared < limit && held[shared] == prompt[shared]) ++shared;
  session_.rewind(int64_t(shared));
  tokenizer::StreamDecoder decoder(tokenizer_);
  const GenerationStats stats =
      generate(session_, prompt.subspan(shared), max_new, sampler, stop_ids_, [&](int32_t id) {
        if (const std::string piece = decoder.push(id); !piece.empty()) on_text(piece);
        return true;
      });
  if (const std::string rest = decoder.finish(); !rest.empty()) on_text(rest);
  return stats;
}

}  // namespace trellis::model
