// safetensors reading: a valid file's tensors and metadata, then every
// rejection of a truncated or inconsistent file (SPEC §1), each message
// naming the file/tensor and the rule.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "test_files.hpp"
#include "trellis/format/safetensors.hpp"

namespace trellis::format {
namespace {

using test::bytes_of;
using test::expect_error;
using test::safetensors_image;

SafetensorsContents parse(const std::string& image) { return parse_safetensors(bytes_of(image), "t.safetensors"); }

void expect_rejected(const std::string& image, std::initializer_list<std::string_view> words) {
  expect_error([&] { parse(image); }, words);
}

TEST(SafetensorsReader, ReadsTensorsMetadataAndZeroCopyData) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"U32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]},"z":{"dtype":"F32","shape":[0],"data_offsets":[12,12]}})";
  const std::string data = "ABCDEFGHwxyz";
  const std::string image = safetensors_image(header, data);
  const auto c = parse(image);
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.metadata.at("format"), "pt");
  EXPECT_EQ(c.data_begin, 8 + header.size());
  const TensorInfo& a = c.tensors[0];  // sorted by name
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dtype, DType::BF16);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.numel(), 2);
  EXPECT_EQ(a.file_offset, c.data_begin + 8);
  EXPECT_EQ(a.source, "t.safetensors");
  EXPECT_EQ(reinterpret_cast<const char*>(a.data.data()), image.data() + c.data_begin + 8);  // zero-copy
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.data.data()), a.data.size()), "wxyz");
  EXPECT_EQ(c.tensors[1].name, "b");
  EXPECT_EQ(c.tensors[1].data.size(), 8u);
  EXPECT_EQ(c.tensors[2].numel(), 0);
  EXPECT_TRUE(c.tensors[2].data.empty());
}

TEST(SafetensorsReader, AcceptsEmptyHeaderAndPaddedHeader) {
  EXPECT_TRUE(parse(safetensors_image("{}", "")).tensors.empty());
  EXPECT_EQ(parse(safetensors_image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}    )", "x"))
                .tensors.size(),
            1u);
}

TEST(SafetensorsReader, KnowsEveryDtype) {
  const std::pair<const char*, std::size_t> dtypes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
      {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  for (const auto& [name, size] : dtypes) {
    const std::string header =
        std::string(R"({"t":{"dtype":")") + name + R"(","shape":[3],"data_offsets":[0,)" + std::to_string(3 * size) + "]}}";
    const auto c = parse(safetensors_image(header, std::string(3 * size, '\0')));
    ASSERT_EQ(c.tensors.size(), 1u) << name;
    EXPECT_EQ(dtype_name(c.tensors[0].dtype), name);
    EXPECT_EQ(dtype_size(c.tensors[0].dtype), size);
  }
}

TEST(SafetensorsReader, RejectsFileShorterThanTheLength) {
  expect_rejected("", {"t.safetensors", "truncated", "8-byte header length"});
  expect_rejected(std::string(7, '\0'), {"truncated"});
}

TEST(SafetensorsReader, RejectsHeaderLengthPastEndOfFile) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  expect_rejected(safetensors_image(header, "x", header.size() + 2), {"t.safetensors", "header length", "past the end"});
  expect_rejected(safetensors_image("", "", ~uint64_t(0)), {"past the end"});
}

TEST(SafetensorsReader, RejectsHeaderOverTheSizeLimit) {
  // A sparse file just over the limit: cheap to create and to map.
  test::TempDir dir;
  const auto path = dir / "big.safetensors";
  const uint64_t n = kMaxHeaderBytes + 8;
  test::write_file(path, safetensors_image("", "", n));
  ASSERT_EQ(::truncate(path.c_str(), off_t(8 + n)), 0);
  expect_error([&] { SafetensorsFile f(path); }, {"big.safetensors", "exceeds", "limit"});
}

TEST(SafetensorsReader, RejectsHeaderThatIsNotAJsonObject) {
  expect_rejected(safetensors_image("{\"a\":", ""), {"t.safetensors", "not valid JSON"});
  expect_rejected(safetensors_image("[1,2]", ""), {"t.safetensors", "must be a JSON object"});
  expect_rejected(safetensors_image(R"({"a":3})", ""), {"tensor 'a'", "must be an object"});
}

TEST(SafetensorsReader, RejectsBadDtype) {
  expect_rejected(safetensors_image(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "x"),
                  {"tensor 'w'", "unknown dtype", "Q4"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"bf16","shape":[1],"data_offsets":[0,2]}})", "xx"),
                  {"tensor 'w'", "unknown dtype"});
  expect_rejected(safetensors_image(R"({"w":{"shape":[1],"data_offsets":[0,1]}})", "x"), {"tensor 'w'", "dtype"});
}

TEST(SafetensorsReader, RejectsBadShape) {
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", ""),
                  {"tensor 'w'", "shape", "non-negative integers"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}})", ""),
                  {"tensor 'w'", "shape"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":3,"data_offsets":[0,3]}})", "xxx"),
                  {"tensor 'w'", "shape"});
  expect_rejected(safetensors_image(
                      R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""),
                  {"tensor 'w'", "overflows"});
}

TEST(SafetensorsReader, RejectsOffsetsOutOfRange) {
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "xx"),
                  {"tensor 'w'", "out of range", "data region is 2 bytes"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[3,2]}})", "xxx"),
                  {"tensor 'w'", "end before they begin"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", "x"),
                  {"tensor 'w'", "non-negative"});
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", "x"),
                  {"tensor 'w'", "[begin, end]"});
}

TEST(SafetensorsReader, RejectsTruncatedData) {
  // The header promises 16 bytes; the file ends after 10.
  expect_rejected(safetensors_image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "0123456789"),
                  {"tensor 'w'", "out of range"});
}

TEST(SafetensorsReader, RejectsDataSizeMismatch) {
  expect_rejected(safetensors_image(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"),
                  {"tensor 'w'", "data size mismatch", "needs 8 bytes"});
  // Trailing bytes no tensor covers.
  expect_rejected(safetensors_image(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "abcd"),
                  {"t.safetensors", "data size mismatch", "4 bytes", "cover 2"});
}

TEST(SafetensorsReader, RejectsOverlappingOffsets) {
  expect_rejected(safetensors_image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                    R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                    "abcdef"),
                  {"tensor 'b'", "overlap", "tensor 'a'"});
  // Two tensors on the same bytes.
  expect_rejected(safetensors_image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                    R"("b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                                    "ab"),
                  {"overlap"});
}

TEST(SafetensorsReader, RejectsGaps) {
  expect_rejected(safetensors_image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                    R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                                    "abcdef"),
                  {"bytes [2, 4)", "no tensor", "tensor 'b'"});
}

TEST(SafetensorsReader, RejectsBadMetadata) {
  expect_rejected(safetensors_image(R"({"__metadata__":{"n":1}})", ""), {"__metadata__", "'n'", "string"});
  expect_rejected(safetensors_image(R"({"__metadata__":[]})", ""), {"__metadata__", "object"});
}

TEST(SafetensorsReader, TypedViewsCheckSizeAndAlignment) {
  std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("b":{"dtype":"U32","shape":[1],"data_offsets":[1,5]}})";
  header.resize((header.size() + 3) / 4 * 4, ' ');  // data region 4-aligned, so "b" (offset 1) is not
  const std::string image = safetensors_image(header, "x1234");
  // Copy into 4-byte-aligned storage so "b" is misaligned only by its offset.
  std::vector<uint32_t> storage((image.size() + 3) / 4);
  std::memcpy(storage.data(), image.data(), image.size());
  const auto c = parse_safetensors(std::as_bytes(std::span(storage)).first(image.size()), "t.safetensors");
  expect_error([&] { c.tensors[0].values<uint32_t>(); }, {"tensor 'a'", "1-byte elements"});
  expect_error([&] { c.tensors[1].values<uint32_t>(); }, {"tensor 'b'", "aligned"});
  EXPECT_EQ(c.tensors[0].values<uint8_t>().size(), 1u);
}

TEST(SafetensorsReader, WidensFloatTensorsToF32) {
  // bf16 1.5 = 0x3FC0, fp16 -2 = 0xC000, fp32 0.25 = 0x3E800000 (little-endian bytes).
  const std::string data = std::string("\xC0\x3F", 2) + std::string("\x00\xC0", 2) +
                           std::string("\x00\x00\x80\x3E", 4) + std::string("\x07", 1);
  const std::string image =
      safetensors_image(R"({"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},)"
                        R"("h":{"dtype":"F16","shape":[1],"data_offsets":[2,4]},)"
                        R"("f":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                        R"("u":{"dtype":"U8","shape":[1],"data_offsets":[8,9]}})",
                        data);
  const auto c = parse_safetensors(bytes_of(image), "t.safetensors");
  const auto tensor = [&](const std::string& name) -> const TensorInfo& {
    for (const auto& t : c.tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  };
  EXPECT_EQ(tensor("b").to_f32("a test"), std::vector<float>{1.5f});
  EXPECT_EQ(tensor("h").to_f32("a test"), std::vector<float>{-2.0f});
  EXPECT_EQ(tensor("f").to_f32("a test"), std::vector<float>{0.25f});
  expect_error([&] { tensor("u").to_f32("a norm weight"); }, {"t.safetensors", "tensor 'u'", "a norm weight"});
}

TEST(SafetensorsFile, MapsAFileAndFindsTensors) {
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  test::write_file(path, safetensors_image(R"({"w":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", "abcd"));
  const SafetensorsFile f(path);
  EXPECT_EQ(f.path(), path);
  ASSERT_NE(f.find("w"), nullptr);
  EXPECT_EQ(f.find("w")->source, path.string());
  EXPECT_EQ(f.find("v"), nullptr);
}

TEST(SafetensorsFile, NamesTheFileOnErrors) {
  test::TempDir dir;
  expect_error([&] { SafetensorsFile f(dir / "absent.safetensors"); }, {"absent.safetensors", "cannot open"});
  const auto path = dir / "short.safetensors";
  test::write_file(path, "abc");
  expect_error([&] { SafetensorsFile f(path); }, {"short.safetensors", "truncated"});
  expect_error([&] { SafetensorsFile f(dir.path()); }, {"not a readable regular file"});
}

}  // namespace
}  // namespace trellis::format
