// libFuzzer target: a whole safetensors file image through the reader, then
// every `<x>.weight`/`<x>.scales` pair through the checked trellis geometry
// under a few parameter sets. A trellis::Error is a clean rejection; any
// other exception, a sanitizer report, or a broken invariant of an accepted
// file (tensor bytes outside the input, sizes not matching dtype × shape) is
// a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "trellis/error.hpp"
#include "trellis/format/safetensors.hpp"
#include "trellis/format/trellis_tensor.hpp"

namespace {

using namespace trellis::format;

constexpr TrellisParams kParams[] = {
    {2, 12, 256, 1, Rotation::none},
    {3, 12, 256, 0, Rotation::none},
    {4, 16, 32, 1, Rotation::hadamard},
};

void check_invariants(const SafetensorsContents& c, std::span<const std::byte> file) {
  for (const TensorInfo& t : c.tensors) {
    const bool inside = t.data.data() >= file.data() && t.data.data() + t.data.size() <= file.data() + file.size();
    const bool sized = t.data.size() == uint64_t(t.numel()) * dtype_size(t.dtype);
    const bool placed = t.data.data() == file.data() + t.file_offset;
    if (!inside || !sized || !placed) std::abort();
  }
}

void try_trellis(const SafetensorsContents& c) {
  for (const TensorInfo& w : c.tensors) {
    if (!w.name.ends_with(".weight")) continue;
    const std::string module = w.name.substr(0, w.name.size() - 7);
    const TensorInfo *scales = nullptr, *signs = nullptr;
    for (const TensorInfo& t : c.tensors) {
      if (t.name == module + ".scales") scales = &t;
      if (t.name == module + ".signs") signs = &t;
    }
    if (!scales) continue;
    for (const TrellisParams& p : kParams) {
      try {
        const TrellisTensor t = check_trellis_tensor(module, p, w, *scales, signs);
        if (t.geom.total_words() * 4 != int64_t(w.data.size())) std::abort();
      } catch (const trellis::Error&) {
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto file = std::as_bytes(std::span(data, size));
  try {
    const SafetensorsContents c = parse_safetensors(file, "fuzz.safetensors");
    check_invariants(c, file);
    try_trellis(c);
  } catch (const trellis::Error&) {
  }
  return 0;
}
