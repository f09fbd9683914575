// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which is log_softmax
// over the classes, then the former): the target's entry of each position
// gathered along the class axis, weighted per class, ignore_index masked
// out, and reduced by none, sum or mean (the weighted mean: divided by the
// weights that counted).
#include <optional>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

struct LossAttrs {
  std::string reduction;
  std::optional<int64_t> ignore;
};

LossAttrs read_loss(const Node& n) {
  LossAttrs a;
  a.reduction = n.s("reduction", "mean");
  if (a.reduction != "none" && a.reduction != "sum" && a.reduction != "mean") {
    n.fail("reduction must be none, sum or mean, not '" + a.reduction + "'");
  }
  if (n.has("ignore_index")) a.ignore = n.i("ignore_index", 0);
  return a;
}

// x [N, C, d...] of log-probabilities, target [N, d...], weight [C] or
// undefined.
Tensor nll(const Tensor& x, const Tensor& target, const Tensor& weight,
           const LossAttrs& a, const char* op) {
  if (x.ndim() < 2 || target.ndim() != x.ndim() - 1 ||
      target.shape(0) != x.shape(0)) {
    throw ShapeError(fmt::format("{}: input {} and target {} do not fit", op,
                                 x.to_string(), target.to_string()));
  }
  for (int64_t d = 1; d < target.ndim(); ++d) {
    if (target.shape(d) != x.shape(d + 1)) {
      throw ShapeError(fmt::format("{}: input {} and target {} do not fit", op,
                                   x.to_string(), target.to_string()));
    }
  }
  if (is_floating(target.dtype())) {
    throw DTypeError(fmt::format("{}: target must hold integers, got {}", op,
                                 target.to_string()));
  }
  const int64_t classes = x.shape(1);
  if (weight.defined() && weight.shape() != Shape{classes}) {
    throw ShapeError(fmt::format("{}: weight {} for {} classes", op,
                                 weight.to_string(), classes));
  }
  Tensor t = target.cast(DType::i64);
  Tensor keep;  // Where the target counts.
  if (a.ignore) {
    keep = ne(t, Scalar(*a.ignore));
    t = where(keep, t, Scalar(int64_t(0)));
  }
  Tensor picked = gather(x, 1, t.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? index_select(weight, 0, t.reshape({t.numel()}))
                                    .reshape(t.shape())
                                    .cast(x.dtype())
                              : ones(t.shape(), x.backend(), x.dtype());
  if (keep.defined()) w = where(keep, w, Scalar(0.0));
  Tensor loss = -picked * w;
  if (a.reduction == "none") return loss;
  Axes all;
  for (int64_t d = 0; d < loss.ndim(); ++d) all.push_back(d);
  Tensor total = sum(loss, all);
  return a.reduction == "sum" ? total : total / sum(w, all);
}

}  // namespace

void register_loss(Registry& r) {
  r["NegativeLogLikelihoodLoss"] = {
      [](const Node& n) -> Kernel {
        LossAttrs a = read_loss(n);
        return [a](const std::vector<Tensor>& in) {
          Tensor w = in.size() > 2 ? in[2] : Tensor();
          return std::vector<Tensor>{
              nll(in[0], in[1], w, a, "NegativeLogLikelihoodLoss")};
        };
      },
      2, 3};
  r["SoftmaxCrossEntropyLoss"] = {
      [](const Node& n) -> Kernel {
        LossAttrs a = read_loss(n);
        return [a](const std::vector<Tensor>& in) {
          if (in[0].ndim() < 2) {
            throw ShapeError(fmt::format(
                "SoftmaxCrossEntropyLoss: scores {} need a class axis",
                in[0].to_string()));
          }
          Tensor w = in.size() > 2 ? in[2] : Tensor();
          Tensor log_prob = log_softmax(in[0], 1);
          return std::vector<Tensor>{
              nll(log_prob, in[1], w, a, "SoftmaxCrossEntropyLoss"), log_prob};
        };
      },
      2, 3};
}

}  // namespace nascent::onnx
