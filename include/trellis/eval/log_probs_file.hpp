// A file of one model's log-probabilities over evaluation windows, so a
// quality sweep runs the reference model once (`--save-logits`, then
// `--kl-ref-logits`). A safetensors file:
//   tokens     I32 [count · context]                the windows' tokens, in order
//   log_probs  F32 or F16 [count · (context − 1), V] row w·(c−1) + i: window w, prediction i
//   metadata   {"format": "trellis-eval-log-probs", "context": c, "model": the model's directory}
// F16 halves the file; its rows are re-normalized when read (log_softmax of
// the stored values) so that each sums to 1 again.
// Reading checks (trellis::Error naming the file): the layout above, the
// same context, the same vocabulary as the model under evaluation, and that
// the file holds the evaluated windows with the same tokens.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "trellis/eval/windows.hpp"
#include "trellis/format/dtype.hpp"
#include "trellis/format/safetensors.hpp"

namespace trellis::eval {

class LogProbsWriter {
 public:
  // dtype: F32 or F16.
  LogProbsWriter(format::DType dtype, int64_t context, int64_t vocab, std::string model);
  void add_window(std::span<const int32_t> tokens, std::span<const float> log_probs);
  void write(const std::filesystem::path& path) const;

 private:
  format::DType dtype_;
  int64_t context_, vocab_;
  std::string model_;
  std::vector<int32_t> tokens_;
  std::vector<std::byte> log_probs_;
};

class LogProbsFile {
 public:
  explicit LogProbsFile(const std::filesystem::path& path);

  int64_t context() const { return context_; }
  int64_t vocab() const { return vocab_; }
  const std::string& model() const { return model_; }
  // Throws unless the file holds `plan`'s windows of `tokens` with this vocabulary.
  void check_matches(std::span<const int32_t> tokens, const WindowPlan& plan, int64_t vocab) const;
  // Window w's rows as fp32 [context − 1, vocab]; valid until the next call.
  std::span<const float> window(int64_t w);

 private:
  format::SafetensorsFile file_;
  const format::TensorInfo* tokens_ = nullptr;
  const format::TensorInfo* log_probs_ = nullptr;
  int64_t context_ = 0, vocab_ = 0, windows_ = 0;
  std::string model_;
  std::vector<float> row_buffer_;
};

}  // namespace trellis::eval
