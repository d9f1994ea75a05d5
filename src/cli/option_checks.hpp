// Checks on the verbs' numeric options, with the rule in the message:
// `--max-tokens -3` fails parsing as "--max-tokens: must be 0 or more, got -3"
// (CLI11's own range checks print the type's whole range instead).
#pragma once
#include <cerrno>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace trellis::cli {

// An integer option that must be `least` or more.
inline CLI::Validator at_least(long long least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0') return "must be an integer, got " + text;
        if (errno == ERANGE) return "is out of range: " + text;
        if (v < least) return "must be " + std::to_string(least) + " or more, got " + text;
        return {};
      },
      ">=" + std::to_string(least));
}

}  // namespace trellis::cli
