// Cached log-probabilities over evaluation windows (layout and checks in
// trellis/eval/log_probs_file.hpp).
#include "trellis/eval/log_probs_file.hpp"

#include <algorithm>
#include <cstring>

#include "trellis/error.hpp"
#include "trellis/eval/token_scores.hpp"
#include "trellis/format/safetensors_writer.hpp"
#include "trellis/half.hpp"

namespace trellis::eval {
namespace {

constexpr const char* kFormat = "trellis-eval-log-probs";

std::span<const std::byte> bytes_of(std::span<const int32_t> v) { return std::as_bytes(v); }

}  // namespace

LogProbsWriter::LogProbsWriter(format::DType dtype, int64_t context, int64_t vocab, std::string model)
    : dtype_(dtype), context_(context), vocab_(vocab), model_(std::move(model)) {
  if (dtype != format::DType::F32 && dtype != format::DType::F16)
    throw Error("log-probs file: dtype must be f32 or f16");
}

void LogProbsWriter::add_window(std::span<const int32_t> tokens, std::span<const float> log_probs) {
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  const size_t at = log_probs_.size();
  if (dtype_ == format::DType::F32) {
    log_probs_.resize(at + log_probs.size_bytes());
    std::memcpy(log_probs_.data() + at, log_probs.data(), log_probs.size_bytes());
    return;
  }
  log_probs_.resize(at + log_probs.size() * 2);
  for (size_t i = 0; i < log_probs.size(); ++i) {
    const uint16_t h = float_to_fp16(log_probs[i]);
    std::memcpy(log_probs_.data() + at + 2 * i, &h, 2);
  }
}

void LogProbsWriter::write(const std::filesystem::path& path) const {
  const int64_t windows = int64_t(tokens_.size()) / context_;
  const std::vector<format::TensorToWrite> tensors{
      {"tokens", format::DType::I32, {int64_t(tokens_.size())}, bytes_of(tokens_)},
      {"log_probs", dtype_, {windows * (context_ - 1), vocab_}, log_probs_}};
  format::write_safetensors(path, tensors,
                            {{"format", kFormat}, {"context", std::to_string(context_)}, {"model", model_}});
}

LogProbsFile::LogProbsFile(const std::filesystem::path& path) : file_(path) {
  const std::string where = path.string() + ": ";
  const auto& meta = file_.metadata();
  const auto format_it = meta.find("format");
  if (format_it == meta.end() || format_it->second != kFormat)
    throw Error(where + "not a trellis eval log-probs file (metadata format != " + kFormat + ")");
  tokens_ = file_.find("tokens");
  log_probs_ = file_.find("log_probs");
  if (!tokens_ || !log_probs_) throw Error(where + "needs the tensors 'tokens' and 'log_probs'");
  if (tokens_->dtype != format::DType::I32 || tokens_->shape.size() != 1)
    throw Error(where + "'tokens' must be I32 [n]");
  if ((log_probs_->dtype != format::DType::F32 && log_probs_->dtype != format::DType::F16) ||
      log_probs_->shape.size() != 2)
    throw Error(where + "'log_probs' must be F32 or F16 [rows, vocab]");
  const auto context_it = meta.find("context");
  try {
    context_ = context_it == meta.end() ? 0 : std::stoll(context_it->second);
  } catch (const std::exception&) {
    context_ = 0;
  }
  if (context_ < 2) throw Error(where + "metadata 'context' is missing or below 2");
  windows_ = tokens_->shape[0] / context_;
  vocab_ = log_probs_->shape[1];
  if (tokens_->shape[0] % context_ != 0 || log_probs_->shape[0] != windows_ * (context_ - 1))
    throw Error(where + "'tokens' and 'log_probs' do not hold whole windows of " + std::to_string(context_));
  if (const auto it = meta.find("model"); it != meta.end()) model_ = it->second;
}

void LogProbsFile::check_matches(std::span<const int32_t> tokens, const WindowPlan& plan, int64_t vocab) const {
  const std::string where = file_.path().string() + ": ";
  if (vocab != vocab_)
    throw Error(where + "reference vocabulary is " + std::to_string(vocab_) + " tokens, the model's " +
                std::to_string(vocab) + ": KL needs the same vocabulary");
  if (plan.context != context_)
    throw Error(where + "windows of " + std::to_string(context_) + " tokens, the evaluation uses -c " +
                std::to_string(plan.context));
  if (plan.count > windows_)
    throw Error(where + "holds " + std::to_string(windows_) + " windows, the evaluation needs " +
                std::to_string(plan.count));
  const auto stored = tokens_->values<int32_t>();
  const size_t n = size_t(plan.count * plan.context);
  if (!std::equal(stored.begin(), stored.begin() + n, tokens.begin()))
    throw Error(where + "its windows hold other tokens (another text, split or tokenizer)");
}

std::span<const float> LogProbsFile::window(int64_t w) {
  const size_t rows = size_t(context_ - 1), v = size_t(vocab_), begin = size_t(w) * rows * v;
  if (log_probs_->dtype == format::DType::F32) return log_probs_->values<float>().subspan(begin, rows * v);
  const auto halves = log_probs_->values<uint16_t>().subspan(begin, rows * v);
  row_buffer_.resize(rows * v);
  for (size_t i = 0; i < rows * v; ++i) row_buffer_[i] = fp16_to_float(halves[i]);
  for (size_t r = 0; r < rows; ++r) {
    const std::span<float> row = std::span<float>(row_buffer_).subspan(r * v, v);
    log_softmax(row, row);
  }
  return row_buffer_;
}

}  // namespace trellis::eval
