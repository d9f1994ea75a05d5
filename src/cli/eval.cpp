// `trellis eval -m DIR --ppl FILE [-c 512] [--split val|train|all |
// --from-byte N] [--max-windows N] [--kl-ref DIR | --kl-ref-logits FILE]
// [--save-logits FILE [--logits-dtype f32|f16]] [--device cpu] [--json]`:
// perplexity over non-overlapping windows, and KL divergence from a
// reference (the library: trellis/eval/evaluate.hpp).
//
// Prints llama-perplexity's lines: "Final estimate: PPL = x +/- y" and,
// with a reference, the KLD, its percentiles, "Same top p" and ΔPPL. With
// --json the same numbers go to stdout as one JSON object and the lines to
// stderr. Progress (one line per window) goes to stderr.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trellis/cpu/threads.hpp"
#include "trellis/error.hpp"
#include "trellis/eval/evaluate.hpp"
#include "option_checks.hpp"
#include "verbs.hpp"

namespace trellis::cli {
namespace {

struct EvalArgs {
  eval::EvalOptions options;
  std::string model, text, split = "val", device = "cpu", kl_ref, kl_ref_logits, save_logits;
  std::string logits_dtype = "f32";
  std::optional<uint64_t> from_byte;
  int threads = 0;
  bool json = false;
};

std::string summary_lines(const eval::EvalResult& r) {
  const auto& p = r.summary.ppl;
  std::string s = fmt::format("Final estimate: PPL = {:.4f} +/- {:.5f}\n", p.ppl, p.ppl_err);
  if (!r.summary.kl) return s;
  const auto& k = *r.summary.kl;
  s += fmt::format("PPL(ref)            : {:.4f} +/- {:.5f}\n", k.ref.ppl, k.ref.ppl_err);
  s += fmt::format("Mean PPL(Q)-PPL(ref): {:.4f} +/- {:.5f}\n", k.delta_ppl, k.delta_ppl_err);
  s += fmt::format("Mean    KLD: {:.6f} +/- {:.6f}\n", k.mean_kld, k.kld_err);
  s += fmt::format("Maximum KLD: {:.6f}\n99.0%   KLD: {:.6f}\n90.0%   KLD: {:.6f}\n", k.kld_max, k.kld_p99,
                   k.kld_p90);
  s += fmt::format("Same top p: {:.3f} +/- {:.3f} %\n", 100 * k.same_top, 100 * k.same_top_err);
  return s;
}

nlohmann::json to_json(const EvalArgs& a, const eval::EvalResult& r) {
  const auto& p = r.summary.ppl;
  nlohmann::json j = {{"model", a.model},
                      {"text", a.text},
                      {"text_bytes", {r.text_begin, r.text_end}},
                      {"text_file_bytes", r.text_file_size},
                      {"tokens", r.tokens},
                      {"context", r.plan.context},
                      {"windows", r.plan.count},
                      {"predictions", p.predictions},
                      {"backend", r.backend},
                      {"mean_nll", p.mean_nll},
                      {"ppl", p.ppl},
                      {"ppl_err", p.ppl_err},
                      {"seconds", r.seconds}};
  if (r.summary.kl) {
    const auto& k = *r.summary.kl;
    j["kl"] = {{"reference", a.kl_ref.empty() ? a.kl_ref_logits : a.kl_ref},
               {"mean_kld", k.mean_kld},
               {"kld_err", k.kld_err},
               {"kld_p90", k.kld_p90},
               {"kld_p99", k.kld_p99},
               {"kld_max", k.kld_max},
               {"same_top", k.same_top},
               {"same_top_err", k.same_top_err},
               {"ref_ppl", k.ref.ppl},
               {"ref_ppl_err", k.ref.ppl_err},
               {"delta_ppl", k.delta_ppl},
               {"delta_ppl_err", k.delta_ppl_err}};
  }
  return j;
}

void run_eval(EvalArgs& a) {
  if (a.threads > 0) trellis::cpu::set_thread_count(a.threads);
  auto& o = a.options;
  o.model_dir = a.model;
  o.text = a.text;
  o.device = model::parse_device(a.device);
  o.split = eval::parse_split(a.split);
  o.from_byte = a.from_byte;
  o.kl_ref_dir = a.kl_ref;
  o.kl_ref_logits = a.kl_ref_logits;
  o.save_logits = a.save_logits;
  if (a.logits_dtype != "f32" && a.logits_dtype != "f16")
    throw Error("--logits-dtype '" + a.logits_dtype + "': expected f32 or f16");
  o.save_dtype = a.logits_dtype == "f16" ? format::DType::F16 : format::DType::F32;
  const auto result = eval::evaluate(o, [](int64_t done, int64_t total, double ppl) {
    std::fprintf(stderr, "[%lld/%lld] PPL %.4f\n", (long long)done, (long long)total, ppl);
  });
  const std::string lines = summary_lines(result);
  std::fprintf(a.json ? stderr : stdout, "%s", lines.c_str());
  if (a.json) std::printf("%s\n", to_json(a, result).dump(2).c_str());
}

}  // namespace

void add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "perplexity over a text, and KL divergence against a reference model");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("-m,--model", a->model, "model directory")->required();
  cmd->add_option("--ppl", a->text, "text file to score")->required();
  cmd->add_option("-c,--context", a->options.context, "window length in tokens")->capture_default_str();
  auto* split = cmd->add_option("--split", a->split, "val (the last 10% of the bytes), train or all")
                    ->capture_default_str();
  cmd->add_option("--from-byte", a->from_byte, "score bytes [N, end) instead of a split")->excludes(split);
  cmd->add_option("--max-windows", a->options.max_windows, "score at most N windows (0: all)")
      ->check(at_least(0))
      ->capture_default_str();
  auto* ref = cmd->add_option("--kl-ref", a->kl_ref, "reference model directory for KL divergence");
  cmd->add_option("--kl-ref-logits", a->kl_ref_logits, "reference log-probs written by --save-logits")
      ->excludes(ref);
  cmd->add_option("--save-logits", a->save_logits, "write this model's log-probs (a later --kl-ref-logits)");
  cmd->add_option("--logits-dtype", a->logits_dtype, "f32 or f16 for --save-logits")->capture_default_str();
  cmd->add_option("--device", a->device, "cpu or cuda")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "CPU threads (default: all cores)")->check(at_least(1));
  cmd->add_flag("--json", a->json, "print the numbers as JSON on stdout (the summary lines go to stderr)");
  cmd->callback([a] { run_eval(*a); });
}

}  // namespace trellis::cli
