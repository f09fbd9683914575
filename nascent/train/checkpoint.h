// Training checkpoints: one safetensors file holding the model's state dict
// (tensors "model.<name>"), the optimizer's state ("optimizer.<key>") and,
// in the metadata, JSON for the optimizer's config and the training state
// (epoch, step, seed, whatever the caller keeps). Writes are atomic (see
// file.h); reads validate the file (see safetensors.h) and the JSON, and
// raise FormatError naming the file for anything malformed.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "nascent/core/tensor.h"
#include "nascent/nn/module.h"
#include "nascent/optim/optimizer.h"

namespace nascent::train {

struct Checkpoint {
  std::map<std::string, Tensor> model;
  optim::OptimizerState optimizer;  // Empty if none was saved.
  bool has_optimizer = false;
  nlohmann::json training = nlohmann::json::object();
};

// `optimizer` may be null. `training` must be a JSON object.
void save_checkpoint(const std::string& path, nn::Module& model,
                     const optim::Optimizer* optimizer,
                     const nlohmann::json& training);

// Reads a checkpoint's contents into `backend`.
Checkpoint read_checkpoint(const std::string& path, Backend& backend);

// Restores `model` and, if given, `optimizer` (ValueError if the file has no
// optimizer state for it) and returns the training state. On any error
// neither is changed.
nlohmann::json load_checkpoint(const std::string& path, nn::Module& model,
                               optim::Optimizer* optimizer);

}  // namespace nascent::train
