// GatherND, ScatterND and ScatterElements over core's index_select and
// scatter_add: the indexed axes are folded into one (a linear index per
// tuple, computed on the backend), so each op is one gather or scatter of
// whole rows. ScatterND without a reduction is what PyTorch exports for a
// slice assignment (x[:, 0] = v).
#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

using Out = std::vector<Tensor>;

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

// Index tuples (the last axis of `idx`, one entry per axis of `dims`) as
// linear indices into those axes laid out row-major; negative entries count
// from the end. Any entry outside its axis raises ValueError.
Tensor linear_index(const Tensor& idx, const std::vector<int64_t>& dims,
                    const char* op) {
  if (idx.dtype() != DType::i64 && idx.dtype() != DType::i32) {
    throw DTypeError(fmt::format("{}: indices must be int64 or int32, got {}",
                                 op, idx.to_string()));
  }
  Backend& b = idx.backend();
  const int64_t k = int64_t(dims.size());
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = k - 2; i >= 0; --i) {
    strides[size_t(i)] = strides[size_t(i + 1)] * dims[size_t(i + 1)];
  }
  Tensor d = from_vector(dims, {k}, b);
  Tensor n = idx.cast(DType::i64);
  n = where(lt(n, Scalar(int64_t(0))), n + d, n);
  Tensor bad = logical_or(lt(n, Scalar(int64_t(0))), ge(n, d));
  if (sum(bad.cast(DType::i64)).to_vector<int64_t>()[0] > 0) {
    throw ValueError(fmt::format("{}: an index of {} is outside the axes [{}]",
                                 op, idx.to_string(), fmt::join(dims, ", ")));
  }
  return sum(n * from_vector(strides, {k}, b), {-1});
}

// x with the entries `index` names along `axis` (scatter_add's layout)
// replaced by, or with `add` increased by, those of `upd`. Booleans go
// through u8, which scatter_add takes.
Tensor scatter(const Tensor& x, int64_t axis, const Tensor& index,
               const Tensor& upd, bool add) {
  const DType dt = x.dtype();
  const bool boolean = dt == DType::boolean;
  Tensor xv = boolean ? x.cast(DType::u8) : x;
  Tensor uv = boolean ? upd.cast(DType::u8) : upd;
  Tensor y;
  if (add) {
    y = scatter_add(xv, axis, index, uv);
  } else {
    Backend& b = x.backend();
    Tensor hit = scatter_add(zeros(xv.shape(), b, DType::f32), axis, index,
                             ones(uv.shape(), b, DType::f32));
    Tensor put = scatter_add(zeros(xv.shape(), b, xv.dtype()), axis, index, uv);
    y = where(gt(hit, Scalar(0.0)), put, xv);
  }
  return boolean ? y.cast(dt) : y;
}

bool read_reduction(const Node& n) {
  std::string r = n.s("reduction", "none");
  if (r == "mul" || r == "max" || r == "min") {
    n.unsupported("reduction '" + r + "'");
  }
  if (r != "none" && r != "add") {
    n.fail("reduction must be none, add, mul, max or min, not '" + r + "'");
  }
  return r == "add";
}

Kernel gather_nd(const Node& n) {
  const int64_t b = n.i("batch_dims", 0);
  if (b < 0) n.fail("GatherND: batch_dims must not be negative");
  return [b](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &idx = in[1];
    const int64_t r = x.ndim(), q = idx.ndim();
    const int64_t k = q > 0 ? idx.shape(q - 1) : 0;
    if (q < 1 || b >= q || b + k > r) {
      throw ShapeError(fmt::format(
          "GatherND: indices {} do not index data {} with batch_dims {}",
          idx.to_string(), x.to_string(), b));
    }
    for (int64_t i = 0; i < b; ++i) {
      if (idx.shape(i) != x.shape(i)) {
        throw ShapeError(fmt::format(
            "GatherND: batch axis {} of indices {} and data {} differ", i,
            idx.to_string(), x.to_string()));
      }
    }
    const Shape& xs = x.shape();
    std::vector<int64_t> dims(xs.begin() + b, xs.begin() + b + k);
    const int64_t batch = product(xs, 0, size_t(b));
    const int64_t m = product(xs, size_t(b), size_t(b + k));
    const int64_t rest = product(xs, size_t(b + k), xs.size());
    Tensor lin = linear_index(idx, dims, "GatherND");  // idx.shape[:-1]
    if (b > 0) {  // Each batch entry reads its own block of m rows.
      Shape s(size_t(q - 1), 1);
      for (int64_t i = 0; i < b; ++i) s[size_t(i)] = xs[size_t(i)];
      lin = lin + arange(batch, x.backend()).reshape(s) * Scalar(m);
    }
    Tensor rows = index_select(x.reshape({batch * m, rest}), 0,
                               lin.reshape({lin.numel()}));
    Shape out(idx.shape().begin(), idx.shape().end() - 1);
    out.insert(out.end(), xs.begin() + b + k, xs.end());
    return Out{rows.reshape(out)};
  };
}

Kernel scatter_nd(const Node& n) {
  const bool add = read_reduction(n);
  return [add](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &idx = in[1], &upd = in[2];
    const int64_t r = x.ndim(), q = idx.ndim();
    const int64_t k = q > 0 ? idx.shape(q - 1) : 0;
    const Shape& xs = x.shape();
    Shape want(idx.shape().begin(), idx.shape().end() - (q > 0 ? 1 : 0));
    want.insert(want.end(), xs.begin() + std::min(k, r), xs.end());
    if (q < 1 || k > r || upd.shape() != want) {
      throw ShapeError(
          fmt::format("ScatterND: indices {} and updates {} do not fit data {}",
                      idx.to_string(), upd.to_string(), x.to_string()));
    }
    if (upd.dtype() != x.dtype()) {
      throw DTypeError(fmt::format("ScatterND: updates {} and data {} differ",
                                   upd.to_string(), x.to_string()));
    }
    std::vector<int64_t> dims(xs.begin(), xs.begin() + k);
    const int64_t m = product(xs, 0, size_t(k));
    const int64_t rest = product(xs, size_t(k), xs.size());
    Tensor lin = linear_index(idx, dims, "ScatterND");
    Tensor rows = lin.reshape({lin.numel(), 1}).expand({lin.numel(), rest});
    Tensor y = scatter(x.reshape({m, rest}), 0, rows,
                       upd.reshape({lin.numel(), rest}), add);
    return Out{y.reshape(xs)};
  };
}

Kernel scatter_elements(const Node& n) {
  const bool add = read_reduction(n);
  const int64_t axis0 = n.i("axis", 0);
  return [add, axis0](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &idx = in[1], &upd = in[2];
    const int64_t axis = axis_of(axis0, x.ndim(), "ScatterElements");
    if (idx.shape() != upd.shape()) {
      throw ShapeError(
          fmt::format("ScatterElements: indices {} and updates {} differ",
                      idx.to_string(), upd.to_string()));
    }
    if (upd.dtype() != x.dtype()) {
      throw DTypeError(
          fmt::format("ScatterElements: updates {} and data {} differ",
                      upd.to_string(), x.to_string()));
    }
    Tensor i = idx.cast(DType::i64);
    i = where(lt(i, Scalar(int64_t(0))), i + Scalar(x.shape(axis)), i);
    return Out{scatter(x, axis, i, upd, add)};
  };
}

}  // namespace

void register_scatter(Registry& r) {
  r["GatherND"] = {gather_nd, 2, 2};
  r["ScatterND"] = {scatter_nd, 3, 3};
  r["ScatterElements"] = {scatter_elements, 3, 3};
}

}  // namespace nascent::onnx
