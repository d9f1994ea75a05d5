// What the axis-1 tensor-core launchers (mma_axis1.cu, wgmma_axis1.cu) share
// on the host side:
//   pick_k_instance<Of>(k0, k1, nproj)  the compiled kernel a call runs: one
//       projection at k ∈ {2, 3, 4} (K0 = K1 = k0, NPROJ = 1) or a gate/up pair
//       at any two of them (NPROJ = 2); Of<K0, K1, NPROJ>::launch is that
//       instantiation's host launcher; nullptr for a k outside 2..4.
//   set_call(args, w, nproj, x, M, out, tail, counters)  the argument fields
//       both kernels have: per projection the geometry, code words and scales
//       (a one-projection call repeats its geometry in slot 1), then the
//       activations, output, tail and split-K counters.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "trellis/numerics.hpp"
#include "trellis/trellis_tensor.hpp"

namespace trellis::cuda::detail {

template <template <int, int, int> class Of, int K0>
constexpr auto pick_pair_instance(int k1) -> decltype(&Of<2, 2, 1>::launch) {
  switch (k1) {
    case 2: return &Of<K0, 2, 2>::launch;
    case 3: return &Of<K0, 3, 2>::launch;
    case 4: return &Of<K0, 4, 2>::launch;
    default: return nullptr;
  }
}

template <template <int, int, int> class Of>
constexpr auto pick_k_instance(int k0, int k1, int nproj) -> decltype(&Of<2, 2, 1>::launch) {
  switch (k0) {
    case 2: return nproj == 1 ? &Of<2, 2, 1>::launch : pick_pair_instance<Of, 2>(k1);
    case 3: return nproj == 1 ? &Of<3, 3, 1>::launch : pick_pair_instance<Of, 3>(k1);
    case 4: return nproj == 1 ? &Of<4, 4, 1>::launch : pick_pair_instance<Of, 4>(k1);
    default: return nullptr;
  }
}

template <class Args>
void set_call(Args& a, const TrellisTensorView* w, int nproj, const uint16_t* x, int M, uint16_t* out, SwigluTail tail,
              unsigned* counters) {
  for (int p = 0; p < nproj; ++p) {
    a.geom[p] = w[p].geom;
    a.codes[p] = w[p].codes;
    a.scales[p] = reinterpret_cast<const __half*>(w[p].scales);
  }
  if (nproj == 1) a.geom[1] = a.geom[0];
  a.x = reinterpret_cast<const __nv_bfloat16*>(x);
  a.M = M;
  a.out = reinterpret_cast<__nv_bfloat16*>(out);
  a.tail = tail;
  a.counters = counters;
}

}  // namespace trellis::cuda::detail
