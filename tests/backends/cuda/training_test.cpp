// Real training on the CUDA backend does not leak: 2,000 steps of a small
// CNN built from nn modules (convolution, pooling, dropout, linear layers),
// cross-entropy, gradients through the autodiff decorator and AdamW, on
// fresh random Fashion-MNIST-shaped batches (noise plus a pattern per class).
// Once the optimizer state exists every step allocates and frees the same
// tensors, so the live bytes after step 100 and after step 2,000 are equal;
// after the loop only the parameters, their AdamW moments and the dropout state
// are left (all persistent); dropping the model and optimizer and trimming
// leaves nothing allocated, persistent or cached. Skips, saying why, without a
// GPU.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/autodiff/autodiff.h"
#include "nascent/backends/cuda/backend.h"
#include "nascent/core/ops.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/loss.h"
#include "nascent/optim/optimizer.h"

namespace nascent::cuda {
namespace {

std::shared_ptr<nn::Sequential> small_cnn(nascent::Backend& backend,
                                          Generator& gen) {
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Conv2d>(
      1, 8, nn::Conv2dOptions{.kernel = 3, .padding = 1}, backend, gen));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::MaxPool2d>(2));
  m->add(std::make_shared<nn::Flatten>());
  m->add(std::make_shared<nn::Linear>(8 * 14 * 14, 64, backend, gen));
  m->add(std::make_shared<nn::GELU>());
  m->add(std::make_shared<nn::Dropout>(0.1, backend, 3));
  m->add(std::make_shared<nn::Linear>(64, 10, backend, gen));
  return m;
}

size_t bytes_of(const std::vector<nn::NamedTensor>& tensors) {
  size_t n = 0;
  for (const nn::NamedTensor& t : tensors) {
    n += size_t(t.tensor->numel()) * t.tensor->itemsize();
  }
  return n;
}

TEST(CudaTraining, TwoThousandAdamWStepsOfACnnDoNotLeak) {
  if (Backend::device_count() == 0) {
    GTEST_SKIP() << "no CUDA device: the driver reports none, so the CUDA "
                    "training leak test cannot run here";
  }
  Backend gpu(0);
  constexpr int kSteps = 2000, kBatch = 32;
  size_t at_100 = 0, at_end = 0;
  double first_losses = 0, last_losses = 0;
  {
    autodiff::Backend ad(gpu);
    Generator init(7), data(11);
    std::shared_ptr<nn::Sequential> model = small_cnn(ad, init);
    const std::vector<nn::NamedTensor> named = model->named_parameters();
    std::vector<Tensor*> params;
    for (const nn::NamedTensor& p : named) {
      autodiff::set_requires_grad(*p.tensor);
      params.push_back(p.tensor);
    }
    optim::AdamW opt(named, optim::AdamOptions{.lr = 1e-3});
    // Each class adds its own fixed pattern to the noise: something to
    // learn, so that the loop is seen to do real work.
    Tensor patterns = normal({10, 784}, 0.0, 1.0, ad, init);
    for (int step = 1; step <= kSteps; ++step) {
      const Tensor labels =
          argmax(uniform({kBatch, 10}, 0.0, 1.0, ad, data), 1);
      const Tensor images =
          normal({kBatch, 1, 28, 28}, 0.0, 1.0, ad, data) +
          index_select(patterns, 0, labels).reshape({kBatch, 1, 28, 28});
      const Tensor loss = nn::cross_entropy((*model)(images), labels);
      std::vector<Tensor> inputs;
      for (Tensor* p : params) inputs.push_back(*p);
      const std::vector<Tensor> grads = autodiff::grad({loss}, inputs);
      {
        autodiff::NoGradGuard no_grad;
        opt.step(grads);
      }
      if (step <= 100) first_losses += loss.item<double>();
      if (step > kSteps - 100) last_losses += loss.item<double>();
      // The same tensors are alive at both points of the loop.
      if (step == 100) at_100 = gpu.memory_stats().allocated_bytes;
      if (step == kSteps) at_end = gpu.memory_stats().allocated_bytes;
    }
    EXPECT_EQ(at_100, at_end)
        << "device bytes allocated after step 100 and after step " << kSteps;
    EXPECT_TRUE(std::isfinite(last_losses));
    EXPECT_LT(last_losses, first_losses / 2)
        << "mean loss of the last 100 steps " << last_losses / 100
        << " is not below that of the first 100 " << first_losses / 100;
    patterns = Tensor();
    // Left: parameters, two AdamW moments each, the dropout state.
    const size_t params_bytes = bytes_of(named);
    const size_t state = 3 * params_bytes + bytes_of(model->named_buffers());
    MemoryStats s = gpu.memory_stats();
    EXPECT_EQ(s.persistent_bytes, state);
    EXPECT_EQ(s.allocated_bytes, state);
  }
  gpu.trim();
  const MemoryStats s = gpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.persistent_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
}

}  // namespace
}  // namespace nascent::cuda
