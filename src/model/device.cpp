// parse_device and make_backend (contract in trellis/model/device.hpp).
#include "trellis/model/device.hpp"

#include <string>

#include "trellis/error.hpp"
#include "trellis/model/cpu_backend.hpp"

namespace trellis::model {

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw Error("unknown device '" + std::string(name) + "' (cpu or cuda)");
}

std::unique_ptr<Backend> make_backend(Device device) {
  if (device == Device::cuda) throw Error("CUDA backend not built/available (this build runs models on the CPU only)");
  return make_cpu_backend();
}

}  // namespace trellis::model
