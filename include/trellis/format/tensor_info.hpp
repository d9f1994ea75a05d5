// TensorInfo: one tensor of a safetensors file — name, dtype, shape and a
// borrowed, zero-copy view of its bytes inside the mapped file. The view is
// valid while the SafetensorsFile (or TensorStore) that produced it lives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trellis/format/dtype.hpp"

namespace trellis::format {

struct TensorInfo {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  uint64_t file_offset = 0;         // where the data starts, in bytes from the start of the file
  std::span<const std::byte> data;  // shape-product × dtype-size bytes, borrowed
  std::string source;               // the file it lives in (for messages)

  // Product of the shape (1 for a scalar).
  int64_t numel() const;

  // A trellis::Error naming the tensor and `what` it is loaded as unless the
  // dtype is bf16, fp16 or fp32.
  void require_float(const char* what) const;

  // Every element widened to fp32 (require_float first).
  std::vector<float> to_f32(const char* what) const;

  // The data as elements of T. Throws trellis::Error naming the tensor when
  // sizeof(T) is not the dtype's size or the data is not aligned for T.
  template <class T>
  std::span<const T> values() const {
    check_view(sizeof(T), alignof(T));
    return {reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T)};
  }

 private:
  void check_view(std::size_t elem_size, std::size_t align) const;
};

// "[4096, 512]".
std::string shape_string(std::span<const int64_t> shape);

}  // namespace trellis::format
