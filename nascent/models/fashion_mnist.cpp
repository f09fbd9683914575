#include "nascent/models/fashion_mnist.h"

#include <fmt/format.h>

#include "nascent/io/checkpoint.h"
#include "nascent/io/safetensors.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/loss.h"

namespace nascent::models {

using nlohmann::json;

std::shared_ptr<nn::Sequential> fashion_mnist_model(const std::string& kind,
                                                    Backend& backend,
                                                    uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  if (kind == "cnn") {
    m->add(std::make_shared<nn::Conv2d>(
        1, 32, nn::Conv2dOptions{.kernel = 3, .padding = 1}, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::MaxPool2d>(2));
    m->add(std::make_shared<nn::Conv2d>(
        32, 64, nn::Conv2dOptions{.kernel = 3, .padding = 1}, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::MaxPool2d>(2));
    m->add(std::make_shared<nn::Flatten>());
    m->add(std::make_shared<nn::Linear>(64 * 7 * 7, 128, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(128, 10, backend, gen));
  } else if (kind == "mlp") {
    m->add(std::make_shared<nn::Flatten>());
    m->add(std::make_shared<nn::Linear>(784, 512, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(512, 256, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(256, 10, backend, gen));
  } else {
    throw ValueError(fmt::format(
        "fashion_mnist_model: unknown model \"{}\" (cnn or mlp)", kind));
  }
  return m;
}

// --- Options
// -------------------------------------------------------------------

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

// --- Trainer
// -------------------------------------------------------------------

ClassifierTrainer::ClassifierTrainer(const TrainOptions& options,
                                     Backend& inner, int64_t train_size)
    : options_(options), ad_(inner) {
  const TrainOptions& o = options_;
  if (o.epochs <= 0 || o.batch_size <= 0 || train_size <= 0) {
    throw ValueError(fmt::format(
        "train: epochs ({}), batch size ({}) and training examples ({}) must "
        "be positive",
        o.epochs, o.batch_size, train_size));
  }
  model_ = fashion_mnist_model(o.model, ad_, o.seed);
  std::vector<nn::NamedTensor> named = model_->named_parameters();
  for (const nn::NamedTensor& p : named) {
    autodiff::set_requires_grad(*p.tensor);
    params_.push_back(p.tensor);
  }
  if (o.optimizer == "sgd") {
    optimizer_ = std::make_unique<optim::SGD>(
        named, optim::SGDOptions{.lr = o.lr,
                                 .momentum = o.momentum,
                                 .weight_decay = o.weight_decay});
  } else if (o.optimizer == "adam" || o.optimizer == "adamw") {
    optim::AdamOptions a{.lr = o.lr, .weight_decay = o.weight_decay};
    if (o.optimizer == "adam") {
      optimizer_ = std::make_unique<optim::Adam>(named, a);
    } else {
      optimizer_ = std::make_unique<optim::AdamW>(named, a);
    }
  } else {
    throw ValueError(fmt::format(
        "train: unknown optimizer \"{}\" (sgd, adam, adamw)", o.optimizer));
  }
  const int64_t per_epoch = (train_size + o.batch_size - 1) / o.batch_size;
  const int64_t total =
      std::max<int64_t>(1, o.epochs * per_epoch - o.warmup_steps);
  std::shared_ptr<const optim::Schedule> base;
  if (o.schedule == "cosine") {
    base = std::make_shared<optim::CosineLR>(o.lr, total);
  } else if (o.schedule == "constant") {
    base = std::make_shared<optim::ConstantLR>(o.lr);
  } else {
    throw ValueError(fmt::format(
        "train: unknown schedule \"{}\" (cosine, constant)", o.schedule));
  }
  schedule_ = o.warmup_steps > 0
                  ? std::make_shared<optim::WarmupLR>(base, o.warmup_steps)
                  : base;
}

data::LoaderOptions ClassifierTrainer::loader_options() const {
  return {.batch_size = options_.batch_size,
          .shuffle = true,
          .seed = options_.seed,
          .mean = data::kFashionMnistMean,
          .std = data::kFashionMnistStd};
}

Tensor ClassifierTrainer::step(const data::Batch& batch) {
  optimizer_->set_lr(schedule_->lr(steps()));
  model_->train();
  Tensor loss = nn::cross_entropy((*model_)(batch.images), batch.labels);
  std::vector<Tensor> inputs;
  for (Tensor* p : params_) inputs.push_back(*p);
  // The functional form leaves no gradients accumulated in the leaves, so
  // nothing needs zeroing and nothing is added up between steps.
  std::vector<Tensor> grads = autodiff::grad({loss}, inputs);
  {
    autodiff::NoGradGuard no_grad;
    optimizer_->step(grads);
  }
  return autodiff::detach(loss);
}

EvalResult ClassifierTrainer::evaluate(const data::ImageDataset& dataset,
                                       int64_t batch_size) {
  autodiff::NoGradGuard no_grad;
  model_->eval();
  data::LoaderOptions lo = loader_options();
  lo.batch_size = batch_size;
  lo.shuffle = false;
  data::DataLoader loader(dataset, lo, ad_);
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (const data::Batch& b : loader.epoch(0)) {
    Tensor logits = (*model_)(b.images);
    nn::CrossEntropyOptions ce;
    ce.reduction = nn::Reduction::sum;
    loss_sum += nn::cross_entropy(logits, b.labels, ce).item<double>();
    correct += sum(eq(argmax(logits, 1), b.labels)).item<int64_t>();
  }
  model_->train();
  EvalResult r;
  r.count = dataset.size();
  r.loss = r.count > 0 ? loss_sum / double(r.count) : 0.0;
  r.accuracy = r.count > 0 ? double(correct) / double(r.count) : 0.0;
  return r;
}

void ClassifierTrainer::save(const std::string& path, const json& extra) const {
  json training = extra.is_object() ? extra : json::object();
  training["options"] = options_.to_json();
  training["epoch"] = epoch;
  training["next_batch"] = next_batch;
  io::save_checkpoint(path, *model_, optimizer_.get(), training);
}

TrainOptions ClassifierTrainer::checkpoint_options(const std::string& path) {
  io::SafetensorsReader reader(path);
  auto it = reader.metadata().find("training");
  json training = it == reader.metadata().end()
                      ? json()
                      : json::parse(it->second, nullptr, false);
  if (!training.is_object() || !training.contains("options")) {
    throw FormatError(fmt::format(
        "{}: not a checkpoint of `nascent train` (no training options)", path));
  }
  try {
    return TrainOptions::from_json(training["options"]);
  } catch (const ValueError& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  }
}

void ClassifierTrainer::load(const std::string& path) {
  TrainOptions saved = checkpoint_options(path);
  if (saved.model != options_.model || saved.optimizer != options_.optimizer) {
    throw ValueError(fmt::format("{}: trained a {} with {}, not a {} with {}",
                                 path, saved.model, saved.optimizer,
                                 options_.model, options_.optimizer));
  }
  json training = io::load_checkpoint(path, *model_, optimizer_.get());
  auto count = [&](const char* key) {
    if (!training.contains(key) || !training[key].is_number_integer() ||
        training[key].get<int64_t>() < 0) {
      throw FormatError(fmt::format(
          "{}: training state \"{}\" is missing or negative", path, key));
    }
    return training[key].get<int64_t>();
  };
  epoch = count("epoch");
  next_batch = count("next_batch");
}

}  // namespace nascent::models
