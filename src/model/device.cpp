// parse_device and make_backend (contract in trellis/model/device.hpp).
#include "trellis/model/device.hpp"

#include <string>

#include "trellis/error.hpp"
#include "trellis/model/cpu_backend.hpp"
#ifdef TRELLIS_HAVE_CUDA_BACKEND
#include <cstdlib>

#include "trellis/model/cuda_backend.hpp"
#endif

namespace trellis::model {

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw Error("unknown device '" + std::string(name) + "' (cpu or cuda)");
}

std::unique_ptr<Backend> make_backend(Device device) {
  if (device == Device::cpu) return make_cpu_backend();
#ifdef TRELLIS_HAVE_CUDA_BACKEND
  const char* graphs = std::getenv("TRELLIS_CUDA_GRAPHS");
  return make_cuda_backend({.graphs = !(graphs && std::string(graphs) == "0")});
#else
  throw Error("CUDA backend not built/available (this build runs models on the CPU only)");
#endif
}

}  // namespace trellis::model
