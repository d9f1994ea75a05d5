// libFuzzer target: arbitrary bytes as config.json text (model fields and
// the trellis quantization entries). A trellis::Error is a clean rejection;
// any other exception (e.g. a stray nlohmann::json error) or a sanitizer
// report is a finding, as is an accepted entry outside SPEC §1's ranges.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trellis/error.hpp"
#include "trellis/format/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const auto c = trellis::format::parse_model_config(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    if (c.hidden_size <= 0 || c.head_dim <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) std::abort();
    for (const auto& [module, p] : c.quantization.modules)
      if (p.k < 1 || p.k > 8 || p.L <= p.k || p.L > 16 || p.T <= 0 || p.T % 32 != 0) std::abort();
  } catch (const trellis::Error&) {
  }
  return 0;
}
