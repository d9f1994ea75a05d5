// AtomicFile: writes a file so readers see either the old file or the whole
// new one, never a partial one. Bytes go to a temporary file in the target's
// directory; commit() fsyncs it, renames it over the target and fsyncs the
// directory. Destroying an uncommitted AtomicFile removes the temporary.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace trellis::format {

class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

// Writes `text` to `path` atomically (as above).
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace trellis::format
