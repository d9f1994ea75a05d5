// Running a command line from a test: `run_shell` runs it through /bin/sh
// and returns its exit status (-1 when killed by a signal) and everything it
// wrote to stdout (redirect stderr in the command to capture it too);
// `shell_quote` single-quotes a path for such a command.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace trellis::test {

struct ShellResult {
  int status = -1;
  std::string output;
};

inline ShellResult run_shell(const std::string& command) {
  ShellResult r;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string shell_quote(const std::filesystem::path& p) {
  std::string s = "'";  // built in steps: GCC 12 warns (-Wrestrict) about "'" + s + "'"
  s += p.string();
  s += '\'';
  return s;
}

}  // namespace trellis::test
