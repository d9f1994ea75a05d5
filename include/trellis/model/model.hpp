// Model: a model directory opened on a backend — its files (mapped), its
// architecture and its weights as backend handles. Immutable once loaded;
// Sessions run it. Errors (trellis::Error, naming the file or tensor): a
// missing or invalid directory, config or tensor, an unsupported
// architecture (architecture.hpp), weights the backend cannot serve.
#pragma once
#include <filesystem>
#include <memory>

#include "trellis/format/model_dir.hpp"
#include "trellis/model/architecture.hpp"
#include "trellis/model/backend.hpp"
#include "trellis/model/weights.hpp"

namespace trellis::model {

class Model {
 public:
  Model(const std::filesystem::path& dir, std::unique_ptr<Backend> backend);

  const format::ModelDir& dir() const { return dir_; }
  const Architecture& arch() const { return arch_; }
  const ModelWeights& weights() const { return weights_; }
  Backend& backend() const { return *backend_; }

 private:
  format::ModelDir dir_;  // first: the weights borrow its mapped files
  Architecture arch_;
  std::unique_ptr<Backend> backend_;
  ModelWeights weights_;
};

}  // namespace trellis::model
