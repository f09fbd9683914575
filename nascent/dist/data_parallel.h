// Data-parallel training over a Communicator (PyTorch's DDP): every rank
// holds the whole model, runs forward and backward on its share of each
// step's examples, and the gradients are averaged over ranks before the
// optimizer's update, so that every rank takes the same step that one
// process would take on all the examples.
//
//   dist::DataParallel ddp(*comm, model, optimizer);  // rank 0's weights
//   data::Shard s = data::shard_of(batch.size(), comm->rank(),
//   comm->world_size()); Tensor loss = cross_entropy(model(x_of(s)), y_of(s));
//   // mean over s ddp.step(loss, s.count, batch.size());
//
// Gradients are all-reduced in buckets (about bucket_bytes each, the
// parameters in reverse order, as backward produces them), each started
// the moment backward has finished its last gradient, so that sending
// overlaps with the rest of backward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nascent/dist/communicator.h"
#include "nascent/nn/module.h"
#include "nascent/optim/optimizer.h"

namespace nascent::dist {

struct DataParallelOptions {
  size_t bucket_bytes = size_t(25) << 20;  // PyTorch DDP's 25 MiB.
};

class DataParallel {
 public:
  // Copies rank 0's parameters into every rank's, in place, after checking
  // that every rank has the same ones (names, shapes, dtypes; ValueError
  // otherwise). `optimizer` must update `module`'s parameters.
  DataParallel(Communicator& comm, nn::Module& module,
               optim::Optimizer& optimizer, DataParallelOptions options = {});

  // The gradients, in the optimizer's parameter order, of the mean loss
  // over a step's `total` examples, of which this rank took `local` and
  // computed `loss`, the mean over them (undefined when local is 0): each
  // rank's gradients are weighted by local / total and summed over ranks.
  // Every rank gets the same gradients.
  std::vector<Tensor> gradients(const Tensor& loss, int64_t local,
                                int64_t total);
  // gradients(), then the optimizer's update with them.
  void step(const Tensor& loss, int64_t local, int64_t total);

  Communicator& communicator() { return comm_; }
  size_t num_buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> params;  // Indices into params_, in reverse order.
    DType dtype = DType::f32;
  };

  Communicator& comm_;
  optim::Optimizer& optimizer_;
  std::vector<nn::NamedTensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // Parameter index -> bucket.
};

}  // namespace nascent::dist
