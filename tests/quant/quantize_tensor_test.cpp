// quantize_tensor: distortion on iid Gaussian weights against the issue's
// bounds, agreement of rel_error with expand_to_f32 on both axes (rotated or
// not), per-row scales, determinism across thread counts, the batched path
// (a BlockBatchEncoder) giving the per-row path's codes, and validation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "random_trellis.hpp"
#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/codec/quantize_tensor.hpp"
#include "trellis/codec/rotation.hpp"
#include "trellis/codec/viterbi.hpp"
#include "trellis/error.hpp"
#include "trellis/half.hpp"

namespace trellis {
namespace {

std::vector<float> gaussian(std::mt19937_64& rng, size_t n, float sd = 1.0f) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

double rel_error(const std::vector<float>& ref, const std::vector<float>& got) {
  double e = 0.0, n = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    e += (double(ref[i]) - got[i]) * (double(ref[i]) - got[i]);
    n += double(ref[i]) * ref[i];
  }
  return std::sqrt(e / n);
}

std::vector<float> expand(const QuantizedTensor& q) {
  std::vector<float> out(size_t(q.geom.out_features * q.geom.in_features));
  expand_to_f32(q.view(), out.data());
  return out;
}

// Per-weight MSE on iid N(0,1) with T = 256, L = 12 against the issue's
// bounds, on 64 blocks ([8, 2048], 16384 weights). Measured over 100 seeds:
// mean/bound = 0.999 (k=2), 0.976 (k=3), 0.909 (k=4) with a relative
// standard deviation of 1.25%, 1.15%, 1.8%; the test allows bound × 1.05,
// at least 4 standard deviations above the mean. The full-size numbers are in
// bench/results/viterbi_mse_cpu.json.
TEST(QuantizeTensor, MseOnGaussianMeetsTheBounds) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const double bound[] = {0.0745, 0.0197, 0.0055};
  for (int k = 2; k <= 4; ++k) {
    const std::vector<float> W = gaussian(rng, 8 * 2048);
    QuantizeOptions o;
    o.k = k;
    o.L = 12;
    o.T = 256;
    const QuantizedTensor q = quantize_tensor(W.data(), 8, 2048, o);
    const std::vector<float> back = expand(q);
    double se = 0.0;
    for (size_t i = 0; i < W.size(); ++i) se += (double(W[i]) - back[i]) * (double(W[i]) - back[i]);
    EXPECT_LE(se / double(W.size()), bound[k - 2] * 1.05) << "k = " << k;
  }
}

TEST(QuantizeTensor, RelErrorMatchesExpandOnBothAxes) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  struct Case {
    int axis;
    int64_t out, in;
  };
  for (const Case c : {Case{1, 16, 512}, Case{0, 512, 16}}) {
    for (bool rotate : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(c.axis) + (rotate ? " rotated" : ""));
      const std::vector<float> W = gaussian(rng, size_t(c.out * c.in), 0.02f);
      QuantizeOptions o;
      o.k = 3;
      o.axis = c.axis;
      o.rotate = rotate;
      o.seed = seed;
      const QuantizedTensor q = quantize_tensor(W.data(), c.out, c.in, o);
      EXPECT_EQ(q.geom.axis, c.axis);
      EXPECT_EQ(q.geom.out_features, c.out);
      EXPECT_EQ(q.geom.in_features, c.in);
      EXPECT_EQ(q.geom.rows, c.axis == 1 ? c.out : c.in);
      EXPECT_EQ(q.geom.cols, c.axis == 1 ? c.in : c.out);
      EXPECT_EQ(int64_t(q.codes.size()), q.geom.total_words());
      EXPECT_EQ(int64_t(q.scales.size()), q.geom.rows);
      EXPECT_EQ(int64_t(q.signs.size()), rotate ? q.geom.cols : 0);

      std::vector<float> back = expand(q);  // logical [out, in] of W (or of W')
      if (rotate) {
        // Un-rotate stored rows: axis 1 rows of W', axis 0 rows of W'ᵀ.
        if (c.axis == 1) {
          unrotate_rows(back.data(), c.out, c.in, q.signs.data(), 256);
        } else {
          std::vector<float> t(back.size());
          for (int64_t o2 = 0; o2 < c.out; ++o2)
            for (int64_t i = 0; i < c.in; ++i) t[size_t(i * c.out + o2)] = back[size_t(o2 * c.in + i)];
          unrotate_rows(t.data(), c.in, c.out, q.signs.data(), 256);
          for (int64_t o2 = 0; o2 < c.out; ++o2)
            for (int64_t i = 0; i < c.in; ++i) back[size_t(o2 * c.in + i)] = t[size_t(i * c.out + o2)];
        }
      }
      const double rel = rel_error(W, back);
      EXPECT_NEAR(rel, q.rel_error, 1e-4 * q.rel_error);
      EXPECT_GT(rel * rel, 0.012);  // consistent with the k = 3 MSE on Gaussian data
      EXPECT_LT(rel * rel, 0.0197 * 1.15);
    }
  }
}

TEST(QuantizeTensor, ScalesFollowEachRow) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const int64_t rows = 8, cols = 1024;
  std::vector<float> W = gaussian(rng, size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) W[size_t(r * cols + c)] *= std::ldexp(1.0f, int(3 * r) - 12);
  for (int64_t c = 0; c < cols; ++c) W[size_t(5 * cols + c)] = 0.0f;  // a zero row
  QuantizeOptions o;
  o.k = 2;
  const QuantizedTensor q = quantize_tensor(W.data(), rows, cols, o);
  const std::vector<float> back = expand(q);
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    double e = 0.0, n = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double w = W[size_t(r * cols + c)];
      e += (w - back[size_t(r * cols + c)]) * (w - back[size_t(r * cols + c)]);
      n += w * w;
    }
    if (r == 5) {
      EXPECT_EQ(q.scales[size_t(r)], 0);
      EXPECT_EQ(e, 0.0);
      continue;
    }
    const double rms = std::sqrt(n / double(cols));
    EXPECT_NEAR(fp16_to_float(q.scales[size_t(r)]) / rms, 1.04, 0.06);
    // A row's relative MSE at k = 2 over 300 seeds: mean 0.0743, σ 0.0015,
    // the same for the rows whose RMS is below 2^-14 (fp16 subnormal
    // scales); 0.08 (3.8σ) failed once in CI (seed 2797467667890705660,
    // 0.0812), so the bound is 0.09 (10σ). A wrong scale is the check above.
    EXPECT_LT(e / n, 0.09);
  }
}

TEST(QuantizeTensor, SameCodesForAnyThreadCountAndMoreScalePassesNeverHurt) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::vector<float> W = gaussian(rng, 24 * 512);
  QuantizeOptions o;
  o.k = 3;
  o.threads = 1;
  const QuantizedTensor a = quantize_tensor(W.data(), 24, 512, o);
  o.threads = 3;
  const QuantizedTensor b = quantize_tensor(W.data(), 24, 512, o);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.rel_error, b.rel_error);
  o.scale_passes = 1;
  const QuantizedTensor c = quantize_tensor(W.data(), 24, 512, o);
  EXPECT_LE(a.rel_error, c.rel_error);
}

TEST(QuantizeTensor, ProgressAndSharedSigns) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const std::vector<float> W = gaussian(rng, 16 * 256);
  const std::vector<int8_t> signs = random_signs(256, 7);
  std::vector<int64_t> seen;
  QuantizeOptions o;
  o.rotate = true;
  o.signs = signs.data();
  o.threads = 2;
  o.progress = [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, 16);
    seen.push_back(done);
  };
  const QuantizedTensor q = quantize_tensor(W.data(), 16, 256, o);
  EXPECT_EQ(q.signs, signs);
  ASSERT_EQ(seen.size(), 16u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], int64_t(i + 1));
}

// A BlockBatchEncoder over the CPU encoder: the batched path (rows in step,
// one encode call per scale pass) must give the per-row path's codes.
class CpuBatchEncoder final : public BlockBatchEncoder {
 public:
  CpuBatchEncoder(int k, int L, int T) : enc_(k, L, T) {}
  int k() const override { return enc_.k(); }
  int L() const override { return enc_.L(); }
  int T() const override { return enc_.T(); }
  void encode(const float* v, int64_t blocks, uint32_t* words, uint32_t* states) override {
    const int T = enc_.T(), wpb = T * enc_.k() / 32;
    for (int64_t b = 0; b < blocks; ++b) enc_.encode_block(v + b * T, words + b * wpb, states + b * T);
    ++calls;
  }
  int calls = 0;

 private:
  ViterbiEncoder enc_;
};

TEST(QuantizeTensor, BatchedEncoderGivesThePerRowCodes) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (int axis : {1, 0}) {
    for (bool rotate : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (rotate ? " rotated" : ""));
      std::vector<float> W = gaussian(rng, 16 * 512, 0.02f);
      for (int64_t c = 0; c < 512; ++c) W[size_t(axis == 1 ? 3 * 512 + c : c * 16 + 3)] = 0.0f;  // a zero row
      const int64_t out = axis == 1 ? 16 : 512, in = axis == 1 ? 512 : 16;
      QuantizeOptions o;
      o.k = 3;
      o.axis = axis;
      o.rotate = rotate;
      o.seed = seed;
      const QuantizedTensor a = quantize_tensor(W.data(), out, in, o);
      CpuBatchEncoder enc(3, 12, 256);
      std::vector<int64_t> seen;
      o.encoder = &enc;
      o.progress = [&](int64_t done, int64_t total) {
        EXPECT_EQ(total, 16);
        seen.push_back(done);
      };
      const QuantizedTensor b = quantize_tensor(W.data(), out, in, o);
      EXPECT_EQ(a.codes, b.codes);
      EXPECT_EQ(a.scales, b.scales);
      EXPECT_EQ(a.signs, b.signs);
      EXPECT_EQ(a.rel_error, b.rel_error);
      EXPECT_EQ(enc.calls, 2);  // scale_passes = 2: one call per pass for all rows
      EXPECT_EQ(seen, std::vector<int64_t>{16});
    }
  }
  CpuBatchEncoder other(2, 12, 256);
  QuantizeOptions o;
  o.k = 3;
  o.encoder = &other;
  const std::vector<float> W(8 * 256, 0.5f);
  EXPECT_THROW(quantize_tensor(W.data(), 8, 256, o), Error);
}

TEST(QuantizeTensor, RejectsWhatCannotBeStored) {
  const std::vector<float> W(16 * 512, 0.5f);
  auto run = [&](int64_t out, int64_t in, QuantizeOptions o) { quantize_tensor(W.data(), out, in, o); };
  QuantizeOptions o;
  EXPECT_NO_THROW(run(16, 512, o));
  EXPECT_THROW(run(12, 512, o), Error);  // rows not a multiple of 8
  EXPECT_THROW(run(16, 500, o), Error);  // cols not a multiple of T
  o.axis = 0;
  EXPECT_THROW(run(16, 512, o), Error);  // axis 0: 512 rows of 16
  o = QuantizeOptions{};
  o.k = 9;
  EXPECT_THROW(run(16, 512, o), Error);
  o = QuantizeOptions{};
  o.L = 2;
  EXPECT_THROW(run(16, 512, o), Error);
  o = QuantizeOptions{};
  o.T = 96;
  o.rotate = true;
  EXPECT_THROW(run(8, 96 * 4, o), Error);  // Hadamard needs a power of two
  o = QuantizeOptions{};
  std::vector<float> bad = W;
  bad[77] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(quantize_tensor(bad.data(), 16, 512, o), Error);
  std::vector<float> huge(16 * 512, 1e6f);
  EXPECT_THROW(quantize_tensor(huge.data(), 16, 512, o), Error);
}

}  // namespace
}  // namespace trellis
