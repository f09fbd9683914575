// Image classification on Fashion-MNIST: the two models `nascent train`
// offers, and a trainer that owns the model, the optimizer and the autodiff
// backend, and checkpoints all of it (with the data order) so that a
// resumed run continues bit for bit.
//
//   cnn: conv 3x3 1->32, ReLU, max pool 2, conv 3x3 32->64, ReLU, max pool 2,
//        flatten, linear 3136->128, ReLU, linear 128->10 (421 642 parameters)
//   mlp: flatten, linear 784->512, ReLU, linear 512->256, ReLU,
//        linear 256->10 (535 818 parameters)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "nascent/autodiff/autodiff.h"
#include "nascent/data/loader.h"
#include "nascent/nn/layers.h"
#include "nascent/optim/optimizer.h"
#include "nascent/optim/schedule.h"

namespace nascent::models {

// "cnn" or "mlp"; ValueError naming the choices otherwise.
std::shared_ptr<nn::Sequential> fashion_mnist_model(const std::string& kind,
                                                    Backend& backend,
                                                    uint64_t seed);

struct TrainOptions {
  std::string model = "cnn";
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

struct EvalResult {
  double loss = 0.0;  // Mean cross-entropy.
  double accuracy = 0.0;
  int64_t count = 0;
};

class ClassifierTrainer {
 public:
  // Builds the model and optimizer on an autodiff backend wrapping `inner`.
  // `train_size` (examples per epoch) fixes the schedule's length.
  ClassifierTrainer(const TrainOptions& options, Backend& inner,
                    int64_t train_size);

  const TrainOptions& options() const { return options_; }
  // The backend that batches must live on (autodiff over `inner`).
  Backend& backend() { return ad_; }
  nn::Sequential& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  data::LoaderOptions loader_options() const;

  // One step (forward, loss, backward, update) at the schedule's learning
  // rate; returns the loss, a 0-d tensor not yet read back.
  Tensor step(const data::Batch& batch);
  // Mean loss and accuracy in eval mode, without a tape.
  EvalResult evaluate(const data::ImageDataset& dataset,
                      int64_t batch_size = 1000);

  // Where training stands: the next batch to run is `next_batch` of epoch
  // `epoch`; `steps` have run in all.
  int64_t epoch = 0;
  int64_t next_batch = 0;
  int64_t steps() const { return optimizer_->step_count(); }
  double lr_at(int64_t step) const { return schedule_->lr(step); }

  // Checkpoints the model, the optimizer, the options and the position.
  void save(const std::string& path, const nlohmann::json& extra = {}) const;
  // Restores a checkpoint written by save() with the same model and
  // optimizer; ValueError if the options differ in either.
  void load(const std::string& path);
  // The options a checkpoint was trained with.
  static TrainOptions checkpoint_options(const std::string& path);

 private:
  TrainOptions options_;
  autodiff::Backend ad_;
  std::shared_ptr<nn::Sequential> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<const optim::Schedule> schedule_;
  std::vector<Tensor*> params_;
};

}  // namespace nascent::models
