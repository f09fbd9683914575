#include "nascent/nn/loss.h"

#include <fmt/format.h>

namespace nascent::nn {

namespace {

Tensor reduce(const Tensor& per_example, Reduction reduction) {
  switch (reduction) {
    case Reduction::mean:
      return mean(per_example);
    case Reduction::sum:
      return sum(per_example);
    case Reduction::none:
      return per_example;
  }
  return per_example;
}

void check_class_inputs(const char* op, const Tensor& scores,
                        const Tensor& targets) {
  if (scores.ndim() != 2) {
    throw ShapeError(fmt::format("{}: expected scores [N, C], got {}", op,
                                 scores.to_string()));
  }
  if (!is_floating(scores.dtype())) {
    throw DTypeError(fmt::format("{}: scores must be floating, got {}", op,
                                 scores.to_string()));
  }
  if (targets.ndim() != 1 || targets.shape(0) != scores.shape(0)) {
    throw ShapeError(
        fmt::format("{}: targets must be [N] = [{}] for scores {}, got {}", op,
                    scores.shape(0), scores.to_string(), targets.to_string()));
  }
  if (targets.dtype() != DType::i64 && targets.dtype() != DType::i32) {
    throw DTypeError(fmt::format("{}: targets must be i64 or i32, got {}", op,
                                 targets.to_string()));
  }
}

Tensor nll(const char* op, const Tensor& log_probs, const Tensor& targets,
           const CrossEntropyOptions& o) {
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0)) {
    throw ValueError(fmt::format("{}: label_smoothing {} is outside [0, 1]", op,
                                 o.label_smoothing));
  }
  const int64_t classes = log_probs.shape(1);
  // Ignored targets read class 0 and are masked out afterwards; any other
  // target outside [0, C) is an error (gather checks it).
  Tensor keep = ne(targets, Scalar(o.ignore_index));
  Tensor safe = where(keep, targets, Scalar(int64_t(0)));
  Tensor picked;
  try {
    picked = gather(log_probs, 1, safe.unsqueeze(1)).squeeze(1);
  } catch (const ValueError& e) {
    throw ValueError(
        fmt::format("{}: a target is not a class in [0, {}) nor "
                    "ignore_index {} ({})",
                    op, classes, o.ignore_index, e.what()));
  }
  Tensor loss = -picked;
  if (o.label_smoothing > 0.0) {
    Tensor uniform_term = mean(log_probs, {1}) * -1.0;
    loss = loss * (1.0 - o.label_smoothing) + uniform_term * o.label_smoothing;
  }
  loss = where(keep, loss, Scalar(0.0));
  if (o.reduction == Reduction::mean) {
    // Over the examples kept (NaN when none is, as PyTorch).
    return sum(loss) / sum(keep.cast(loss.dtype()));
  }
  return reduce(loss, o.reduction);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     const CrossEntropyOptions& options) {
  check_class_inputs("cross_entropy", logits, targets);
  return nll("cross_entropy", log_softmax(logits, 1), targets, options);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets,
                const CrossEntropyOptions& options) {
  check_class_inputs("nll_loss", log_probs, targets);
  return nll("nll_loss", log_probs, targets, options);
}

Tensor mse_loss(const Tensor& input, const Tensor& target,
                Reduction reduction) {
  if (input.shape() != target.shape()) {
    throw ShapeError(fmt::format("mse_loss: input {} and target {} differ",
                                 input.to_string(), target.to_string()));
  }
  return reduce(square(input - target), reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits,
                                        const Tensor& targets,
                                        Reduction reduction,
                                        const Tensor* pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  if (logits.shape() != targets.shape()) {
    throw ShapeError(fmt::format("{}: logits {} and targets {} differ", op,
                                 logits.to_string(), targets.to_string()));
  }
  if (!is_floating(logits.dtype())) {
    throw DTypeError(fmt::format("{}: logits must be floating, got {}", op,
                                 logits.to_string()));
  }
  // log(1 + exp(-|x|)) never overflows; the rest is exact.
  Tensor softplus_neg_abs = log1p(exp(-abs(logits)));
  Tensor loss;
  if (pos_weight == nullptr) {
    loss = relu(logits) - logits * targets + softplus_neg_abs;
  } else {
    // (1 - t) x + (1 + (w - 1) t) log(1 + exp(-x)), with log(1 + exp(-x)) =
    // softplus(-|x|) + max(-x, 0).
    Tensor weight = (*pos_weight - 1.0) * targets + 1.0;
    loss =
        (1.0 - targets) * logits + weight * (softplus_neg_abs + relu(-logits));
  }
  return reduce(loss, reduction);
}

}  // namespace nascent::nn
