// Checked trellis geometry and tensors (rules in trellis_tensor.hpp).
#include "trellis/format/trellis_tensor.hpp"

#include <fmt/format.h>

#include "trellis/error.hpp"

namespace trellis::format {
namespace {

std::string where(const TensorInfo& t) { return fmt::format("{}: tensor '{}'", t.source, t.name); }

// Words per interleaved block pair and columns it covers (k = 3, T = 256).
constexpr int64_t kPairWords = 48;
constexpr int64_t kPairCols = 512;

}  // namespace

TrellisGeometry checked_geometry(std::string_view module, const TrellisParams& p,
                                 const TensorInfo& weight, const TensorInfo& scales) {
  check_trellis_params(p, fmt::format("{} (quantization entry '{}')", where(weight), module));
  const std::string w = where(weight);
  if (weight.dtype != DType::U32)
    throw Error(fmt::format("{}: dtype {}, must be U32 (the trellis bitstream is uint32)", w,
                            dtype_name(weight.dtype)));
  const auto& s = weight.shape;
  const std::string shape = shape_string(s);
  // Dimensions beyond this cannot be real (and would overflow the arithmetic).
  constexpr int64_t kMaxDim = int64_t(1) << 40;
  for (int64_t d : s)
    if (d > kMaxDim) throw Error(fmt::format("{}: shape {} has an implausibly large dimension", w, shape));
  int64_t rows = 0, cols = 0;
  int interleave = 0;
  if (s.size() == 2) {
    rows = s[0];
    if ((s[1] * 32) % p.k != 0)
      throw Error(fmt::format("{}: shape {} does not match k={}: {} words of 32 bits do not hold a whole "
                              "number of {}-bit weights, so it is not [rows, cols·k/32]",
                              w, shape, p.k, s[1], p.k));
    cols = s[1] * 32 / p.k;
  } else if (s.size() == 3) {
    if (p.k != 3 || p.T != 256 || p.axis != 0 || s[2] != kPairWords)
      throw Error(fmt::format("{}: shape {} is 3-D, which is only the k3 axis-0 interleaved layout "
                              "[cols/512, rows, 48] (k=3, T=256, axis=0); entry has k={} T={} axis={}",
                              w, shape, p.k, p.T, p.axis));
    rows = s[1];
    cols = s[0] * kPairCols;
    interleave = 2;
  } else {
    throw Error(fmt::format("{}: shape {} must be [rows, cols·k/32] (or [cols/512, rows, 48] for the "
                            "k3 axis-0 interleaved layout)",
                            w, shape));
  }
  if (rows <= 0 || rows % 8 != 0)
    throw Error(fmt::format("{}: shape {} gives rows={}, not a positive multiple of 8", w, shape, rows));
  if (cols <= 0 || cols % p.T != 0)
    throw Error(fmt::format("{}: shape {} gives cols={}, not a positive multiple of group_size T={}", w,
                            shape, cols, p.T));

  const std::string sw = where(scales);
  if (scales.dtype != DType::F16)
    throw Error(fmt::format("{}: dtype {}, must be F16", sw, dtype_name(scales.dtype)));
  if (scales.shape.size() != 1 || scales.shape[0] != rows)
    throw Error(fmt::format("{}: shape {} must be [rows] = [{}] (one scale per stored row)", sw,
                            shape_string(scales.shape), rows));

  const int64_t out = p.axis == 1 ? rows : cols;
  const int64_t in = p.axis == 1 ? cols : rows;
  return make_geometry(p.k, p.L, p.T, p.axis, out, in, interleave);
}

TrellisTensor check_trellis_tensor(std::string_view module, const TrellisParams& p,
                                   const TensorInfo& weight, const TensorInfo& scales,
                                   const TensorInfo* signs) {
  TrellisTensor t;
  t.module = std::string(module);
  t.params = p;
  t.geom = checked_geometry(module, p, weight, scales);
  t.weight = &weight;
  t.scales = &scales;

  weight.values<uint32_t>();  // alignment
  const auto sv = scales.values<uint16_t>();
  for (std::size_t i = 0; i < sv.size(); ++i)
    if ((sv[i] & 0x7c00u) == 0x7c00u)
      throw Error(fmt::format("{}: scales[{}] is not finite (fp16 bits 0x{:04x})", where(scales), i, sv[i]));

  const std::string signs_name = fmt::format("{}.signs", module);
  if (p.rotation == Rotation::none) {
    if (signs)
      throw Error(fmt::format("{}: present, but the quantization entry '{}' has no rotation", where(*signs),
                              module));
    return t;
  }
  if (!signs)
    throw Error(fmt::format("{}: tensor '{}' missing: rotation 'hadamard' needs a sign vector",
                            weight.source, signs_name));
  const std::string gw = where(*signs);
  if (signs->dtype != DType::I8)
    throw Error(fmt::format("{}: dtype {}, must be I8", gw, dtype_name(signs->dtype)));
  if (signs->shape.size() != 1 || signs->shape[0] != t.geom.cols)
    throw Error(fmt::format("{}: shape {} must be [cols] = [{}] (the coded axis)", gw,
                            shape_string(signs->shape), t.geom.cols));
  const auto gv = signs->values<int8_t>();
  for (std::size_t i = 0; i < gv.size(); ++i)
    if (gv[i] != 1 && gv[i] != -1)
      throw Error(fmt::format("{}: signs[{}] = {}, must be +1 or -1", gw, i, int(gv[i])));
  t.signs = signs;
  return t;
}

TrellisTensorView TrellisTensor::view() const {
  TrellisTensorView v;
  v.codes = weight->values<uint32_t>().data();
  v.scales = scales->values<uint16_t>().data();
  v.geom = geom;
  return v;
}

std::span<const int8_t> TrellisTensor::sign_values() const {
  return signs ? signs->values<int8_t>() : std::span<const int8_t>{};
}

uint64_t TrellisTensor::bytes() const {
  return weight->data.size() + scales->data.size() + (signs ? signs->data.size() : 0);
}

}  // namespace trellis::format
