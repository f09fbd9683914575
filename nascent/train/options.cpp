#include "nascent/train/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

namespace nascent::train {

using nlohmann::json;

json TrainOptions::to_json() const {
  return {{"model", model},
          {"optimizer", optimizer},
          {"epochs", epochs},
          {"batch_size", batch_size},
          {"lr", lr},
          {"momentum", momentum},
          {"weight_decay", weight_decay},
          {"schedule", schedule},
          {"warmup_steps", warmup_steps},
          {"seed", seed}};
}

TrainOptions TrainOptions::from_json(const json& j) {
  auto field = [&](const char* key) -> const json& {
    if (!j.is_object() || !j.contains(key)) {
      throw ValueError(fmt::format("training options: \"{}\" is missing", key));
    }
    return j[key];
  };
  auto get = [&](const char* key, auto& out) {
    const json& v = field(key);
    using T = std::decay_t<decltype(out)>;
    bool ok = std::is_same_v<T, std::string> ? v.is_string()
              : std::is_floating_point_v<T>  ? v.is_number()
                                             : v.is_number_integer();
    if (!ok) {
      throw ValueError(
          fmt::format("training options: \"{}\" is {}", key, v.dump()));
    }
    out = v.get<T>();
  };
  TrainOptions o;
  get("model", o.model);
  get("optimizer", o.optimizer);
  get("epochs", o.epochs);
  get("batch_size", o.batch_size);
  get("lr", o.lr);
  get("momentum", o.momentum);
  get("weight_decay", o.weight_decay);
  get("schedule", o.schedule);
  get("warmup_steps", o.warmup_steps);
  get("seed", o.seed);
  return o;
}

std::unique_ptr<optim::Optimizer> make_optimizer(
    const TrainOptions& o, const std::vector<nn::NamedTensor>& params) {
  if (o.optimizer == "sgd") {
    return std::make_unique<optim::SGD>(
        params, optim::SGDOptions{.lr = o.lr,
                                  .momentum = o.momentum,
                                  .weight_decay = o.weight_decay});
  }
  optim::AdamOptions a{.lr = o.lr, .weight_decay = o.weight_decay};
  if (o.optimizer == "adam") return std::make_unique<optim::Adam>(params, a);
  if (o.optimizer == "adamw") return std::make_unique<optim::AdamW>(params, a);
  throw ValueError(fmt::format(
      "train: unknown optimizer \"{}\" (sgd, adam, adamw)", o.optimizer));
}

std::shared_ptr<const optim::Schedule> make_schedule(const TrainOptions& o,
                                                     int64_t total_steps) {
  const int64_t decay = std::max<int64_t>(1, total_steps - o.warmup_steps);
  std::shared_ptr<const optim::Schedule> base;
  if (o.schedule == "cosine") {
    base = std::make_shared<optim::CosineLR>(o.lr, decay);
  } else if (o.schedule == "constant") {
    base = std::make_shared<optim::ConstantLR>(o.lr);
  } else {
    throw ValueError(fmt::format(
        "train: unknown schedule \"{}\" (cosine, constant)", o.schedule));
  }
  return o.warmup_steps > 0
             ? std::make_shared<optim::WarmupLR>(base, o.warmup_steps)
             : base;
}

}  // namespace nascent::train
