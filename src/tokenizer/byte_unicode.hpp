// The GPT-2 byte <-> unicode map of byte-level BPE: every byte value is shown
// as one printable code point (printable Latin-1 bytes map to themselves, the
// other 68 bytes to U+0100.. in order), so vocabulary entries are text.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::tokenizer {

// The UTF-8 text of the code point that byte b is shown as.
const std::string& byte_to_unicode(unsigned char b);

// The byte a code point stands for, or nullopt when it is not one of the 256.
std::optional<unsigned char> unicode_to_byte(char32_t c);

// Raw bytes -> their byte-level text ("Hello world" -> "HelloĠworld").
std::string bytes_to_unicode_text(std::string_view bytes);

// Byte-level text -> raw bytes; code points outside the map are kept as
// their own UTF-8 (as Hugging Face's ByteLevel decoder does).
std::string unicode_text_to_bytes(std::string_view text);

}  // namespace trellis::tokenizer
