// AtomicFile: mkstemp in the target directory, write, fsync, rename, fsync dir.
#include "trellis/format/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "trellis/error.hpp"

namespace trellis::format {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view what, int err) {
  throw Error(fmt::format("{}: {}: {}", path.string(), what, std::strerror(err)));
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& target) : target_(target) {
  std::string templ = (target.parent_path() / fmt::format(".{}.tmp-XXXXXX", target.filename().string())).string();
  fd_ = ::mkstemp(templ.data());
  if (fd_ < 0) fail(target, "cannot create a temporary file next to it", errno);
  temp_ = templ;
  ::fchmod(fd_, 0644);  // mkstemp makes 0600; model files are meant to be shared
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(temp_, "write failed", errno);
    }
    p += n;
    left -= std::size_t(n);
  }
}

void AtomicFile::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail(temp_, "fsync failed", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_.c_str());
    fail(temp_, "close failed", errno);
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    fail(target_, "cannot rename the temporary file over it", err);
  }
  const auto dir = target_.parent_path().empty() ? std::filesystem::path(".") : target_.parent_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // best effort: the rename is done; fsync makes it durable
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace trellis::format
