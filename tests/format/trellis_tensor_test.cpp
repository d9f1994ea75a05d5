// The checked TrellisGeometry constructor (SPEC §1): row-major and k3
// interleaved layouts on both axes, and every rejection — .weight dtype and
// shape, rows % 8, cols % T, parameters, .scales dtype/length/non-finite
// values, .signs presence/dtype/length/values — each naming the tensor.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "test_files.hpp"
#include "trellis/format/trellis_tensor.hpp"

namespace trellis::format {
namespace {

using test::expect_error;

constexpr const char* kModule = "model.layers.0.mlp.down_proj";

TrellisParams params(int k, int L, int T, int axis, Rotation r = Rotation::none) { return {k, L, T, axis, r}; }

// A TensorInfo over owned, suitably aligned storage.
struct Fake {
  std::vector<uint64_t> storage;
  TensorInfo info;
  Fake(std::string name, DType dtype, std::vector<int64_t> shape) {
    info.name = std::move(name);
    info.dtype = dtype;
    info.shape = std::move(shape);
    info.source = "model.safetensors";
    const std::size_t bytes = std::size_t(info.numel()) * dtype_size(dtype);
    storage.assign((bytes + 7) / 8, 0);
    info.data = std::as_bytes(std::span(storage)).first(bytes);
  }
  std::byte* bytes() { return reinterpret_cast<std::byte*>(storage.data()); }
};

Fake weight(std::vector<int64_t> shape, DType dtype = DType::U32) {
  return Fake(std::string(kModule) + ".weight", dtype, std::move(shape));
}
Fake scales(int64_t rows, uint16_t bits = 0x3c00, DType dtype = DType::F16) {
  Fake f(std::string(kModule) + ".scales", dtype, {rows});
  for (int64_t i = 0; i < rows && dtype_size(dtype) == 2; ++i) std::memcpy(f.bytes() + 2 * i, &bits, 2);
  return f;
}
Fake signs(int64_t n, int8_t value = 1, DType dtype = DType::I8) {
  Fake f(std::string(kModule) + ".signs", dtype, {n});
  for (int64_t i = 0; i < n && dtype == DType::I8; ++i) f.bytes()[i] = std::byte(uint8_t(value));
  return f;
}

TrellisTensor check(const TrellisParams& p, Fake& w, Fake& s, Fake* g = nullptr) {
  return check_trellis_tensor(kModule, p, w.info, s.info, g ? &g->info : nullptr);
}

TEST(TrellisGeometry, RowMajorAxis1) {
  Fake w = weight({16, 32});  // k=2: cols = 32·32/2 = 512
  Fake s = scales(16);
  const auto t = check(params(2, 12, 256, 1), w, s);
  EXPECT_EQ(t.geom.rows, 16);
  EXPECT_EQ(t.geom.cols, 512);
  EXPECT_EQ(t.geom.out_features, 16);
  EXPECT_EQ(t.geom.in_features, 512);
  EXPECT_EQ(t.geom.block_interleave, 0);
  EXPECT_EQ(t.geom.total_words(), 16 * 32);
  const auto v = t.view();
  EXPECT_EQ(static_cast<const void*>(v.codes), static_cast<const void*>(w.info.data.data()));
  EXPECT_EQ(static_cast<const void*>(v.scales), static_cast<const void*>(s.info.data.data()));
  EXPECT_EQ(t.bytes(), w.info.data.size() + s.info.data.size());
  EXPECT_TRUE(t.sign_values().empty());
}

TEST(TrellisGeometry, RowMajorAxis0) {
  Fake w = weight({24, 48});  // k=3: cols = 48·32/3 = 512
  Fake s = scales(24);
  const auto t = check(params(3, 12, 256, 0), w, s);
  EXPECT_EQ(t.geom.rows, 24);
  EXPECT_EQ(t.geom.cols, 512);
  EXPECT_EQ(t.geom.in_features, 24);
  EXPECT_EQ(t.geom.out_features, 512);
}

TEST(TrellisGeometry, K3InterleavedAxis0IsDetectedByShape) {
  Fake w = weight({2, 8, 48});  // [cols/512, rows, 48]
  Fake s = scales(8);
  const auto t = check(params(3, 12, 256, 0), w, s);
  EXPECT_EQ(t.geom.block_interleave, 2);
  EXPECT_EQ(t.geom.rows, 8);
  EXPECT_EQ(t.geom.cols, 1024);
  EXPECT_EQ(t.geom.in_features, 8);
  EXPECT_EQ(t.geom.out_features, 1024);
  EXPECT_EQ(t.geom.total_words(), 2 * 8 * 48);
}

TEST(TrellisGeometry, RejectsInterleavedShapeOutsideK3Axis0) {
  Fake w = weight({2, 8, 48});
  Fake s = scales(8);
  expect_error([&] { check(params(3, 12, 256, 1), w, s); }, {"down_proj.weight'", "3-D", "axis=1"});
  expect_error([&] { check(params(2, 12, 256, 0), w, s); }, {"down_proj.weight'", "3-D", "k=2"});
  Fake w2 = weight({2, 8, 24});
  expect_error([&] { check(params(3, 12, 256, 0), w2, s); }, {"down_proj.weight'", "[cols/512, rows, 48]"});
}

TEST(TrellisGeometry, RejectsWeightDtype) {
  Fake w = weight({16, 32}, DType::I32);
  Fake s = scales(16);
  expect_error([&] { check(params(2, 12, 256, 1), w, s); }, {"model.safetensors", "down_proj.weight'", "dtype I32", "must be U32"});
}

TEST(TrellisGeometry, RejectsWeightShape) {
  Fake s = scales(16);
  Fake rank1 = weight({512});
  expect_error([&] { check(params(2, 12, 256, 1), rank1, s); }, {"down_proj.weight'", "[rows, cols·k/32]"});
  Fake odd = weight({16, 1});  // 32 bits is not a whole number of 3-bit weights
  expect_error([&] { check(params(3, 12, 32, 1), odd, s); }, {"down_proj.weight'", "does not match k=3"});
}

TEST(TrellisGeometry, RejectsRowsNotAMultipleOf8) {
  Fake w = weight({12, 32});
  Fake s = scales(12);
  expect_error([&] { check(params(2, 12, 256, 1), w, s); }, {"down_proj.weight'", "rows=12", "multiple of 8"});
  Fake empty = weight({0, 32});
  Fake s0 = scales(0);
  expect_error([&] { check(params(2, 12, 256, 1), empty, s0); }, {"rows=0"});
}

TEST(TrellisGeometry, RejectsColsNotAMultipleOfT) {
  Fake w = weight({16, 4});  // k=2: cols = 64
  Fake s = scales(16);
  expect_error([&] { check(params(2, 12, 256, 1), w, s); }, {"down_proj.weight'", "cols=64", "group_size T=256"});
}

TEST(TrellisGeometry, RejectsParametersOutOfRange) {
  Fake w = weight({16, 32});
  Fake s = scales(16);
  expect_error([&] { check(params(2, 12, 100, 1), w, s); }, {"down_proj", "T=100", "multiple of 32"});
  expect_error([&] { check(params(0, 12, 256, 1), w, s); }, {"down_proj", "k=0"});
  expect_error([&] { check(params(9, 12, 256, 1), w, s); }, {"down_proj", "k=9"});
  expect_error([&] { check(params(2, 2, 256, 1), w, s); }, {"down_proj", "L=2"});
  expect_error([&] { check(params(2, 17, 256, 1), w, s); }, {"down_proj", "L=17"});
  expect_error([&] { check(params(2, 12, 256, 5), w, s); }, {"down_proj", "axis=5"});
}

TEST(TrellisGeometry, RejectsScalesDtypeAndLength) {
  Fake w = weight({16, 32});
  Fake bf = scales(16, 0x3f80, DType::BF16);
  expect_error([&] { check(params(2, 12, 256, 1), w, bf); }, {"down_proj.scales'", "dtype BF16", "must be F16"});
  Fake short_scales = scales(15);
  expect_error([&] { check(params(2, 12, 256, 1), w, short_scales); }, {"down_proj.scales'", "[15]", "[16]"});
}

TEST(TrellisGeometry, RejectsNonFiniteScales) {
  Fake w = weight({16, 32});
  for (uint16_t bad : {uint16_t(0x7c00), uint16_t(0xfc00), uint16_t(0x7e00)}) {  // +inf, -inf, NaN
    Fake s = scales(16);
    std::memcpy(s.bytes() + 2 * 5, &bad, 2);
    expect_error([&] { check(params(2, 12, 256, 1), w, s); }, {"down_proj.scales'", "scales[5]", "not finite"});
  }
  Fake ok = scales(16, 0x7bff);  // the largest finite fp16
  EXPECT_NO_THROW(check(params(2, 12, 256, 1), w, ok));
}

TEST(TrellisGeometry, ChecksSignsWithARotation) {
  Fake w = weight({16, 32});
  Fake s = scales(16);
  const auto rot = params(2, 12, 256, 1, Rotation::hadamard);
  Fake good = signs(512, -1);
  const auto t = check(rot, w, s, &good);
  ASSERT_EQ(t.sign_values().size(), 512u);
  EXPECT_EQ(t.sign_values()[0], -1);
  EXPECT_EQ(t.bytes(), w.info.data.size() + s.info.data.size() + 512);

  expect_error([&] { check(rot, w, s); }, {"down_proj.signs'", "missing", "hadamard"});
  expect_error([&] { check(params(2, 12, 256, 1), w, s, &good); }, {"down_proj.signs'", "no rotation"});
  Fake wrong_len = signs(16);
  expect_error([&] { check(rot, w, s, &wrong_len); }, {"down_proj.signs'", "[16]", "[cols] = [512]"});
  Fake wrong_dtype = signs(512, 1, DType::U8);
  expect_error([&] { check(rot, w, s, &wrong_dtype); }, {"down_proj.signs'", "dtype U8", "I8"});
  Fake zero = signs(512, 1);
  zero.bytes()[7] = std::byte(0);
  expect_error([&] { check(rot, w, s, &zero); }, {"down_proj.signs'", "signs[7] = 0"});
}

TEST(TrellisGeometry, GeometryAloneReadsNoData) {
  Fake w = weight({16, 32});
  Fake s = scales(16, 0x7c00);  // non-finite, but checked_geometry does not look
  const auto g = checked_geometry(kModule, params(2, 12, 256, 1), w.info, s.info);
  EXPECT_EQ(g.cols, 512);
}

}  // namespace
}  // namespace trellis::format
