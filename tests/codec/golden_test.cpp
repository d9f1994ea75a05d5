// The codec against golden vectors from an independent implementation
// (tests/data/trellis_vectors.json):
//   - every block: block_state(t) and decode_block_states agree with the
//     golden states for every t, and code_value(state) with the golden y;
//   - y_table_L12: code_value(s) for all 4096 12-bit states;
//   - matrix_axis1 (k = 3, L = 12, T = 256, 8×512): the golden y_ref is
//     Σ scale·y/147.800537109375·x in fp64 with decimal x. Our paths use the
//     canonical fp32 weight float32(y)·f_r (≤ ~2 ulp from the exact weight),
//     so they must agree to 1e-6 of ‖y_ref‖∞ per output: expand_to_f32 with an
//     fp64 dot, linear_reference_f64 (x narrowed to fp32), and expand_to_f32
//     with an fp32 dot (the f32 path). Measured: ≤ 6e-8 (fp64 paths) and
//     ≤ 4e-7 (fp32 path) of ‖y_ref‖∞; a wrong RCP (1/147.8) would be 3.6e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    std::ifstream f(TRELLIS_TEST_DATA "/trellis_vectors.json");
    if (!f) throw std::runtime_error("cannot open " TRELLIS_TEST_DATA "/trellis_vectors.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

TEST(Golden, BlockStatesAndCodeValues) {
  const auto& blocks = golden().at("blocks");
  ASSERT_EQ(blocks.size(), 7u);
  for (const auto& blk : blocks) {
    const int k = blk.at("K"), L = blk.at("L"), T = blk.at("T");
    SCOPED_TRACE("K=" + std::to_string(k) + " L=" + std::to_string(L) + " T=" + std::to_string(T));
    const auto words = blk.at("words").get<std::vector<uint32_t>>();
    const auto states = blk.at("states").get<std::vector<uint32_t>>();
    const auto ys = blk.at("y").get<std::vector<int>>();
    ASSERT_EQ(words.size(), size_t(T * k / 32));
    ASSERT_EQ(states.size(), size_t(T));
    ASSERT_EQ(ys.size(), size_t(T));
    std::vector<uint32_t> decoded(static_cast<size_t>(T));
    decode_block_states(words.data(), T, k, L, decoded.data());
    for (int t = 0; t < T; ++t) {
      EXPECT_EQ(block_state(words.data(), T, k, L, t), states[size_t(t)]) << "t=" << t;
      EXPECT_EQ(decoded[size_t(t)], states[size_t(t)]) << "t=" << t;
      EXPECT_EQ(code_value(states[size_t(t)]), ys[size_t(t)]) << "t=" << t;
    }
  }
}

TEST(Golden, CodeTableL12) {
  const auto table = golden().at("y_table_L12").get<std::vector<int>>();
  ASSERT_EQ(table.size(), 4096u);
  for (uint32_t s = 0; s < 4096; ++s) EXPECT_EQ(code_value(s), table[s]) << "s=" << s;
}

TEST(Golden, MatrixAxis1) {
  const auto& m = golden().at("matrix_axis1");
  const int k = m.at("K"), L = m.at("L"), T = m.at("T");
  const int64_t rows = m.at("rows"), cols = m.at("cols");
  const auto codes = m.at("codes").get<std::vector<uint32_t>>();
  const auto scales_d = m.at("scales").get<std::vector<double>>();
  const auto x = m.at("x").get<std::vector<double>>();
  const auto y_ref = m.at("y_ref").get<std::vector<double>>();

  const TrellisGeometry g = make_geometry(k, L, T, 1, rows, cols);
  ASSERT_EQ(codes.size(), size_t(g.total_words()));
  ASSERT_EQ(x.size(), size_t(cols));
  ASSERT_EQ(y_ref.size(), size_t(rows));
  std::vector<uint16_t> scales;
  for (double s : scales_d) {
    scales.push_back(float_to_fp16(float(s)));
    ASSERT_EQ(double(fp16_to_float(scales.back())), s) << "golden scale not exact in fp16";
  }
  const TrellisTensorView w{codes.data(), scales.data(), g};

  std::vector<float> W(size_t(rows * cols));
  expand_to_f32(w, W.data());
  std::vector<float> xf(x.begin(), x.end());
  std::vector<double> y_lib(static_cast<size_t>(rows));
  cpu::linear_reference_f64(w, xf.data(), 1, y_lib.data());

  double ymax = 0.0;
  for (double v : y_ref) ymax = std::max(ymax, std::fabs(v));
  const double tol = 1e-6 * ymax;
  for (int64_t r = 0; r < rows; ++r) {
    double y64 = 0.0;
    float y32 = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      y64 += double(W[size_t(r * cols + c)]) * x[size_t(c)];
      y32 += W[size_t(r * cols + c)] * xf[size_t(c)];
    }
    EXPECT_NEAR(y64, y_ref[size_t(r)], tol) << "expand_to_f32 + fp64 dot, row " << r;
    EXPECT_NEAR(y_lib[size_t(r)], y_ref[size_t(r)], tol) << "linear_reference_f64, row " << r;
    EXPECT_NEAR(double(y32), y_ref[size_t(r)], tol) << "expand_to_f32 + fp32 dot, row " << r;
  }
}

}  // namespace
}  // namespace trellis
