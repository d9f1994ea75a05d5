// The CUDA tail-biting Viterbi encoder against the CPU one
// (codec/viterbi.hpp, the reference):
//  - every block's words decode (CPU decoder) to exactly the states the CUDA
//    encoder returned, and those form a valid circular stream;
//  - the reported error is the states' Σ (y − v)², the lower bound is the
//    CPU's bound bit for bit, and the states are the CPU encoder's (same
//    roundings; only an exact tie between two overlap bounds may order them
//    differently, so ≥ 95% of blocks must match and every block's error must
//    be within 1e-3 of the CPU's or below it);
//  - with every overlap allowed both are certified exact;
//  - quantize_tensor over the CUDA encoder gives the CPU path's codes and
//    scales and meets the L = 12 MSE bounds (same tolerance as the CPU test);
//  - bad arguments throw trellis::Error naming the rule.
// Tests that need a GPU skip visibly ("no CUDA device") without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codec/random_trellis.hpp"
#include "trellis/code.hpp"
#include "trellis/codec/expand.hpp"
#include "trellis/codec/quantize_tensor.hpp"
#include "trellis/codec/viterbi.hpp"
#include "trellis/cuda/viterbi.hpp"
#include "trellis/error.hpp"

namespace trellis {
namespace {

bool have_gpu() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: CUDA Viterbi encoder test not run"

std::vector<float> gaussian(std::mt19937_64& rng, size_t n, float sd) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

double path_error(const uint32_t* states, const float* v, int T) {
  double e = 0.0;
  for (int t = 0; t < T; ++t) {
    const double d = double(code_value(states[t])) - double(v[t]);
    e += d * d;
  }
  return e;
}

// The circular stream rule on a state sequence: each state is the previous
// one shifted left by k with k new bits, and the last shifts into the first.
bool circular(const uint32_t* s, int T, int k, int L) {
  const uint32_t mask = (1u << L) - 1u, low = (1u << (L - k)) - 1u;
  for (int t = 0; t < T; ++t) {
    if (s[t] > mask) return false;
    if (t + 1 < T && (s[t + 1] >> k) != (s[t] & low)) return false;
  }
  return (s[0] >> k) == (s[T - 1] & low);
}

struct Shape {
  int k, L, T, blocks, max_overlaps;
};

// A scratch budget of 4 slots with device-memory path costs (the shared-cost
// form fits a few more): every thread block walks several blocks.
std::size_t few_slots(int k, int L, int T) {
  const std::size_t H = std::size_t(1) << (L - k);
  return 4 * (std::size_t(T) * H + 4 * H + 8 * (std::size_t(1) << L));
}

TEST(CudaViterbi, BlocksMatchTheCpuEncoderAndDecode) {
  REQUIRE_GPU();
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const Shape shapes[] = {{2, 12, 256, 96, 2}, {3, 12, 256, 96, 2}, {4, 12, 256, 96, 2}, {3, 12, 256, 64, 1},
                          {2, 8, 64, 64, 3},   {4, 10, 128, 64, 2}, {3, 13, 64, 16, 2},  {2, 16, 256, 6, 2},
                          {4, 16, 96, 6, 1}};
  for (const Shape& sh : shapes) {
    SCOPED_TRACE("k " + std::to_string(sh.k) + " L " + std::to_string(sh.L) + " T " + std::to_string(sh.T) +
                 " max_overlaps " + std::to_string(sh.max_overlaps));
    const int T = sh.T, wpb = T * sh.k / 32;
    const std::vector<float> v = gaussian(rng, size_t(sh.blocks) * T, 150.0f);
    cuda::ViterbiEncoder gpu(sh.k, sh.L, T, sh.max_overlaps, few_slots(sh.k, sh.L, T));
    EXPECT_GE(gpu.slots(), 4);
    EXPECT_LE(gpu.slots(), 12);
    std::vector<uint32_t> words(size_t(sh.blocks) * wpb, 0xdeadbeefu), states(size_t(sh.blocks) * T, ~0u);
    std::vector<BlockEncoding> res(size_t(sh.blocks));
    gpu.encode(v.data(), sh.blocks, words.data(), states.data(), res.data());

    ViterbiEncoder cpu(sh.k, sh.L, T, sh.max_overlaps);
    std::vector<uint32_t> cpu_words(static_cast<size_t>(wpb)), cpu_states(static_cast<size_t>(T)),
        decoded(static_cast<size_t>(T));
    int same = 0;
    for (int b = 0; b < sh.blocks; ++b) {
      SCOPED_TRACE("block " + std::to_string(b));
      const uint32_t* s = states.data() + size_t(b) * T;
      const float* vb = v.data() + size_t(b) * T;
      decode_block_states(words.data() + size_t(b) * wpb, T, sh.k, sh.L, decoded.data());
      ASSERT_EQ(decoded, std::vector<uint32_t>(s, s + T));
      ASSERT_TRUE(circular(s, T, sh.k, sh.L));
      const double err = path_error(s, vb, T);
      EXPECT_NEAR(res[size_t(b)].error, err, 1e-9 * err);

      const BlockEncoding c = cpu.encode_block(vb, cpu_words.data(), cpu_states.data());
      EXPECT_EQ(res[size_t(b)].lower_bound, c.lower_bound);
      EXPECT_LE(res[size_t(b)].lower_bound, err * (1.0 + 1e-6));
      EXPECT_LE(err, c.error * (1.0 + 1e-3));
      if (cpu_states == std::vector<uint32_t>(s, s + T)) {
        ++same;
        EXPECT_EQ(res[size_t(b)].certified, c.certified);
        EXPECT_NEAR(err, c.error, 1e-12 * c.error);
      }
    }
    EXPECT_GE(same, sh.blocks * 95 / 100) << same << " of " << sh.blocks << " blocks as the CPU encoder";
  }
}

TEST(CudaViterbi, EveryOverlapGivesTheCertifiedOptimum) {
  REQUIRE_GPU();
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Shape& sh : {Shape{2, 6, 32, 32, 16}, Shape{3, 7, 64, 32, 16}, Shape{4, 9, 32, 32, 32}}) {
    SCOPED_TRACE("k " + std::to_string(sh.k) + " L " + std::to_string(sh.L));
    const int T = sh.T, wpb = T * sh.k / 32;
    const std::vector<float> v = gaussian(rng, size_t(sh.blocks) * T, 150.0f);
    cuda::ViterbiEncoder gpu(sh.k, sh.L, T, sh.max_overlaps);
    std::vector<uint32_t> words(size_t(sh.blocks) * wpb), states(size_t(sh.blocks) * T);
    std::vector<BlockEncoding> res(size_t(sh.blocks));
    gpu.encode(v.data(), sh.blocks, words.data(), states.data(), res.data());
    ViterbiEncoder cpu(sh.k, sh.L, T, sh.max_overlaps);
    std::vector<uint32_t> cpu_words(static_cast<size_t>(wpb));
    for (int b = 0; b < sh.blocks; ++b) {
      const BlockEncoding c = cpu.encode_block(v.data() + size_t(b) * T, cpu_words.data());
      ASSERT_TRUE(c.certified);
      EXPECT_TRUE(res[size_t(b)].certified) << "block " << b;
      EXPECT_NEAR(res[size_t(b)].error, c.error, 1e-9 * c.error) << "block " << b;
    }
  }
}

// quantize_tensor over the CUDA encoder: the CPU path's codes and scales (up
// to overlap-bound ties: rel_error within 1e-4), and the MSE bounds on iid
// N(0,1) at L = 12, T = 256 (64 blocks per k, bound × 1.05 as in the CPU
// test tests/quant/quantize_tensor_test.cpp).
TEST(CudaViterbi, QuantizeTensorMatchesTheCpuPathAndMeetsTheBounds) {
  REQUIRE_GPU();
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937_64 rng(seed);
  const double bound[] = {0.0745, 0.0197, 0.0055};
  for (int k = 2; k <= 4; ++k) {
    SCOPED_TRACE("k " + std::to_string(k));
    for (int axis : {1, 0}) {
      const std::vector<float> W = gaussian(rng, 8 * 2048, 1.0f);
      QuantizeOptions o;
      o.k = k;
      o.axis = axis;
      o.rotate = axis == 0;
      o.seed = seed;
      const int64_t out = axis == 1 ? 8 : 2048, in = axis == 1 ? 2048 : 8;
      const QuantizedTensor cpu = quantize_tensor(W.data(), out, in, o);
      cuda::ViterbiEncoder enc(k, o.L, o.T, o.max_overlaps);
      o.encoder = &enc;
      const QuantizedTensor gpu = quantize_tensor(W.data(), out, in, o);
      EXPECT_NEAR(gpu.rel_error, cpu.rel_error, 1e-4 * cpu.rel_error);
      size_t same = 0;
      for (size_t i = 0; i < cpu.codes.size(); ++i) same += gpu.codes[i] == cpu.codes[i];
      EXPECT_GE(double(same), 0.95 * double(cpu.codes.size()));
      std::vector<float> back(W.size());
      expand_to_f32(gpu.view(), back.data());
      if (axis == 1) {
        double se = 0.0, norm = 0.0;
        for (size_t i = 0; i < W.size(); ++i) {
          se += (double(W[i]) - back[i]) * (double(W[i]) - back[i]);
          norm += double(W[i]) * double(W[i]);
        }
        EXPECT_LE(se / double(W.size()), bound[k - 2] * 1.05);
        EXPECT_NEAR(std::sqrt(se / norm), gpu.rel_error, 1e-4 * gpu.rel_error);
      }
    }
  }
}

void expect_error(const std::function<void()>& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no trellis::Error; expected one naming '" << words << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(CudaViterbi, RejectsBadArguments) {
  // The argument rules are checked before the device is looked for.
  expect_error([] { cuda::ViterbiEncoder(1, 12, 256); }, "k = 1 is outside [2, 4]");
  expect_error([] { cuda::ViterbiEncoder(5, 12, 256); }, "k = 5 is outside [2, 4]");
  expect_error([] { cuda::ViterbiEncoder(3, 3, 256); }, "L = 3 must satisfy k < L <= 16");
  expect_error([] { cuda::ViterbiEncoder(3, 17, 256); }, "L = 17 must satisfy k < L <= 16");
  expect_error([] { cuda::ViterbiEncoder(3, 12, 48); }, "T = 48 is not a positive multiple of 32");
  expect_error([] { cuda::ViterbiEncoder(3, 12, 0); }, "T = 0 is not a positive multiple of 32");
  expect_error([] { cuda::ViterbiEncoder(3, 12, 256, 0); }, "max_overlaps = 0 must be >= 1");
  REQUIRE_GPU();
  expect_error([] { cuda::ViterbiEncoder(2, 16, 256, 1, 1024); }, "bytes of scratch");
  cuda::ViterbiEncoder enc(3, 12, 256);
  std::vector<float> v(256);
  std::vector<uint32_t> words(24), states(256);
  expect_error([&] { enc.encode(v.data(), -1, words.data(), states.data()); }, "blocks = -1 is negative");
  expect_error([&] { enc.encode(nullptr, 1, words.data(), states.data()); }, "must not be null");
  QuantizeOptions o;
  o.k = 2;
  o.encoder = &enc;
  const std::vector<float> W(8 * 256, 1.0f);
  expect_error([&] { quantize_tensor(W.data(), 8, 256, o); }, "the block encoder codes k = 3");
}

}  // namespace
}  // namespace trellis
