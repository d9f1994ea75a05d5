// trellis::Error — the one exception type the library throws at its edges.
// The message always names the thing that is wrong (file, tensor, field) and
// the rule it broke, so the CLI can print it as one line and exit non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace trellis {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace trellis
