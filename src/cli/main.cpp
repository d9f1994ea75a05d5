// `trellis` — one binary, one subcommand per verb. Library errors arrive as
// exceptions and leave here as one line on stderr and exit status 1.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "verbs.hpp"

int main(int argc, char** argv) {
  CLI::App app{"trellis: run trellis-coded (QTIP-style 1MAD) language models"};
  app.require_subcommand(1);
  trellis::cli::add_inspect(app);
  trellis::cli::add_run(app);
  trellis::cli::add_quantize(app);
  trellis::cli::add_eval(app);
  trellis::cli::add_synth(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trellis: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
