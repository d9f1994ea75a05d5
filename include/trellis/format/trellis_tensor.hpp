// The checked constructor of TrellisGeometry (SPEC §1) and TrellisTensor, a
// trellis-coded linear layer found in a model's files.
//
// The geometry comes from the entry (k, L, T, axis) and the `.weight` shape:
//   [rows, cols·k/32]        row-major: rows = shape[0], cols = shape[1]·32/k
//   [cols/512, rows, 48]     k = 3, T = 256, axis = 0 only: block-pair
//                            interleaved (block_interleave = 2),
//                            rows = shape[1], cols = shape[0]·512
// and the axis gives the features: axis 1 -> out = rows, in = cols;
// axis 0 -> in = rows, out = cols.
//
// Rules (each a trellis::Error "<file>: tensor '<name>': <rule>"): the entry's
// parameters (check_trellis_params); `.weight` dtype U32 (only U32: the
// bitstream is uint32, I32 is rejected) with one of the shapes above;
// rows a positive multiple of 8; cols a positive multiple of T; `.scales`
// dtype F16, shape [rows], every value finite; `<name>.signs` present
// exactly when the entry has a rotation, dtype I8, shape [cols] (the coded
// axis), every value +1 or -1; code words 4-byte and scales 2-byte aligned
// in memory (so views are zero-copy).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trellis/format/quantization.hpp"
#include "trellis/format/tensor_info.hpp"
#include "trellis/geometry.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::format {

struct TrellisTensor {
  std::string module;  // e.g. "model.layers.0.mlp.down_proj"
  TrellisParams params;
  TrellisGeometry geom;
  const TensorInfo* weight = nullptr;  // `<module>.weight`, U32 codes
  const TensorInfo* scales = nullptr;  // `<module>.scales`, F16 [rows]
  const TensorInfo* signs = nullptr;   // `<module>.signs`, I8 [cols]; only with a rotation

  // Zero-copy host view of codes, scales and geometry.
  TrellisTensorView view() const;
  // The ±1 sign vector (empty without a rotation).
  std::span<const int8_t> sign_values() const;
  // Bytes of weight + scales + signs.
  uint64_t bytes() const;
};

// Geometry from dtypes and shapes only (the tensors' data is not read).
TrellisGeometry checked_geometry(std::string_view module, const TrellisParams& params,
                                 const TensorInfo& weight, const TensorInfo& scales);

// Every rule above, data included.
TrellisTensor check_trellis_tensor(std::string_view module, const TrellisParams& params,
                                   const TensorInfo& weight, const TensorInfo& scales,
                                   const TensorInfo* signs);

}  // namespace trellis::format
