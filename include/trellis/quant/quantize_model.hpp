// quantize_model: turns a checked QuantPlan over a Hugging Face checkpoint
// into a trellis model directory `out` (which must exist and be empty: a
// StagingDir's path).
//
// Writes, in `out`:
//   model.safetensors   every coded module as `<m>.weight` (U32 codes,
//                       row-major blocks), `<m>.scales` (F16) and, rotated,
//                       `<m>.signs` (I8); every other tensor byte for byte;
//   config.json         the input's config.json plus a "quantization"
//                       object with one SPEC §1 entry per coded module;
//   quant_report.json   QuantReport (quant_report.hpp);
//   the input's tokenizer.json, tokenizer_config.json,
//   generation_config.json, special_tokens_map.json and chat_template.jinja,
//   those that exist.
// then opens `out` as a ModelDir (every SPEC §1 rule checked) before
// returning.
//
// Rotation signs come from a seed per QuantPlan sign group, so q/k/v (and
// gate/up) coded on axis 1 share one sign vector. The result does not depend
// on `threads`. With options.cuda the row chunks' blocks are coded on the GPU
// (rotation and the scale search's scoring stay on the CPU) and `on_rows`
// runs once per chunk of rows.
//
// `on_rows` runs after every stored row of the module being coded (from the
// coding threads, one call at a time) and `on_tensor` after each module;
// either may throw to stop the run (the exception propagates).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>

#include "trellis/format/model_dir.hpp"
#include "trellis/quant/quant_plan.hpp"
#include "trellis/quant/quant_report.hpp"

namespace trellis::quant {

struct QuantizeCallbacks {
  std::function<void(const CodedModule&, int64_t rows_done, int64_t rows_total)> on_rows;
  std::function<void(const TensorReport&)> on_tensor;
};

struct RunOptions {
  int threads = 0;    // 0: all hardware threads
  uint64_t seed = 0;  // rotation signs
  bool cuda = false;  // code the blocks with the CUDA encoder (same codes as the CPU's up to overlap-bound ties)
};

// Throws trellis::Error when options.cuda cannot be honoured: this build has
// no CUDA encoder, or there is no CUDA device (quantize_model checks it too,
// before writing anything).
void require_encoder(const RunOptions& options);

QuantReport quantize_model(const format::ModelDir& in, const QuantPlan& plan, const std::filesystem::path& out,
                           const RunOptions& options, const QuantizeCallbacks& callbacks = {});

}  // namespace trellis::quant
