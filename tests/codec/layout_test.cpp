// Whole-tensor expansion across storage forms (fresh seed per run):
//   - k3 interleave: the same codes stored row-major and as the SPEC §1
//     [cols/512, rows, 48] block-pair layout (built here from the SPEC text,
//     not from TrellisGeometry::block_offset) expand to identical W;
//   - axes: one set of code words and scales read as an axis-1 tensor of
//     W1 [R, C] and as an axis-0 tensor of W0 [C, R] (stored rows = R,
//     stored cols = C in both) gives W0 = W1ᵀ exactly;
//   - expand_to_bf16 = bf16_rne(expand_to_f32) element for element.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/geometry.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

// Row-major k=3, T=256 codes [rows, cols·3/32] → interleaved [cols/512, rows, 48].
std::vector<uint32_t> interleave_k3(const std::vector<uint32_t>& row_major, int64_t rows, int64_t cols) {
  const int64_t wpb = 24, pairs = cols / 512, words_per_row = cols * 3 / 32;
  std::vector<uint32_t> out(row_major.size());
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t w = 0; w < wpb; ++w)
          out[size_t((p * rows + r) * 48 + half * wpb + w)] =
              row_major[size_t(r * words_per_row + (2 * p + half) * wpb + w)];
  return out;
}

TEST(Layout, K3InterleavedExpandsLikeRowMajor) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (auto [out_f, in_f] : {std::pair<int64_t, int64_t>{512, 16}, {1536, 40}, {1024, 8}}) {
    const auto rm = test::random_trellis(rng, make_geometry(3, 12, 256, 0, out_f, in_f));
    auto il = rm;
    il.geom.block_interleave = 2;
    il.codes = interleave_k3(rm.codes, rm.geom.rows, rm.geom.cols);
    std::vector<float> a(size_t(out_f * in_f)), b(a.size());
    expand_to_f32(rm.view(), a.data());
    expand_to_f32(il.view(), b.data());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(float_to_bits(a[i]), float_to_bits(b[i])) << "element " << i;
  }
}

TEST(Layout, AxisZeroIsTransposeOfAxisOneOnSharedWords) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int k : {2, 3, 4}) {
    const int64_t R = 24, C = 512;
    const auto a1 = test::random_trellis(rng, make_geometry(k, 12, 256, 1, /*out*/ R, /*in*/ C));
    auto a0 = a1;
    a0.geom = make_geometry(k, 12, 256, 0, /*out*/ C, /*in*/ R);
    ASSERT_EQ(a0.geom.rows, a1.geom.rows);
    ASSERT_EQ(a0.geom.cols, a1.geom.cols);
    std::vector<float> w1(size_t(R * C)), w0(size_t(R * C));
    expand_to_f32(a1.view(), w1.data());  // [R, C]
    expand_to_f32(a0.view(), w0.data());  // [C, R]
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c)
        ASSERT_EQ(float_to_bits(w0[size_t(c * R + r)]), float_to_bits(w1[size_t(r * C + c)]))
            << "k=" << k << " r=" << r << " c=" << c;
  }
}

TEST(Layout, Bf16ExpansionIsRoundedF32) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int axis : {0, 1}) {
    const auto t = test::random_trellis(rng, make_geometry(2, 16, 128, axis, 256, 128));
    std::vector<float> f(size_t(256 * 128));
    std::vector<uint16_t> b(f.size());
    expand_to_f32(t.view(), f.data());
    expand_to_bf16(t.view(), b.data());
    for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(b[i], float_to_bf16(f[i])) << "axis " << axis << " element " << i;
  }
}

}  // namespace
}  // namespace trellis
