// The model and optimizer whose checkpoints seed fuzz/checkpoint: the seed
// generator saves them, the target restores fuzzed files into them.
#pragma once

#include <memory>

#include "nascent/core/backend.h"
#include "nascent/core/ops.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/optim/optimizer.h"

namespace nascent::fuzz {

struct SeedModel {
  nn::Sequential net;
  std::unique_ptr<optim::Adam> optimizer;

  SeedModel() {
    Generator gen(1);
    Backend& b = default_backend();
    net.add(std::make_shared<nn::Linear>(4, 3, b, gen));
    net.add(std::make_shared<nn::ReLU>());
    net.add(std::make_shared<nn::Linear>(3, 2, b, gen, /*bias*/ false));
    optimizer = std::make_unique<optim::Adam>(net.named_parameters(),
                                              optim::AdamOptions{.lr = 0.01});
  }

  // One optimizer step, so that the checkpoint holds the Adam moments.
  void step() {
    std::vector<Tensor> grads;
    uint64_t seed = 7;
    for (Tensor* p : net.parameters()) {
      grads.push_back(randn(p->shape(), p->backend(), seed++));
    }
    optimizer->step(grads);
  }
};

}  // namespace nascent::fuzz
