// trellis::tokenizer::StreamDecoder — turns a stream of generated ids into
// text pieces that are always complete UTF-8. A multi-byte character split
// across tokens is held back until its last byte arrives; bytes that can
// never become a character are emitted as U+FFFD. The concatenation of all
// push() results and finish() equals Tokenizer::decode of the whole stream.
// Borrows the Tokenizer, which must outlive it.
#pragma once
#include <cstdint>
#include <string>

#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::tokenizer {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(&tokenizer), skip_special_(skip_special) {}

  // The text that became complete with this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back, unfinished characters as U+FFFD; resets.
  std::string finish();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes not yet emitted
};

}  // namespace trellis::tokenizer
