// Reductions and ArgMax/ArgMin. Axes come as an input (ReduceSum from
// opset 13, the others from 18) or, before that, as an attribute; the
// result keeps the input's dtype, as ONNX says.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

using Reduce = Tensor (*)(const Tensor&, const Axes&, bool);

// `empty` is the value of a reduction over nothing (NaN: use fn).
OpDef reduce_def(std::function<Tensor(const Tensor&, const Axes&, bool)> fn,
                 double empty = std::nan("")) {
  return {[fn, empty](const Node& n) -> Kernel {
            bool keep = n.i("keepdims", 1) != 0;
            bool noop = n.i("noop_with_empty_axes", 0) != 0;
            std::vector<int64_t> attr_axes = n.ints("axes");
            return [fn, empty, keep, noop,
                    attr_axes](const std::vector<Tensor>& in) {
              const Tensor& x = in[0];
              std::vector<int64_t> axes = attr_axes;
              if (in.size() > 1 && in[1].defined()) axes = host_ints(in[1]);
              if (axes.empty() && noop) return std::vector<Tensor>{x};
              for (auto& a : axes) a = axis_of(a, x.ndim(), "Reduce");
              if (axes.empty()) {  // All axes, spelled out for 0-size inputs.
                for (int64_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
              }
              bool none = false;
              for (int64_t a : axes) none = none || x.shape(a) == 0;
              if (none && !std::isnan(empty)) {  // max of nothing: -inf.
                Shape s = x.shape();
                for (int64_t a : axes) s[size_t(a)] = 1;
                Tensor y = full(s, Scalar(empty), x.backend(), x.dtype());
                if (!keep) {
                  std::vector<int64_t> sorted = axes;
                  std::sort(sorted.rbegin(), sorted.rend());
                  for (int64_t a : sorted) y = y.squeeze(a);
                }
                return std::vector<Tensor>{y};
              }
              Tensor y = x.ndim() == 0 ? x : fn(x, axes, keep);
              return std::vector<Tensor>{y.cast(x.dtype())};
            };
          },
          1, 2};
}

OpDef arg_def(bool is_max) {
  return {[is_max](const Node& n) -> Kernel {
            int64_t axis0 = n.i("axis", 0);
            bool keep = n.i("keepdims", 1) != 0;
            bool last = n.i("select_last_index", 0) != 0;
            return [=](const std::vector<Tensor>& in) {
              const Tensor& x = in[0];
              int64_t axis = axis_of(axis0, x.ndim(), "ArgMax");
              // The last of equal values: the first in the flipped axis.
              Tensor src = last ? flip(x, {axis}) : x;
              Tensor i =
                  is_max ? argmax(src, axis, keep) : argmin(src, axis, keep);
              if (last) i = Scalar(x.shape(axis) - 1) - i;
              return std::vector<Tensor>{i};
            };
          },
          1, 1};
}

}  // namespace

void register_reduce(Registry& r) {
  r["ReduceSum"] = reduce_def(static_cast<Reduce>(sum));
  r["ReduceMean"] = reduce_def(static_cast<Reduce>(mean));
  const double inf = std::numeric_limits<double>::infinity();
  r["ReduceMax"] = reduce_def(static_cast<Reduce>(max), -inf);
  r["ReduceMin"] = reduce_def(static_cast<Reduce>(min), inf);
  r["ReduceProd"] = reduce_def(static_cast<Reduce>(prod));
  r["ReduceSumSquare"] = reduce_def(
      [](const Tensor& x, const Axes& a, bool k) { return sum(x * x, a, k); });
  r["ReduceL1"] = reduce_def(
      [](const Tensor& x, const Axes& a, bool k) { return sum(abs(x), a, k); });
  r["ReduceL2"] = reduce_def([](const Tensor& x, const Axes& a, bool k) {
    return sqrt(sum(x * x, a, k));
  });
  r["ReduceLogSum"] = reduce_def(
      [](const Tensor& x, const Axes& a, bool k) { return log(sum(x, a, k)); });
  r["ReduceLogSumExp"] = reduce_def(static_cast<Reduce>(logsumexp));
  r["ArgMax"] = arg_def(true);
  r["ArgMin"] = arg_def(false);
}

}  // namespace nascent::onnx
