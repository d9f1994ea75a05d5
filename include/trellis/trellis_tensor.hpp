// A borrowed view of one trellis-coded tensor: its code words, its fp16 row
// scales (raw IEEE binary16 bits) and its geometry. Host or device pointers;
// the view never owns them.
#pragma once
#include <cstdint>

#include "trellis/geometry.hpp"

namespace trellis {

struct TrellisTensorView {
  const uint32_t* codes = nullptr;   // geom.total_words() words, layout per geom
  const uint16_t* scales = nullptr;  // geom.rows fp16 values
  TrellisGeometry geom;
};

}  // namespace trellis
