// Streaming decode that emits only complete UTF-8 (see stream_decoder.hpp).
#include "trellis/tokenizer/stream_decoder.hpp"

#include "utf8.hpp"

namespace trellis::tokenizer {

std::string StreamDecoder::push(int32_t id) {
  const std::string& bytes = tokenizer_->token_bytes(id);
  if (!(skip_special_ && tokenizer_->is_special(id))) pending_ += bytes;
  const std::size_t ready = utf8::complete_prefix(pending_);
  std::string out = utf8::repair(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = utf8::repair(pending_);
  pending_.clear();
  return out;
}

}  // namespace trellis::tokenizer
