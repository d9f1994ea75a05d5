// StagingDir: an output directory that appears whole or not at all.
//
// The constructor checks the target first: an existing target without
// `replace` is a trellis::Error naming it (nothing is created). Work then
// goes into a fresh directory next to the target, `<target>.tmp-XXXXXX`
// (same filesystem, so the final rename is atomic). commit() renames it to
// the target; with `replace` an existing target is first moved aside to
// `<target>.old-XXXXXX` and removed only once the new one is in place.
// Destroying an uncommitted StagingDir removes the staging directory.
#pragma once
#include <filesystem>

namespace trellis::quant {

class StagingDir {
 public:
  StagingDir(const std::filesystem::path& target, bool replace);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool replace_ = false;
  bool committed_ = false;
};

}  // namespace trellis::quant
