// The trellis entries of config.json's "quantization" object (alias
// "quantization_config"), SPEC §1:
//
//   "quantization": {
//     "mode": "trellis", "bits": 2, "group_size": 256,        // optional defaults
//     "model.layers.0.mlp.gate_proj": {
//       "mode": "trellis", "bits": 3, "group_size": 256,
//       "trellis": {"L": 12, "code": "1mad", "axis": 1},
//       "rotation": "hadamard"                                 // optional (SPEC §5)
//     }, ...
//   }
//
// A module entry's missing mode/bits/group_size take the top-level defaults.
// Modules without an entry are not quantized. Rejected (trellis::Error naming
// the module and field): a mode other than "trellis" (entry or default), a
// code other than "1mad", a rotation other than "hadamard", unknown fields,
// and parameters breaking check_trellis_params.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::format {

enum class Rotation { none, hadamard };

// One module's coding parameters, defaults applied.
struct TrellisParams {
  int k = 0;  // bits per weight ("bits")
  int L = 0;  // state bits ("trellis.L")
  int T = 0;  // block length ("group_size")
  int axis = 1;  // "trellis.axis": 1 codes along input features, 0 along output features
  Rotation rotation = Rotation::none;
};

// SPEC §1 ranges: 1 <= k <= 8 (kernels serve 2..4), k < L <= 16, T a positive
// multiple of 32, axis 0 or 1; with a Hadamard rotation T is a power of two.
// Throws trellis::Error "<where>: <rule>".
void check_trellis_params(const TrellisParams& p, std::string_view where);

struct QuantizationConfig {
  std::map<std::string, TrellisParams, std::less<>> modules;  // keyed by module path
  std::optional<int> default_bits;
  std::optional<int> default_group_size;

  // The entry of `module` (e.g. "model.layers.0.mlp.gate_proj"), or nullptr.
  const TrellisParams* find(std::string_view module) const;
};

}  // namespace trellis::format
