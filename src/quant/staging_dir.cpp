// StagingDir (contract in include/trellis/quant/staging_dir.hpp).
#include "trellis/quant/staging_dir.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "trellis/error.hpp"

namespace trellis::quant {
namespace {

namespace fs = std::filesystem;

// mkdtemp makes the directory 0700; the output is a model meant to be shared,
// so it gets the mode mkdir would give it (0777 less the umask).
fs::path make_unique_dir(const fs::path& target, const char* tag) {
  std::string templ = target.string() + tag + "XXXXXX";
  if (!::mkdtemp(templ.data()))
    throw Error(target.string() + ": cannot create " + templ + ": " + std::strerror(errno));
  const ::mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(templ, fs::perms(0777 & ~mask), fs::perm_options::replace);
  return templ;
}

}  // namespace

StagingDir::StagingDir(const fs::path& target, bool replace) : replace_(replace) {
  target_ = target.has_filename() ? target : target.parent_path();  // "out/" names "out"
  std::error_code ec;
  if (fs::exists(fs::symlink_status(target_, ec)) && !replace_)
    throw Error(target_.string() + ": the output directory exists (use --force to replace it)");
  const fs::path parent = fs::absolute(target_).parent_path();
  if (!fs::is_directory(parent))
    throw Error(target_.string() + ": the parent directory " + parent.string() + " does not exist");
  staging_ = make_unique_dir(target_, ".tmp-");
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagingDir::commit() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(fs::symlink_status(target_, ec))) {
    if (!replace_) throw Error(target_.string() + ": the output directory appeared while quantizing");
    old = make_unique_dir(target_, ".old-");
    fs::rename(target_, old / "previous");
  }
  try {
    fs::rename(staging_, target_);
  } catch (...) {
    if (!old.empty()) fs::rename(old / "previous", target_, ec);  // put the previous output back
    throw;
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace trellis::quant
