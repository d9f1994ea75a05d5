// MappedFile: a whole file mapped read-only into memory (RAII). The bytes
// stay at the same address for the object's life, moves included, so
// views into them survive moving the owner.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>

namespace trellis::format {

class MappedFile {
 public:
  // Maps `path`; throws trellis::Error naming the path and the OS error.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace trellis::format
