// Test helpers for model directories: a self-removing temporary directory,
// owned tensors written with format::write_safetensors, and a check that a
// call throws trellis::Error mentioning given words.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/error.hpp"
#include "trellis/format/safetensors_writer.hpp"

namespace trellis::test {

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "trellis-model-test-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), std::streamsize(text.size()));
}

struct OwnedTensor {
  std::string name;
  format::DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

template <class T>
OwnedTensor make_tensor(std::string name, format::DType dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  return {std::move(name), dtype, std::move(shape), std::vector<std::byte>(p, p + v.size() * sizeof(T))};
}

inline void write_tensors(const std::filesystem::path& path, const std::vector<OwnedTensor>& tensors) {
  std::vector<format::TensorToWrite> w;
  for (const auto& t : tensors) w.push_back({t.name, t.dtype, t.shape, t.bytes});
  format::write_safetensors(path, w);
}

// The message of the trellis::Error that `f` throws; a failure when it
// throws nothing or something else, or when a word is missing.
template <class F>
std::string expect_error(F&& f, std::initializer_list<std::string_view> words) {
  std::string message;
  try {
    f();
    ADD_FAILURE() << "expected a trellis::Error mentioning '" << *words.begin() << "'";
    return {};
  } catch (const trellis::Error& e) {
    message = e.what();
  }
  for (auto w : words) EXPECT_NE(message.find(w), std::string::npos) << "message lacks '" << w << "': " << message;
  return message;
}

}  // namespace trellis::test
