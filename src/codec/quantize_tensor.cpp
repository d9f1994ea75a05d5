// quantize_tensor: validation, the stored-row gather (+ rotation), the choice
// of row coder (quantize_tensor_cpu.cpp or quantize_tensor_batched.cpp) and
// the error total (contract in include/trellis/codec/quantize_tensor.hpp).
#include "trellis/codec/quantize_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "quantize_tensor_rows.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/error.hpp"

namespace trellis {

namespace {

void validate(int64_t out_features, int64_t in_features, const QuantizeOptions& o) {
  auto fail = [](const std::string& why) { throw Error("quantize_tensor: " + why); };
  if (o.k < 1 || o.k > 8) fail("k = " + std::to_string(o.k) + " is outside [1, 8]");
  if (o.L <= o.k || o.L > 16) fail("L = " + std::to_string(o.L) + " must satisfy k < L <= 16");
  if (o.T <= 0 || o.T % 32 != 0) fail("T = " + std::to_string(o.T) + " is not a positive multiple of 32");
  if (o.axis != 0 && o.axis != 1) fail("axis = " + std::to_string(o.axis) + " is not 0 or 1");
  if (o.rotate && (o.T & (o.T - 1)) != 0)
    fail("rotation needs T a power of two, T = " + std::to_string(o.T));
  if (out_features <= 0 || in_features <= 0) fail("empty matrix");
  const int64_t rows = o.axis == 1 ? out_features : in_features;
  const int64_t cols = o.axis == 1 ? in_features : out_features;
  if (cols % o.T != 0)
    fail("the coded axis (" + std::to_string(cols) + ") is not a multiple of T = " + std::to_string(o.T));
  if (rows % 8 != 0) fail("stored rows (" + std::to_string(rows) + ") are not a multiple of 8");
  if (o.scale_passes < 1 || o.max_overlaps < 1) fail("scale_passes and max_overlaps must be >= 1");
  if (o.encoder && (o.encoder->k() != o.k || o.encoder->L() != o.L || o.encoder->T() != o.T))
    fail("the block encoder codes k = " + std::to_string(o.encoder->k()) + ", L = " + std::to_string(o.encoder->L()) +
         ", T = " + std::to_string(o.encoder->T()) + " but the tensor needs k = " + std::to_string(o.k) +
         ", L = " + std::to_string(o.L) + ", T = " + std::to_string(o.T));
}

[[noreturn]] void not_finite(int64_t out, int64_t in) {
  throw Error("quantize_tensor: weight [" + std::to_string(out) + ", " + std::to_string(in) + "] is not finite");
}

}  // namespace

namespace detail {

double RowJob::gather(int64_t r, float* row) const {
  const TrellisGeometry& g = q.geom;
  double norm = 0.0;
  for (int64_t c = 0; c < g.cols; ++c) {
    const float x = g.axis == 1 ? W[r * in_features + c] : W[c * in_features + r];
    if (!std::isfinite(x)) g.axis == 1 ? not_finite(r, c) : not_finite(c, r);
    row[c] = x;
    norm += double(x) * double(x);
  }
  if (options.rotate) rotate_rows(row, 1, g.cols, q.signs.data(), g.T);
  return norm;
}

void RowJob::gather_rows(int64_t r0, int64_t n, float* rows, double* norms) const {
  const TrellisGeometry& g = q.geom;
  if (g.axis == 1) {
    for (int64_t i = 0; i < n; ++i) norms[i] = gather(r0 + i, rows + i * g.cols);
    return;
  }
  // Axis 0: stored row r is column r of W; copy 64×64 tiles so reads and
  // writes both stay within a few cache lines per row.
  constexpr int64_t kTile = 64;
  for (int64_t c0 = 0; c0 < g.cols; c0 += kTile)
    for (int64_t i0 = 0; i0 < n; i0 += kTile)
      for (int64_t c = c0; c < std::min(c0 + kTile, g.cols); ++c)
        for (int64_t i = i0; i < std::min(i0 + kTile, n); ++i) rows[i * g.cols + c] = W[c * in_features + r0 + i];
  for (int64_t i = 0; i < n; ++i) {
    float* row = rows + i * g.cols;
    double norm = 0.0;
    for (int64_t c = 0; c < g.cols; ++c) {
      if (!std::isfinite(row[c])) not_finite(c, r0 + i);
      norm += double(row[c]) * double(row[c]);
    }
    if (options.rotate) rotate_rows(row, 1, g.cols, q.signs.data(), g.T);
    norms[i] = norm;
  }
}

}  // namespace detail

QuantizedTensor quantize_tensor(const float* W, int64_t out_features, int64_t in_features,
                                const QuantizeOptions& options) {
  validate(out_features, in_features, options);
  QuantizedTensor q;
  q.geom = make_geometry(options.k, options.L, options.T, options.axis, out_features, in_features);
  const TrellisGeometry& g = q.geom;
  q.codes.assign(size_t(g.total_words()), 0u);
  q.scales.assign(size_t(g.rows), 0);
  if (options.rotate)
    q.signs = options.signs ? std::vector<int8_t>(options.signs, options.signs + g.cols)
                            : random_signs(g.cols, options.seed);

  std::vector<double> row_error(size_t(g.rows)), row_norm(size_t(g.rows));
  const detail::RowJob job{W, in_features, options, q, row_error, row_norm};
  if (options.encoder)
    detail::code_rows_batched(job, *options.encoder);
  else
    detail::code_rows_cpu(job);

  double err = 0.0, norm = 0.0;
  for (int64_t r = 0; r < g.rows; ++r) {
    err += row_error[size_t(r)];
    norm += row_norm[size_t(r)];
  }
  q.rel_error = norm > 0.0 ? std::sqrt(err / norm) : 0.0;
  return q;
}

}  // namespace trellis
