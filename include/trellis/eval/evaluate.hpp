// evaluate(): perplexity of a model over a text, and optionally its KL
// divergence from a reference — the library behind `trellis eval`.
//
// The text slice (text_split.hpp) is encoded whole with the model's
// tokenizer (no BOS, no special tokens) and cut into windows (windows.hpp);
// every prediction is scored (token_scores.hpp) and summarized (stats.hpp).
// The reference is another model directory run on the same windows
// (kl_ref_dir) or a log-probs file written earlier (kl_ref_logits,
// log_probs_file.hpp); save_logits writes the evaluated model's own
// log-probs to such a file.
// Errors (trellis::Error): missing files or directories, an empty text or
// one shorter than a window, a reference with another vocabulary, a
// log-probs file of other windows, both kinds of reference at once.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "trellis/eval/stats.hpp"
#include "trellis/eval/text_split.hpp"
#include "trellis/eval/windows.hpp"
#include "trellis/format/dtype.hpp"
#include "trellis/model/device.hpp"

namespace trellis::eval {

struct EvalOptions {
  std::filesystem::path model_dir;
  model::Device device = model::Device::cpu;
  std::filesystem::path text;
  Split split = Split::val;
  std::optional<uint64_t> from_byte;
  int64_t context = 512;
  int64_t max_windows = 0;  // 0: all
  std::filesystem::path kl_ref_dir;     // empty: none
  std::filesystem::path kl_ref_logits;  // empty: none
  std::filesystem::path save_logits;    // empty: none
  format::DType save_dtype = format::DType::F32;
};

struct EvalResult {
  uint64_t text_begin = 0, text_end = 0, text_file_size = 0;
  int64_t tokens = 0;  // of the whole slice
  WindowPlan plan;
  std::string backend;
  Summary summary;
  double seconds = 0;
};

// Called after each window: windows done, of how many, the running summary's PPL.
using EvalProgress = std::function<void(int64_t done, int64_t total, double ppl)>;

EvalResult evaluate(const EvalOptions& options, const EvalProgress& progress = {});

}  // namespace trellis::eval
