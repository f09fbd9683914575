// Reductions and cumsum: axes, dtype rules and output shapes. Backends get
// the reduced axes sorted and an output with x's rank (size 1 on those
// axes); keepdim=false is a view of it.
//
// Dtypes: sum and prod of integers or bool give i64 (x is passed as is);
// mean, var, std and logsumexp cast integer inputs to f32 first; max and min
// keep the dtype; argmax and argmin give i64. std is var with take_sqrt.
#include <algorithm>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// max, min, argmax and argmin have no value for an empty axis (PyTorch
// raises too); sum gives 0, prod 1, mean NaN.
void check_not_empty(const char* op, const Tensor& x,
                     const std::vector<int>& axes) {
  for (int a : axes) {
    if (x.shape()[size_t(a)] == 0) {
      throw ValueError(fmt::format(
          "{}: cannot reduce over axis {} of {}, which has size 0 (the "
          "result of an empty reduction is undefined)",
          op, a, x.to_string()));
    }
  }
}

Tensor reduce_op(ReduceOp op, const char* op_name, const Tensor& x,
                 const Axes& axes, bool keepdim, const ReduceParams& p) {
  Backend& backend = detail::common_backend(op_name, {&x});
  const std::vector<int> ax = normalize_axes(axes, x.ndim(), op_name);
  Tensor in = x;
  DType out_dtype = x.dtype();
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod:
      if (!is_floating(x.dtype())) out_dtype = DType::i64;
      break;
    case ReduceOp::mean:
    case ReduceOp::var:
    case ReduceOp::logsumexp:
      in = x.cast(to_floating(x.dtype()));
      out_dtype = in.dtype();
      break;
    case ReduceOp::max:
    case ReduceOp::min:
      check_not_empty(op_name, x, ax);
      break;
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      check_not_empty(op_name, x, ax);
      out_dtype = DType::i64;
      break;
  }
  Shape kept = x.shape();
  for (int a : ax) kept[size_t(a)] = 1;
  Tensor out = detail::new_output(kept, out_dtype, backend);
  backend.reduce(op, in, ax, p, out);
  if (keepdim) return out;
  Shape dropped;
  for (int d = 0; d < x.ndim(); ++d) {
    if (std::find(ax.begin(), ax.end(), d) == ax.end()) {
      dropped.push_back(x.shape()[size_t(d)]);
    }
  }
  return out.view(dropped);
}

Tensor arg_flat(ReduceOp op, const Tensor& x) {
  const char* op_name = name(op);
  detail::common_backend(op_name, {&x});
  if (x.numel() == 0) {
    throw ValueError(fmt::format(
        "{}: cannot take the {} of the empty tensor {}", op_name,
        op == ReduceOp::argmax ? "maximum" : "minimum", x.to_string()));
  }
  // A 0-d x is its own flattening.
  if (x.ndim() == 0) return reduce_op(op, op_name, x, {}, false, {});
  return reduce_op(op, op_name, x.reshape({x.numel()}), {0}, false, {});
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::sum, "sum", x, axes, keepdim, {});
}

Tensor mean(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::mean, "mean", x, axes, keepdim, {});
}

Tensor max(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::max, "max", x, axes, keepdim, {});
}

Tensor min(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::min, "min", x, axes, keepdim, {});
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::prod, "prod", x, axes, keepdim, {});
}

Tensor var(const Tensor& x, const Axes& axes, int64_t correction,
           bool keepdim) {
  ReduceParams p;
  p.correction = correction;
  return reduce_op(ReduceOp::var, "var", x, axes, keepdim, p);
}

Tensor std(const Tensor& x, const Axes& axes, int64_t correction,
           bool keepdim) {
  ReduceParams p;
  p.correction = correction;
  p.take_sqrt = true;
  return reduce_op(ReduceOp::var, "std", x, axes, keepdim, p);
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim) {
  return reduce_op(ReduceOp::logsumexp, "logsumexp", x, axes, keepdim, {});
}

Tensor argmax(const Tensor& x) {
  return arg_flat(ReduceOp::argmax, x);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return reduce_op(ReduceOp::argmax, "argmax", x, {axis}, keepdim, {});
}

Tensor argmin(const Tensor& x) {
  return arg_flat(ReduceOp::argmin, x);
}

Tensor argmin(const Tensor& x, int64_t axis, bool keepdim) {
  return reduce_op(ReduceOp::argmin, "argmin", x, {axis}, keepdim, {});
}

Tensor cumsum(const Tensor& x, int64_t axis) {
  Backend& backend = detail::common_backend("cumsum", {&x});
  const int a = normalize_axis(axis, x.ndim(), "cumsum");
  const DType dtype = is_floating(x.dtype()) ? x.dtype() : DType::i64;
  Tensor out = detail::new_output(x.shape(), dtype, backend);
  backend.scan(ScanOp::cumsum, x, a, out);
  return out;
}

}  // namespace nascent
