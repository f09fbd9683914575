// Losses, built from core ops so that autodiff differentiates them and they
// run on the inputs' backend. Each reduces as asked: the mean (default), the
// sum, or none (one value per example).
#pragma once

#include <cstdint>

#include "nascent/core/ops.h"

namespace nascent::nn {

enum class Reduction { mean, sum, none };

struct CrossEntropyOptions {
  // Targets equal to ignore_index add nothing and are left out of the mean.
  int64_t ignore_index = -100;
  // Mixes the one-hot target with the uniform distribution (Szegedy et al.).
  double label_smoothing = 0.0;
  Reduction reduction = Reduction::mean;
};

// logits [N, C], integer class targets [N]. Numerically stable: goes
// through log_softmax, never exp of the raw logits.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     const CrossEntropyOptions& options = {});
// Negative log likelihood of log-probabilities [N, C] (label_smoothing as
// for cross_entropy, on the given log-probabilities).
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets,
                const CrossEntropyOptions& options = {});
// (input - target)^2; the shapes must match.
Tensor mse_loss(const Tensor& input, const Tensor& target,
                Reduction reduction = Reduction::mean);
// Binary cross-entropy of sigmoid(logits) against targets in [0, 1], in the
// stable form max(x, 0) - x t + log(1 + exp(-|x|)); pos_weight (broadcast
// over the last axis) weighs the positive term as PyTorch's.
Tensor binary_cross_entropy_with_logits(const Tensor& logits,
                                        const Tensor& targets,
                                        Reduction reduction = Reduction::mean,
                                        const Tensor* pos_weight = nullptr);

}  // namespace nascent::nn
