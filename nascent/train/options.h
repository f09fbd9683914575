// What a training run is configured with, and the optimizer and learning-rate
// schedule those options name. Shared by every trainer (the classifier of
// `nascent train`, and language-model training), and stored in checkpoints
// as JSON so that a resumed run continues with the same settings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nascent/nn/module.h"
#include "nascent/optim/optimizer.h"
#include "nascent/optim/schedule.h"

namespace nascent::train {

struct TrainOptions {
  std::string model = "cnn";       // A name the task's model factory knows.
  std::string optimizer = "adam";  // "adam", "adamw" or "sgd".
  int64_t epochs = 3;
  int64_t batch_size = 64;
  double lr = 1e-3;
  double momentum = 0.9;  // SGD only.
  double weight_decay = 0.0;
  std::string schedule = "cosine";  // "cosine" (to 0 over the run), "constant"
  int64_t warmup_steps = 0;
  uint64_t seed = 0;  // Initialisation and data order.

  nlohmann::json to_json() const;
  // ValueError naming the field if one is missing or of the wrong type.
  static TrainOptions from_json(const nlohmann::json& j);
};

// The optimizer `o.optimizer` names over `params`; ValueError naming the
// choices for an unknown one.
std::unique_ptr<optim::Optimizer> make_optimizer(
    const TrainOptions& o, const std::vector<nn::NamedTensor>& params);

// The schedule `o.schedule` names for a run of `total_steps` steps, with
// `o.warmup_steps` of linear warm-up first; ValueError for an unknown one.
std::shared_ptr<const optim::Schedule> make_schedule(const TrainOptions& o,
                                                     int64_t total_steps);

}  // namespace nascent::train
