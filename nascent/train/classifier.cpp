#include "nascent/train/classifier.h"

#include <fmt/format.h>

#include "nascent/io/safetensors.h"
#include "nascent/nn/loss.h"
#include "nascent/train/checkpoint.h"

namespace nascent::train {

using nlohmann::json;

ClassifierTrainer::ClassifierTrainer(const TrainOptions& options,
                                     Backend& inner, int64_t train_size,
                                     const ClassifierTask& task,
                                     dist::Communicator* comm)
    : options_(options), task_(task), ad_(inner), comm_(comm) {
  const TrainOptions& o = options_;
  if (o.epochs <= 0 || o.batch_size <= 0 || train_size <= 0) {
    throw ValueError(fmt::format(
        "train: epochs ({}), batch size ({}) and training examples ({}) must "
        "be positive",
        o.epochs, o.batch_size, train_size));
  }
  if (!task_.make_model) {
    throw ValueError("train: the classifier task has no model factory");
  }
  model_ = task_.make_model(o.model, ad_, o.seed);
  std::vector<nn::NamedTensor> named = model_->named_parameters();
  for (const nn::NamedTensor& p : named) {
    autodiff::set_requires_grad(*p.tensor);
    params_.push_back(p.tensor);
  }
  optimizer_ = make_optimizer(o, named);
  if (comm_ != nullptr) {
    ddp_ = std::make_unique<dist::DataParallel>(*comm_, *model_, *optimizer_);
  }
  const int64_t per_epoch = (train_size + o.batch_size - 1) / o.batch_size;
  schedule_ = make_schedule(o, o.epochs * per_epoch);
}

data::LoaderOptions ClassifierTrainer::loader_options() const {
  return {.batch_size = options_.batch_size,
          .shuffle = true,
          .seed = options_.seed,
          .mean = task_.mean,
          .std = task_.std,
          .rank = comm_ != nullptr ? comm_->rank() : 0,
          .world_size = comm_ != nullptr ? comm_->world_size() : 1};
}

Tensor ClassifierTrainer::step(const data::Batch& batch) {
  optimizer_->set_lr(schedule_->lr(steps()));
  model_->train();
  if (ddp_) {
    const int64_t local = batch.labels.numel();
    const int64_t total = batch.total > 0 ? batch.total : local;
    Tensor loss;
    if (local > 0) {
      loss = nn::cross_entropy((*model_)(batch.images), batch.labels);
    }
    ddp_->step(loss, local, total);
    if (!loss.defined()) return zeros({}, ad_);
    return autodiff::detach(loss);
  }
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
    if (b.labels.numel() == 0) continue;  // An empty share of the batch.
    Tensor logits = (*model_)(b.images);
    nn::CrossEntropyOptions ce;
    ce.reduction = nn::Reduction::sum;
    loss_sum += nn::cross_entropy(logits, b.labels, ce).item<double>();
    correct += sum(eq(argmax(logits, 1), b.labels)).item<int64_t>();
  }
  if (comm_ != nullptr) {
    // f32 holds the counts exactly (below 2^24) and the loss to 7 digits.
    std::vector<float> sums =
        comm_
            ->all_reduce(from_vector(
                std::vector<float>{float(loss_sum), float(correct)}, ad_))
            .to_vector<float>();
    loss_sum = sums[0];
    correct = int64_t(sums[1]);
  }
  model_->train();
  EvalResult r;
  r.count = dataset.size();
  r.loss = r.count > 0 ? loss_sum / double(r.count) : 0.0;
  r.accuracy = r.count > 0 ? double(correct) / double(r.count) : 0.0;
  return r;
}

void ClassifierTrainer::save(const std::string& path, const json& extra) const {
  if (comm_ != nullptr && comm_->rank() != 0) return;
  json training = extra.is_object() ? extra : json::object();
  training["options"] = options_.to_json();
  training["epoch"] = epoch;
  training["next_batch"] = next_batch;
  save_checkpoint(path, *model_, optimizer_.get(), training);
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
  json training = load_checkpoint(path, *model_, optimizer_.get());
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

}  // namespace nascent::train
