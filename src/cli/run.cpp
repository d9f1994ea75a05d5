// `trellis run`: generate from a prompt, or chat, with a model on the CPU
// or with CUDA. Generated text streams to stdout as it comes (complete UTF-8
// pieces); after each generation one stats line goes to stderr: prompt
// tokens and tok/s, generated tokens and tok/s, the backend, and with CUDA
// the session's one-token steps so far (how many replayed a graph, the
// host's time per step before its launch and its wait for a result:
// model::step_report). Without -m the model is models/shakespeare-qwen3-15m-3bit (the
// bf16 fixture coded by `trellis quantize --bits 3 --rotate --quantize-head`)
// under the working directory, else under the source tree this binary was
// built from.
//
// --chat reads user turns from stdin, one per line, until EOF. Each turn
// renders the whole conversation with the model's chat template (ChatML
// when it has none) and runs only what the session does not already hold.
// Where the conversation and a reply of min(-n, context / 2) tokens do not
// fit the context, its oldest turns (a message and its reply) are left out,
// with a notice on stderr; a message that does not fit alone is not sent
// (a line on stderr says so) and the chat goes on.
//
// TRELLIS_PROFILE=FILE with --device cuda: every op is timed on the GPU
// (trellis/model/device.hpp); a prompt run first generates 2 tokens as a
// warm-up (scratch sized, cuBLAS plans made), whose profile is dropped; at
// the end the op table goes to stderr and the JSON to FILE.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "trellis/cpu/threads.hpp"
#include "trellis/error.hpp"
#include "trellis/model/device.hpp"
#include "trellis/model/runner.hpp"
#include "trellis/model/sampling.hpp"
#include "trellis/tokenizer/chat_template.hpp"
#include "option_checks.hpp"
#include "verbs.hpp"

namespace trellis::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultModel = "models/shakespeare-qwen3-15m-3bit";

struct RunArgs {
  std::string model;
  std::string prompt;
  bool chat = false;
  int64_t max_new = 256;
  model::SamplingParams sampling;
  std::optional<uint64_t> seed;
  std::string device = "cpu";
  int64_t context = 0;
  int threads = 0;
};

fs::path resolve_model(const std::string& given) {
  if (!given.empty()) return given;
  for (const fs::path& base : {fs::current_path(), fs::path(TRELLIS_SOURCE_DIR)})
    if (fs::is_directory(base / kDefaultModel)) return base / kDefaultModel;
  throw Error(fmt::format("no model given (-m DIR) and the default {} is neither under {} nor under {}",
                          kDefaultModel, fs::current_path().string(), TRELLIS_SOURCE_DIR));
}

void print_stats(const model::GenerationStats& s, const model::Runner& runner) {
  std::fflush(stdout);
  const std::string steps = model::step_report(runner.model().backend());
  std::fprintf(stderr, "\nprompt: %lld tokens, %.1f tok/s | generation: %lld tokens, %.1f tok/s | %s%s%s\n",
               (long long)s.prompt_tokens, s.prompt_tokens_per_second(), (long long)s.generated_tokens,
               s.generation_tokens_per_second(), runner.model().backend().name().c_str(), steps.empty() ? "" : " | ",
               steps.c_str());
}

void print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
}

// The conversation as the session will hold it: its oldest turns (a message
// and its reply) left out until its tokens and `room` more fit the context,
// the newest message always kept. `first`: how many messages are left out.
struct FittedConversation {
  size_t first = 0;
  std::vector<int32_t> prompt;
};

FittedConversation fit_context(std::span<const tokenizer::ChatMessage> messages, int64_t room, int64_t context,
                               const tokenizer::Tokenizer& tok, const tokenizer::ChatTemplate& chat_template,
                               const tokenizer::ChatOptions& options) {
  FittedConversation f;
  for (;;) {
    f.prompt = tok.encode(chat_template.render(messages.subspan(f.first), options), /*allow_special=*/true);
    if (int64_t(f.prompt.size()) + room <= context || messages.size() - f.first == 1) return f;
    f.first += 2;
  }
}

void chat(model::Runner& runner, model::Sampler& sampler, int64_t max_new) {
  const tokenizer::Tokenizer& tok = runner.tokenizer();
  const auto chat_template = tokenizer::ChatTemplate::for_tokenizer(tok);
  const auto options = tokenizer::ChatOptions::for_tokenizer(tok);
  const int64_t context = runner.context();
  std::vector<tokenizer::ChatMessage> messages;
  std::string line;
  for (;;) {
    std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const FittedConversation f =
        fit_context(messages, std::min(max_new, context / 2), context, tok, chat_template, options);
    if (int64_t(f.prompt.size()) > context) {
      std::fprintf(stderr, "trellis: this message is %zu tokens with the chat template, more than the context of "
                   "%lld tokens; it was not sent\n", f.prompt.size(), (long long)context);
      messages.pop_back();
      continue;
    }
    const size_t turns_left_out = f.first / 2;
    if (turns_left_out == 1)
      std::fprintf(stderr, "(the context holds %lld tokens: the oldest turn is left out)\n", (long long)context);
    else if (turns_left_out > 1)
      std::fprintf(stderr, "(the context holds %lld tokens: the %zu oldest turns are left out)\n", (long long)context,
                   turns_left_out);
    messages.erase(messages.begin(), messages.begin() + ptrdiff_t(f.first));
    std::string reply;
    const auto stats = runner.continue_with(f.prompt, max_new, sampler, [&](std::string_view piece) {
      reply += piece;
      print_piece(piece);
    });
    messages.push_back({"assistant", reply});
    print_stats(stats, runner);
  }
  std::fputs("\n", stderr);
}

void run(const RunArgs& a) {
  if (a.chat == !a.prompt.empty()) throw Error("run: give either a prompt (-p TEXT) or --chat");
  if (a.threads > 0) trellis::cpu::set_thread_count(a.threads);
  model::SamplingParams params = a.sampling;
  params.seed = a.seed ? *a.seed : std::random_device{}();
  model::Sampler sampler(params);
  model::Runner runner({.dir = resolve_model(a.model), .device = model::parse_device(a.device), .context = a.context});
  if (a.chat) {
    chat(runner, sampler, a.max_new);
    return model::report_profile(runner.model().backend());
  }
  // The prompt is echoed once generation has started, so an error stays one line.
  bool echoed = false;
  const auto echo_then = [&](std::string_view piece) {
    if (!std::exchange(echoed, true)) print_piece(a.prompt);
    print_piece(piece);
  };
  const std::vector<int32_t> prompt = runner.encode_prompt(a.prompt);
  model::Backend& backend = runner.model().backend();
  if (model::profiling(backend)) {
    runner.complete(prompt, 2, sampler, [](std::string_view) {});
    model::reset_profile(backend);
  }
  const auto stats = runner.complete(prompt, a.max_new, sampler, echo_then);
  if (!echoed) print_piece(a.prompt);
  print_stats(stats, runner);
  model::report_profile(backend);
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "generate text from a prompt, or chat");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("-m,--model", a->model, std::string("model directory (default: ") + kDefaultModel + ")");
  auto* prompt = cmd->add_option("-p,--prompt", a->prompt, "the prompt");
  cmd->add_flag("--chat", a->chat,
                "chat: read user turns from stdin (one per line) until EOF; where the context is full the oldest "
                "turns are left out")
      ->excludes(prompt);
  cmd->add_option("-n,--max-tokens", a->max_new, "most tokens to generate")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--temp", a->sampling.temperature, "temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", a->sampling.top_k, "keep the k most likely tokens (0: off)")->capture_default_str();
  cmd->add_option("--top-p", a->sampling.top_p, "keep the smallest set with this mass (1: off)")->capture_default_str();
  cmd->add_option("--min-p", a->sampling.min_p, "drop tokens below min-p x the top one (0: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", a->sampling.repeat_penalty, "penalty for recent tokens (1: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", a->sampling.repeat_last_n, "how many recent tokens (0: all)")->capture_default_str();
  cmd->add_option("--seed", a->seed, "sampling seed (default: random)");
  cmd->add_option("--device", a->device,
                  "cpu or cuda (cuda: TRELLIS_CUDA_GRAPHS=0 runs decode steps without CUDA graphs; TRELLIS_PDL=0 "
                  "launches the kernels without programmatic dependent launch; TRELLIS_NORM_FUSION=0 launches "
                  "every residual norm instead of splitting it between the layers around it; "
                  "TRELLIS_PROFILE=FILE times every op on the GPU after a warm-up, prints the table and writes "
                  "FILE as JSON)")
      ->capture_default_str();
  cmd->add_option("-c,--context", a->context, "context length in tokens (default: the model's, at most 4096)")
      ->check(at_least(1));
  cmd->add_option("-t,--threads", a->threads, "CPU threads (default: all cores)")->check(at_least(1));
  cmd->callback([a] { run(*a); });
}

}  // namespace trellis::cli
