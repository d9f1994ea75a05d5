// `trellis synth --like MODEL --bits K --out DIR [--L 12] [--seed S] [--rotate] [--quantize-head] [--force]`:
// a model directory with a real model's geometry and random trellis codes,
// for speed measurements (src/cli/synth_model.hpp says what it holds).
// Progress goes to stderr, one line per shard. The tokenizer comes from
// models/shakespeare-qwen3-15m under the working directory, else under the
// source tree this binary was built from.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "synth_model.hpp"
#include "trellis/error.hpp"
#include "verbs.hpp"

namespace trellis::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTokenizerModel = "models/shakespeare-qwen3-15m";

fs::path tokenizer_dir() {
  for (const fs::path& base : {fs::current_path(), fs::path(TRELLIS_SOURCE_DIR)})
    if (fs::exists(base / kTokenizerModel / "tokenizer.json")) return base / kTokenizerModel;
  throw Error(std::string("synth: the tokenizer source ") + kTokenizerModel + " is neither under " +
              fs::current_path().string() + " nor under " + TRELLIS_SOURCE_DIR);
}

}  // namespace

void add_synth(CLI::App& app) {
  auto* cmd = app.add_subcommand("synth", "write a model with a real geometry and random trellis codes (for benches)");
  auto o = std::make_shared<SynthOptions>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("--like", o->like, "geometry: qwen3-14b, qwen3-8b, llama3-8b, or tiny (a 2-layer qwen3 for tests)")
      ->required();
  cmd->add_option("--bits", o->bits, "bits per weight (2, 3 or 4)")->required();
  cmd->add_option("--out", *out, "output model directory (must not exist unless --force)")->required();
  cmd->add_option("--L", o->L, "trellis state bits")->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed (codes, scales, signs, embeddings)")->capture_default_str();
  cmd->add_flag("--rotate", o->rotate, "Hadamard-rotated layers (signs, as trellis quantize --rotate writes)");
  cmd->add_flag("--quantize-head", o->quantize_head,
                "code the LM head too (as trellis quantize --quantize-head writes it); default: bf16");
  cmd->add_flag("--force", o->replace, "replace an existing output directory");
  cmd->callback([o, out] {
    o->out = *out;
    o->tokenizer_dir = tokenizer_dir();
    synth_model(*o, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  });
}

}  // namespace trellis::cli
