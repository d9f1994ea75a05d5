// safetensors writing: round trip through the reader, alignment of every
// tensor, atomic replacement, and rejected inputs leaving nothing behind.
#include <gtest/gtest.h>

#include "test_files.hpp"
#include "trellis/format/atomic_file.hpp"
#include "trellis/format/safetensors.hpp"
#include "trellis/format/safetensors_writer.hpp"

namespace trellis::format {
namespace {

using test::expect_error;
using test::make_tensor;
using test::OwnedTensor;

std::vector<std::string> dir_entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  test::TempDir dir;
  const std::vector<OwnedTensor> tensors = {
      make_tensor<uint8_t>("mask", DType::BOOL, {3}, {1, 0, 1}),
      make_tensor<uint16_t>("emb", DType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6}),
      make_tensor<uint32_t>("codes", DType::U32, {2, 2}, {0xdeadbeef, 1, 2, 3}),
      make_tensor<double>("f64", DType::F64, {1}, {3.5}),
      make_tensor<int8_t>("signs", DType::I8, {5}, {1, -1, 1, -1, 1}),
      make_tensor<float>("empty", DType::F32, {0, 4}, {}),
  };
  const auto path = dir / "m.safetensors";
  test::write_tensors(path, tensors, {{"format", "pt"}});

  const SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (const auto& t : tensors) {
    const TensorInfo* r = f.find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype);
    EXPECT_EQ(r->shape, t.shape);
    ASSERT_EQ(r->data.size(), t.data.size());
    EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), r->data.begin())) << t.name;
    EXPECT_EQ(r->file_offset % dtype_size(r->dtype), 0u) << t.name << " is not aligned in the file";
  }
  EXPECT_EQ(f.find("codes")->values<uint32_t>()[0], 0xdeadbeefu);
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"m.safetensors"});  // no temporary left
}

TEST(SafetensorsWriter, ReplacesAnExistingFileWhole) {
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  test::write_tensors(path, {make_tensor<uint8_t>("a", DType::U8, {1}, {7})});
  test::write_tensors(path, {make_tensor<uint16_t>("b", DType::U16, {2}, {8, 9})});
  const SafetensorsFile f(path);
  EXPECT_EQ(f.find("a"), nullptr);
  ASSERT_NE(f.find("b"), nullptr);
  EXPECT_EQ(f.find("b")->values<uint16_t>()[1], 9);
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"m.safetensors"});
}

TEST(SafetensorsWriter, RejectsBadTensorsAndWritesNothing) {
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  OwnedTensor wrong_size = make_tensor<uint8_t>("w", DType::F32, {2}, {1, 2, 3});
  expect_error([&] { test::write_tensors(path, {wrong_size}); }, {"tensor 'w'", "3 bytes", "needs 8"});
  expect_error([&] {
    test::write_tensors(path, {make_tensor<uint8_t>("d", DType::U8, {1}, {1}), make_tensor<uint8_t>("d", DType::U8, {1}, {2})});
  }, {"tensor 'd'", "duplicate"});
  expect_error([&] { test::write_tensors(path, {make_tensor<uint8_t>("__metadata__", DType::U8, {1}, {1})}); },
               {"reserved"});
  expect_error([&] { test::write_tensors(path, {make_tensor<uint8_t>("n", DType::U8, {-1}, {})}); },
               {"tensor 'n'", "negative"});
  EXPECT_TRUE(dir_entries(dir.path()).empty());
}

TEST(AtomicFile, UncommittedWritesLeaveNoFile) {
  test::TempDir dir;
  {
    AtomicFile f(dir / "x.json");
    f.write("partial");
  }
  EXPECT_TRUE(dir_entries(dir.path()).empty());
  write_file_atomic(dir / "x.json", "{}\n");
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"x.json"});
  expect_error([&] { AtomicFile f(dir / "no-such-dir" / "x.json"); }, {"x.json", "temporary"});
}

}  // namespace
}  // namespace trellis::format
