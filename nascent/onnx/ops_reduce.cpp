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

// [n] along `axis` of a tensor of rank `rank`: 0, 1, ..., n - 1.
Tensor positions(int64_t n, int64_t axis, int64_t rank, Backend& b) {
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = n;
  return arange(n, b).reshape(s);
}

// The k largest (or smallest) by k rounds of argmax, each masking its
// pick: O(k n), exact, ties to the lower index as ONNX asks; the values
// come out sorted.
std::vector<Tensor> top_k(const Tensor& x, int64_t k, int64_t axis,
                          bool largest) {
  const int64_t n = x.shape(axis);
  if (k < 0 || k > n) {
    throw ValueError(
        fmt::format("TopK: k = {} for axis {} of {}", k, axis, x.to_string()));
  }
  if (k == 0) {
    Tensor v = x.slice(axis, 0, 0);
    return {v.contiguous(), zeros(v.shape(), x.backend(), DType::i64)};
  }
  const double inf = std::numeric_limits<double>::infinity();
  Tensor work = is_floating(x.dtype()) ? x : x.cast(DType::f64);
  Tensor pos = positions(n, axis, x.ndim(), x.backend());
  std::vector<Tensor> values, indices;
  for (int64_t i = 0; i < k; ++i) {
    Tensor idx = largest ? argmax(work, axis, true) : argmin(work, axis, true);
    values.push_back(gather(x, axis, idx));
    indices.push_back(idx);
    if (i + 1 < k)
      work = where(ne(pos, idx), work, Scalar(largest ? -inf : inf));
  }
  return {cat(values, axis), cat(indices, axis)};
}

}  // namespace

void register_reduce(Registry& r) {
  r["TopK"] = {[](const Node& n) -> Kernel {
                 int64_t axis0 = n.i("axis", -1);
                 bool largest = n.i("largest", 1) != 0;
                 return [axis0, largest](const std::vector<Tensor>& in) {
                   int64_t axis = axis_of(axis0, in[0].ndim(), "TopK");
                   std::vector<int64_t> k = host_ints(in[1]);
                   if (k.size() != 1)
                     throw ShapeError("TopK: K must hold one value");
                   return top_k(in[0], k[0], axis, largest);
                 };
               },
               2, 2, 11};
  r["Hardmax"] = {[](const Node& n) -> Kernel {
                    int64_t axis0 = n.i("axis", -1);
                    return [axis0](const std::vector<Tensor>& in) {
                      const Tensor& x = in[0];
                      int64_t axis = axis_of(axis0, x.ndim(), "Hardmax");
                      Tensor pos =
                          positions(x.shape(axis), axis, x.ndim(), x.backend());
                      return std::vector<Tensor>{
                          eq(pos, argmax(x, axis, true)).cast(x.dtype())};
                    };
                  },
                  1, 1};
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
