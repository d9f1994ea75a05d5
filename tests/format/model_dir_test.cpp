// ModelDir: a quantized model directory opened whole — trellis layers with
// their geometry, the manifest (scales/signs folded into their layer), and
// the cross-file rules (entry without tensors, tensors without entry).
#include <gtest/gtest.h>

#include "test_files.hpp"
#include "test_model.hpp"
#include "trellis/format/model_dir.hpp"

namespace trellis::format {
namespace {

using test::expect_error;
using test::SmallModel;

TEST(ModelDir, OpensAQuantizedModel) {
  test::TempDir dir;
  test::write_small_model(dir.path());
  const ModelDir model(dir.path());
  EXPECT_EQ(model.config().hidden_size, 512);
  ASSERT_EQ(model.trellis_tensors().size(), 3u);

  const TrellisTensor* down = model.find_trellis("model.layers.0.mlp.down_proj");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->geom.k, 3);
  EXPECT_EQ(down->geom.axis, 0);
  EXPECT_EQ(down->geom.block_interleave, 2);
  EXPECT_EQ(down->geom.in_features, 256);
  EXPECT_EQ(down->geom.out_features, 512);

  const TrellisTensor* gate = model.find_trellis("model.layers.0.mlp.gate_proj");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->geom.out_features, 256);
  EXPECT_EQ(gate->geom.in_features, 512);
  EXPECT_EQ(gate->view().codes[1], 2654435761u);

  const TrellisTensor* q = model.find_trellis("model.layers.0.self_attn.q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->params.rotation, Rotation::hadamard);
  EXPECT_EQ(q->sign_values()[1], -1);
  EXPECT_EQ(model.find_trellis("model.layers.0.mlp.up_proj"), nullptr);
}

TEST(ModelDir, ManifestCountsTrellisLayersAsOutTimesIn) {
  test::TempDir dir;
  test::write_small_model(dir.path());
  const ModelDir model(dir.path());
  const auto rows = model.manifest();
  ASSERT_EQ(rows.size(), 5u);  // 3 trellis layers + 2 plain tensors; no .scales/.signs rows
  int64_t params = 0, coded_params = 0;
  uint64_t coded_bytes = 0;
  for (const auto& e : rows) {
    params += e.parameters;
    if (e.trellis) {
      coded_params += e.parameters;
      coded_bytes += e.bytes;
      EXPECT_TRUE(e.name.ends_with(".weight")) << e.name;
    }
  }
  EXPECT_EQ(params, SmallModel::kParameters);
  EXPECT_EQ(coded_params, SmallModel::kCodedParameters);
  EXPECT_EQ(coded_bytes, SmallModel::kCodedBytes);
  EXPECT_EQ(rows[1].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(rows[1].shape, (std::vector<int64_t>{512, 256}));  // [out, in]
}

TEST(ModelDir, RejectsAnEntryWithoutItsTensors) {
  test::TempDir dir;
  auto tensors = test::small_model_tensors();
  std::erase_if(tensors, [](const auto& t) { return t.name == "model.layers.0.mlp.gate_proj.scales"; });
  test::write_small_model(dir.path(), test::small_model_config(), tensors);
  expect_error([&] { ModelDir m(dir.path()); },
               {"config.json", "quantization entry 'model.layers.0.mlp.gate_proj'", "no tensor", ".scales"});
}

TEST(ModelDir, RejectsScalesWithoutAnEntry) {
  test::TempDir dir;
  auto config = test::small_model_config();
  config["quantization"].erase("model.layers.0.mlp.gate_proj");
  test::write_small_model(dir.path(), config);
  expect_error([&] { ModelDir m(dir.path()); },
               {"model.safetensors", "'model.layers.0.mlp.gate_proj.scales'", "no quantization entry"});
}

TEST(ModelDir, RejectsAWeightThatDoesNotMatchItsEntry) {
  test::TempDir dir;
  auto config = test::small_model_config();
  config["quantization"]["model.layers.0.mlp.gate_proj"]["bits"] = 3;  // 32 words hold no whole 3-bit run
  test::write_small_model(dir.path(), config);
  expect_error([&] { ModelDir m(dir.path()); }, {"'model.layers.0.mlp.gate_proj.weight'", "k=3"});
}

TEST(ModelDir, OpensTheFixture) {
  const ModelDir model(std::filesystem::path(TRELLIS_SOURCE_DIR) / "models/shakespeare-qwen3-15m");
  EXPECT_TRUE(model.trellis_tensors().empty());
  int64_t params = 0;
  for (const auto& e : model.manifest()) {
    params += e.parameters;
    ASSERT_NE(e.tensor, nullptr);
    EXPECT_EQ(e.tensor->dtype, DType::BF16) << e.name;
  }
  EXPECT_EQ(params, 15209472);
}

}  // namespace
}  // namespace trellis::format
