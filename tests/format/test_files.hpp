// Test helpers: a self-removing temporary directory, raw safetensors images
// built by hand (to break them on purpose), owned tensors for the writer, and
// a check that a call throws trellis::Error mentioning given words.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/temp_dir.hpp"
#include "trellis/error.hpp"
#include "trellis/format/safetensors_writer.hpp"

namespace trellis::test {

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// 8-byte little-endian length + header + data, the length taken from the
// header unless `declared_length` overrides it.
inline std::string safetensors_image(std::string_view header, std::string_view data,
                                     std::optional<uint64_t> declared_length = std::nullopt) {
  const uint64_t n = declared_length.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  out.append(header);
  out.append(data);
  return out;
}

inline std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
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
  for (auto w : words)
    EXPECT_NE(message.find(w), std::string::npos) << "message lacks '" << w << "': " << message;
  return message;
}

// A tensor that owns its bytes, for write_safetensors.
struct OwnedTensor {
  std::string name;
  format::DType dtype = format::DType::U8;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;

  format::TensorToWrite view() const { return {name, dtype, shape, data}; }
};

template <class T>
OwnedTensor make_tensor(std::string name, format::DType dtype, std::vector<int64_t> shape,
                        const std::vector<T>& values) {
  OwnedTensor t{std::move(name), dtype, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

inline void write_tensors(const std::filesystem::path& path, const std::vector<OwnedTensor>& tensors,
                          const std::map<std::string, std::string>& metadata = {}) {
  std::vector<format::TensorToWrite> views;
  for (const auto& t : tensors) views.push_back(t.view());
  format::write_safetensors(path, views, metadata);
}

}  // namespace trellis::test
