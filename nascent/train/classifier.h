// A trainer for image classifiers: it owns the model, the optimizer and the
// autodiff backend, and checkpoints all of it (with the data order) so that
// a resumed run continues bit for bit. What is trained comes from a
// ClassifierTask (models/fashion_mnist.h gives the one `nascent train` runs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nascent/autodiff/autodiff.h"
#include "nascent/data/loader.h"
#include "nascent/dist/data_parallel.h"
#include "nascent/nn/layers.h"
#include "nascent/train/options.h"

namespace nascent::train {

// The models a task offers and how its inputs are normalised.
struct ClassifierTask {
  // Builds the model `name` (TrainOptions::model) with parameters on
  // `backend` from `seed`; ValueError naming the choices for an unknown name.
  std::function<std::shared_ptr<nn::Sequential>(
      const std::string& name, Backend& backend, uint64_t seed)>
      make_model;
  float mean = 0.0f;  // The loader maps pixel p to (p / 255 - mean) / std.
  float std = 1.0f;
};

struct EvalResult {
  double loss = 0.0;  // Mean cross-entropy.
  double accuracy = 0.0;
  int64_t count = 0;
};

class ClassifierTrainer {
 public:
  // Builds the model and optimizer on an autodiff backend wrapping `inner`.
  // `train_size` (examples per epoch) fixes the schedule's length. With a
  // communicator of several ranks, training is data-parallel: every rank
  // starts from rank 0's weights, a step's options.batch_size examples are
  // shared out between the ranks (loader_options() shards the loader), the
  // gradients are averaged over them, and only rank 0 writes checkpoints.
  // A step is then the step one process takes on the whole batch, so a run
  // may resume with another number of ranks.
  ClassifierTrainer(const TrainOptions& options, Backend& inner,
                    int64_t train_size, const ClassifierTask& task,
                    dist::Communicator* comm = nullptr);

  const TrainOptions& options() const { return options_; }
  // The backend that batches must live on (autodiff over `inner`).
  Backend& backend() { return ad_; }
  nn::Sequential& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  data::LoaderOptions loader_options() const;

  // One step (forward, loss, backward, update) at the schedule's learning
  // rate; returns the loss, a 0-d tensor not yet read back (data-parallel:
  // this rank's mean over its share, zero for an empty share).
  Tensor step(const data::Batch& batch);
  // Mean loss and accuracy in eval mode, without a tape (data-parallel:
  // each rank evaluates its share and the sums are added up).
  EvalResult evaluate(const data::ImageDataset& dataset,
                      int64_t batch_size = 1000);

  // Where training stands: the next batch to run is `next_batch` of epoch
  // `epoch`; `steps` have run in all.
  int64_t epoch = 0;
  int64_t next_batch = 0;
  int64_t steps() const { return optimizer_->step_count(); }
  double lr_at(int64_t step) const { return schedule_->lr(step); }

  // The communicator of a data-parallel run, or null.
  dist::Communicator* communicator() const { return comm_; }

  // Checkpoints the model, the optimizer, the options and the position
  // (data-parallel: rank 0 writes, the others return at once).
  void save(const std::string& path, const nlohmann::json& extra = {}) const;
  // Restores a checkpoint written by save() with the same model and
  // optimizer; ValueError if the options differ in either.
  void load(const std::string& path);
  // The options a checkpoint was trained with.
  static TrainOptions checkpoint_options(const std::string& path);

 private:
  TrainOptions options_;
  ClassifierTask task_;
  autodiff::Backend ad_;
  std::shared_ptr<nn::Sequential> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<const optim::Schedule> schedule_;
  std::vector<Tensor*> params_;
  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<dist::DataParallel> ddp_;
};

}  // namespace nascent::train
