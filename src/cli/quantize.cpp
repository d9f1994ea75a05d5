// `trellis quantize --in HF_DIR --out DIR --bits K [--bits-for PATTERN=K ...]
// [--L 12] [--axis-for PATTERN=0|1] [--rotate] [--quantize-head]
// [--device cpu|cuda] [--threads N] [--force]`: a Hugging Face checkpoint to a
// trellis model (the plan, coding and output live in trellis/quant/).
//
// The input is checked whole before anything is written; the model is built
// in `DIR.tmp-XXXXXX` and renamed to DIR at the end, so DIR is complete or
// absent. SIGINT/SIGTERM stop the coding at the next row, remove the
// temporary directory and exit with 128 + the signal. --device cuda codes the
// blocks on the GPU (trellis/cuda/viterbi.hpp); without a CUDA encoder in
// this build or a CUDA device it exits with status 2 before reading anything.
// Progress goes to stderr (a bar on a terminal, a line per module otherwise);
// the summary to stdout.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "quantize_progress.hpp"
#include "trellis/error.hpp"
#include "trellis/format/model_dir.hpp"
#include "trellis/quant/quant_plan.hpp"
#include "trellis/quant/quantize_model.hpp"
#include "trellis/quant/staging_dir.hpp"
#include "option_checks.hpp"
#include "verbs.hpp"

namespace trellis::cli {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

// Catches SIGINT and SIGTERM while it lives (the previous handlers come back after).
class SignalGuard {
 public:
  SignalGuard() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

struct Interrupted {
  int signal;
};

void check_signal() {
  if (g_signal) throw Interrupted{int(g_signal)};
}

struct QuantizeArgs {
  std::string in, out, device = "cpu";
  quant::PlanOptions plan;
  std::vector<std::string> bits_for, axis_for;
  int threads = 0;
  bool force = false;
};

std::vector<quant::ModuleRule> parse_rules(const std::vector<std::string>& specs, const char* flag) {
  std::vector<quant::ModuleRule> rules;
  for (const auto& s : specs) {
    const auto eq = s.rfind('=');
    size_t used = 0;
    int value = 0;
    try {
      if (eq != std::string::npos && eq > 0) value = std::stoi(s.substr(eq + 1), &used);
    } catch (const std::exception&) {
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != s.size() - eq - 1)
      throw Error(fmt::format("{} '{}': expected PATTERN=NUMBER", flag, s));
    rules.push_back({s.substr(0, eq), value});
  }
  return rules;
}

void quantize(QuantizeArgs& a) {
  const quant::RunOptions run{a.threads, 0, a.device == "cuda"};
  try {
    quant::require_encoder(run);
  } catch (const Error& e) {
    std::fprintf(stderr, "trellis: error: --device cuda: %s; use --device cpu\n", e.what());
    throw CLI::RuntimeError(2);
  }
  a.plan.bits_for = parse_rules(a.bits_for, "--bits-for");
  a.plan.axis_for = parse_rules(a.axis_for, "--axis-for");
  const format::ModelDir in(a.in);
  const quant::QuantPlan plan =
      quant::plan_quantization(in.config(), (in.path() / "config.json").string(), in.store(), a.plan);

  const SignalGuard signals;
  std::string staging_path;
  try {
    quant::StagingDir staging(a.out, a.force);
    staging_path = staging.path().string();
    QuantizeProgress progress(plan.coded_weights, plan.coded.size(), ::isatty(STDERR_FILENO) == 1);
    quant::QuantizeCallbacks callbacks;
    callbacks.on_rows = [&](const quant::CodedModule& m, int64_t done, int64_t total) {
      check_signal();
      progress.rows(m, done, total);
    };
    callbacks.on_tensor = [&](const quant::TensorReport& r) {
      progress.tensor(r);
      check_signal();
    };
    const quant::QuantReport report = quant::quantize_model(in, plan, staging.path(), run, callbacks);
    progress.finish();
    check_signal();
    staging.commit();
    fmt::print("quantized {} tensors ({} weights) into {}: {:.3f} bits per weight, rel_error {:.4f}, {:.1f} s\n",
               report.tensors.size(), report.coded_weights(), staging.target().string(),
               8.0 * double(report.coded_bytes()) / double(report.coded_weights()), report.rel_error(),
               report.seconds);
  } catch (const Interrupted& i) {
    std::fprintf(stderr, "\ntrellis: quantize interrupted by %s; removed %s\n", i.signal == SIGINT ? "SIGINT" : "SIGTERM",
                 staging_path.c_str());
    throw CLI::RuntimeError(128 + i.signal);
  }
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "code a Hugging Face bf16/fp16/fp32 checkpoint as a trellis model");
  auto a = std::make_shared<QuantizeArgs>();
  cmd->add_option("--in", a->in, "Hugging Face model directory (config.json + safetensors)")->required();
  cmd->add_option("--out", a->out, "output model directory (must not exist unless --force)")->required();
  cmd->add_option("--bits", a->plan.bits, "bits per weight for every coded module (2, 3 or 4)")->required();
  cmd->add_option("--bits-for", a->bits_for, "PATTERN=K: bits for modules matching PATTERN (glob or substring)");
  cmd->add_option("--L", a->plan.L, "trellis state bits")->capture_default_str();
  cmd->add_option("--axis-for", a->axis_for, "PATTERN=0|1: coded axis for modules matching PATTERN");
  cmd->add_flag("--rotate", a->plan.rotate, "random-sign Hadamard rotation along the coded axis");
  cmd->add_flag("--quantize-head", a->plan.quantize_head, "also code lm_head");
  cmd->add_option("--device", a->device, "where to run the encoder")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", a->threads, "coding threads (0: all hardware threads)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "replace an existing output directory (only once the new one is complete)");
  cmd->callback([a] { quantize(*a); });
}

}  // namespace trellis::cli
