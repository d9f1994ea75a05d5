// TensorStore: a single file, a sharded model through its index, and the
// index rules (tensor missing from its shard, unlisted tensor, tensor in the
// wrong shard, bad shard names, missing shards).
#include <gtest/gtest.h>

#include "test_files.hpp"
#include "trellis/format/safetensors_writer.hpp"
#include "trellis/format/tensor_store.hpp"

namespace trellis::format {
namespace {

using test::expect_error;
using test::make_tensor;

class ShardedStore : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_tensors(dir / "model-00001-of-00002.safetensors",
                        {make_tensor<uint16_t>("a.weight", DType::BF16, {2}, {1, 2}),
                         make_tensor<uint16_t>("c.weight", DType::BF16, {1}, {3})});
    test::write_tensors(dir / "model-00002-of-00002.safetensors",
                        {make_tensor<uint32_t>("b.weight", DType::U32, {1}, {4})});
  }
  void write_index(const std::map<std::string, std::string>& map) {
    write_safetensors_index(dir / "model.safetensors.index.json", map, 10);
  }
  const std::map<std::string, std::string> good = {{"a.weight", "model-00001-of-00002.safetensors"},
                                                   {"b.weight", "model-00002-of-00002.safetensors"},
                                                   {"c.weight", "model-00001-of-00002.safetensors"}};
  test::TempDir dir;
};

TEST_F(ShardedStore, ServesTensorsOfEveryShardAsOneStore) {
  write_index(good);
  const auto store = TensorStore::open_dir(dir.path());
  EXPECT_EQ(store.origin(), dir / "model.safetensors.index.json");
  EXPECT_EQ(store.files().size(), 2u);
  ASSERT_EQ(store.tensors().size(), 3u);
  EXPECT_EQ(store.tensors()[0]->name, "a.weight");
  EXPECT_EQ(store.tensors()[1]->name, "b.weight");
  EXPECT_EQ(store.tensors()[2]->name, "c.weight");
  EXPECT_EQ(store.at("b.weight").values<uint32_t>()[0], 4u);
  EXPECT_NE(store.at("b.weight").source.find("model-00002-of-00002"), std::string::npos);
  EXPECT_EQ(store.find("d.weight"), nullptr);
  expect_error([&] { store.at("d.weight"); }, {"no tensor 'd.weight'", "index.json"});
}

TEST_F(ShardedStore, RejectsAListedTensorMissingFromItsShard) {
  auto map = good;
  map["d.weight"] = "model-00002-of-00002.safetensors";
  write_index(map);
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"index.json", "'d.weight'", "does not hold it"});
}

TEST_F(ShardedStore, RejectsAnUnlistedTensor) {
  auto map = good;
  map.erase("c.weight");
  write_index(map);
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"'c.weight'", "does not list"});
}

TEST_F(ShardedStore, RejectsATensorListedInAnotherShard) {
  auto map = good;
  map["c.weight"] = "model-00002-of-00002.safetensors";
  write_index(map);
  // Either rule may fire first; both name c.weight.
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"'c.weight'"});
}

TEST_F(ShardedStore, RejectsShardPathsAndMissingShards) {
  auto map = good;
  map["a.weight"] = "../model-00001-of-00002.safetensors";
  write_index(map);
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"weight_map 'a.weight'", "file name"});
  map["a.weight"] = "model-00003-of-00002.safetensors";
  write_index(map);
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"model-00003-of-00002.safetensors", "cannot open"});
}

TEST_F(ShardedStore, RejectsAMalformedIndex) {
  test::write_file(dir / "model.safetensors.index.json", R"({"weight_map": ["a"]})");
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"index.json", "weight_map"});
  test::write_file(dir / "model.safetensors.index.json", R"({"weight_map": {"a.weight": 3}})");
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"weight_map 'a.weight'", "shard"});
  test::write_file(dir / "model.safetensors.index.json", "{");
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"index.json", "not valid JSON"});
}

TEST(TensorStore, OpensASingleFileAndNeedsOneOfTheTwo) {
  test::TempDir dir;
  expect_error([&] { TensorStore::open_dir(dir.path()); }, {"no model.safetensors"});
  test::write_tensors(dir / "model.safetensors", {make_tensor<uint8_t>("x", DType::U8, {1}, {9})});
  const auto store = TensorStore::open_dir(dir.path());
  EXPECT_EQ(store.origin(), dir / "model.safetensors");
  ASSERT_EQ(store.tensors().size(), 1u);
  EXPECT_EQ(store.at("x").values<uint8_t>()[0], 9);
}

}  // namespace
}  // namespace trellis::format
