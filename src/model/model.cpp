// Model (contract in trellis/model/model.hpp).
#include "trellis/model/model.hpp"

namespace trellis::model {

Model::Model(const std::filesystem::path& dir, std::unique_ptr<Backend> backend)
    : dir_(dir),
      arch_(architecture_of(dir_.config(), (dir / "config.json").string())),
      backend_(std::move(backend)),
      weights_(load_weights(dir_, arch_, *backend_)) {}

}  // namespace trellis::model
