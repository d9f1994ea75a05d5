// The trellis verbs. Each verb lives in its own file and adds its subcommand
// to the app; the CLI stays thin: parse, call the library, print.
#pragma once
#include <CLI/CLI.hpp>

namespace trellis::cli {

void add_inspect(CLI::App& app);
void add_run(CLI::App& app);
void add_quantize(CLI::App& app);
void add_eval(CLI::App& app);
void add_synth(CLI::App& app);

}  // namespace trellis::cli
