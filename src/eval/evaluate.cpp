// evaluate(): the model, the reference and the windows put together
// (contract in trellis/eval/evaluate.hpp).
#include "trellis/eval/evaluate.hpp"

#include <chrono>
#include <cmath>
#include <memory>

#include "trellis/error.hpp"
#include "trellis/eval/log_probs_file.hpp"
#include "trellis/eval/token_scores.hpp"
#include "trellis/model/model.hpp"
#include "trellis/tokenizer/tokenizer.hpp"

namespace trellis::eval {
namespace {

namespace fs = std::filesystem;

void require_dir(const fs::path& dir, const char* what) {
  if (!fs::is_directory(dir)) throw Error(dir.string() + ": " + what + " directory not found");
}

std::unique_ptr<model::Model> open_model(const fs::path& dir, model::Device device) {
  return std::make_unique<model::Model>(dir, model::make_backend(device));
}

}  // namespace

EvalResult evaluate(const EvalOptions& o, const EvalProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  if (!o.kl_ref_dir.empty() && !o.kl_ref_logits.empty())
    throw Error("give one reference: --kl-ref DIR or --kl-ref-logits FILE, not both");
  require_dir(o.model_dir, "model");
  if (!o.kl_ref_dir.empty()) require_dir(o.kl_ref_dir, "reference model");

  const TextSlice slice = read_text(o.text, o.split, o.from_byte);
  if (slice.text.empty())
    throw Error(o.text.string() + ": the text to score is empty (bytes " + std::to_string(slice.begin) + "-" +
                std::to_string(slice.end) + ")");
  const auto tok = tokenizer::Tokenizer::from_dir(o.model_dir);
  const std::vector<int32_t> tokens = tok.encode(slice.text, /*allow_special=*/false);
  const WindowPlan plan = plan_windows(int64_t(tokens.size()), o.context, o.max_windows);

  const auto model = open_model(o.model_dir, o.device);
  const int64_t vocab = model->arch().vocab;
  std::unique_ptr<model::Model> ref_model;
  std::unique_ptr<WindowRunner> ref_runner;
  if (!o.kl_ref_dir.empty()) {
    ref_model = open_model(o.kl_ref_dir, o.device);
    if (ref_model->arch().vocab != vocab)
      throw Error(o.kl_ref_dir.string() + ": reference vocabulary is " + std::to_string(ref_model->arch().vocab) +
                  " tokens, the model's " + std::to_string(vocab) + ": KL needs the same vocabulary");
    ref_runner = std::make_unique<WindowRunner>(*ref_model, plan.context);
  }
  std::unique_ptr<LogProbsFile> ref_file;
  if (!o.kl_ref_logits.empty()) {
    ref_file = std::make_unique<LogProbsFile>(o.kl_ref_logits);
    ref_file->check_matches(tokens, plan, vocab);
  }
  std::unique_ptr<LogProbsWriter> saver;
  if (!o.save_logits.empty())
    saver = std::make_unique<LogProbsWriter>(o.save_dtype, plan.context, vocab, o.model_dir.string());

  WindowRunner runner(*model, plan.context);
  Scores scores;
  const size_t v = size_t(vocab);
  for (int64_t w = 0; w < plan.count; ++w) {
    const auto window = window_tokens(tokens, plan, w);
    const auto lp = runner.log_probs(window);
    if (saver) saver->add_window(window, lp);
    const std::span<const float> ref = ref_runner ? ref_runner->log_probs(window)
                                       : ref_file ? ref_file->window(w)
                                                  : std::span<const float>{};
    for (size_t i = 0; i + 1 < window.size(); ++i) {
      const auto row = lp.subspan(i * v, v);
      if (ref.empty()) {
        scores.nll.push_back(-double(row[size_t(window[i + 1])]));
        continue;
      }
      const TokenComparison c = compare_token(row, ref.subspan(i * v, v), window[i + 1]);
      scores.nll.push_back(c.nll);
      scores.ref_nll.push_back(c.ref_nll);
      scores.kld.push_back(c.kld);
      scores.same_top.push_back(c.same_top);
    }
    if (progress) {
      double sum = 0;
      for (double x : scores.nll) sum += x;
      progress(w + 1, plan.count, std::exp(sum / double(scores.nll.size())));
    }
  }
  if (saver) saver->write(o.save_logits);

  return {.text_begin = slice.begin,
          .text_end = slice.end,
          .text_file_size = slice.file_size,
          .tokens = int64_t(tokens.size()),
          .plan = plan,
          .backend = model->backend().name(),
          .summary = summarize(scores),
          .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace trellis::eval
