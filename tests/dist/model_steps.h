// A small classifier and its training steps, with and without
// DataParallel, for the data-parallel tests (one process here, two under
// mpirun in mpi/).
#pragma once

#include <memory>
#include <vector>

#include "nascent/autodiff/autodiff.h"
#include "nascent/core/ops.h"
#include "nascent/data/loader.h"
#include "nascent/dist/data_parallel.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/loss.h"

namespace nascent::testing {

// 6 -> 5 -> ReLU -> 3, parameters from `seed`.
inline std::shared_ptr<nn::Sequential> small_model(Backend& b, uint64_t seed,
                                                   int64_t hidden = 5) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(6, hidden, b, gen));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(hidden, 3, b, gen));
  for (nn::NamedTensor& p : m->named_parameters()) {
    autodiff::set_requires_grad(*p.tensor);
  }
  return m;
}

// Step `step`'s batch of `n` examples, the same on every rank.
inline std::pair<Tensor, Tensor> step_batch(Backend& b, int step, int64_t n) {
  Tensor x = randn({n, 6}, b, 100 + uint64_t(step));
  Tensor y = (rand({n}, b, 200 + uint64_t(step)) * 3.0).cast(DType::i64);
  return {x, y};
}

// One process: the mean loss over the whole batch, plain gradients.
inline void plain_step(nn::Sequential& m, optim::Optimizer& opt,
                       const Tensor& x, const Tensor& y) {
  Tensor loss = nn::cross_entropy(m(x), y);
  std::vector<Tensor> inputs;
  for (const nn::NamedTensor& p : m.named_parameters()) {
    inputs.push_back(*p.tensor);
  }
  std::vector<Tensor> g = autodiff::grad({loss}, inputs);
  autodiff::NoGradGuard no_grad;
  opt.step(g);
}

// This rank's share of the batch through DataParallel.
inline void parallel_step(nn::Sequential& m, dist::DataParallel& ddp,
                          const Tensor& x, const Tensor& y) {
  const dist::Communicator& c = ddp.communicator();
  const data::Shard s = data::shard_of(x.shape(0), c.rank(), c.world_size());
  Tensor loss;
  if (s.count > 0) {
    loss = nn::cross_entropy(m(x.narrow(0, s.begin, s.count)),
                             y.narrow(0, s.begin, s.count));
  }
  ddp.step(loss, s.count, x.shape(0));
}

// The largest difference between the two models' parameters.
inline double max_difference(nn::Sequential& a, nn::Sequential& b) {
  std::vector<nn::NamedTensor> pa = a.named_parameters(),
                               pb = b.named_parameters();
  double worst = 0.0;
  for (size_t i = 0; i < pa.size(); ++i) {
    std::vector<double> va = pa[i].tensor->to_vector<double>(),
                        vb = pb[i].tensor->to_vector<double>();
    for (size_t k = 0; k < va.size(); ++k) {
      worst = std::max(worst, std::abs(va[k] - vb[k]));
    }
  }
  return worst;
}

}  // namespace nascent::testing
