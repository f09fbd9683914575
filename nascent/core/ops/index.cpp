// Indexing: gather, scatter_add, index_select and the ops built on them
// (embedding, one_hot).
//
// Range checks read the index values on the host once per call: on the CPU
// one pass over the indices in place (broadcast axes skipped; a strided
// index is made contiguous first), on a device backend a synchronisation
// and a copy of the index bytes. We pay it so that a bad index is a
// ValueError naming the op and the value, never an access outside storage.
#include <algorithm>
#include <limits>
#include <utility>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// The index tensor as i64 (the only index dtype backends see).
Tensor index_to_i64(const char* op, const Tensor& index) {
  detail::check_dtype(
      index.dtype() == DType::i64 || index.dtype() == DType::i32, op, index,
      "an index tensor of i64 or i32");
  return index.cast(DType::i64);
}

// Smallest and largest value of a non-empty i64 tensor. Axes of stride 0
// only repeat values and are dropped, so an expanded index costs what its
// source does; the rest is read in place through materialize.
std::pair<int64_t, int64_t> value_range(const Tensor& idx) {
  Shape shape;
  Strides strides;
  for (int d = 0; d < idx.ndim(); ++d) {
    if (idx.shape()[size_t(d)] != 1 && idx.strides()[size_t(d)] != 0) {
      shape.push_back(idx.shape()[size_t(d)]);
      strides.push_back(idx.strides()[size_t(d)]);
    }
  }
  Tensor t = idx.as_strided(shape, strides, idx.offset()).contiguous();
  HostBytes host = t.backend().materialize(t);
  size_t n = size_t(t.numel());
  size_t start = size_t(t.offset()) * sizeof(int64_t);
  if (start + n * sizeof(int64_t) > host.size) {
    throw BackendError(fmt::format(
        "materialize: backend {} returned {} bytes for {} at offset {}",
        t.backend().name(), host.size, t.to_string(), t.offset()));
  }
  const auto* v = reinterpret_cast<const int64_t*>(host.data + start);
  int64_t lo = std::numeric_limits<int64_t>::max();
  int64_t hi = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  return {lo, hi};
}

// ValueError naming `op` for the first value of idx (i64) outside
// [0, size); `index` is the caller's tensor, named in the message.
void check_range(const char* op, const Tensor& idx, const Tensor& index,
                 int64_t size, int axis, const Tensor& x) {
  if (idx.numel() == 0) return;
  auto [lo, hi] = value_range(idx);
  if (lo >= 0 && hi < size) return;
  // The error path: find the first bad index to name its position.
  std::vector<int64_t> values = idx.to_vector<int64_t>();
  auto bad = std::find_if(values.begin(), values.end(),
                          [size](int64_t v) { return v < 0 || v >= size; });
  throw ValueError(fmt::format(
      "{}: index {} (at flat position {} of index {}) is out of range "
      "[0, {}) for axis {} of {}",
      op, *bad, bad - values.begin(), index.to_string(), size, axis,
      x.to_string()));
}

// A 0-d tensor seen as [1], so that backends only meet axes that exist.
Tensor at_least_1d(const Tensor& t) {
  return t.ndim() == 0 ? t.reshape({1}) : t;
}

// PyTorch's rule for gather and scatter_add: index has x's rank and fits
// inside x on every axis but `axis` (and inside src on every axis).
void check_index_shape(const char* op, const Tensor& x, int axis,
                       const Tensor& index, const Tensor* src) {
  auto fail = [&](const std::string& why) {
    throw ShapeError(fmt::format("{}: {} ({}, axis {})", op, why,
                                 detail::describe({&x, &index, src}), axis));
  };
  if (index.ndim() != x.ndim()) {
    fail(
        fmt::format("index has {} axes, the input {}", index.ndim(), x.ndim()));
  }
  if (src != nullptr && src->ndim() != x.ndim()) {
    fail(fmt::format("src has {} axes, the input {}", src->ndim(), x.ndim()));
  }
  for (int d = 0; d < x.ndim(); ++d) {
    int64_t n = index.shape()[size_t(d)];
    if (d != axis && n > x.shape()[size_t(d)]) {
      fail(fmt::format("index is larger than the input on axis {} ({} vs {})",
                       d, n, x.shape()[size_t(d)]));
    }
    if (src != nullptr && n > src->shape()[size_t(d)]) {
      fail(fmt::format("index is larger than src on axis {} ({} vs {})", d, n,
                       src->shape()[size_t(d)]));
    }
  }
}

// index_select with `op` named in errors (embedding reuses it).
Tensor index_select_impl(const char* op, const Tensor& x, int64_t axis,
                         const Tensor& index) {
  Backend& backend = detail::common_backend(op, {&x, &index});
  int ax = normalize_axis(axis, x.ndim(), op);
  if (index.ndim() > 1) {
    throw ShapeError(fmt::format("{}: index must be 1-D, got {} (input {})", op,
                                 index.to_string(), x.to_string()));
  }
  Tensor idx = index_to_i64(op, index).reshape({index.numel()});
  if (x.ndim() == 0 && idx.numel() != 1) {
    throw ShapeError(
        fmt::format("{}: a 0-d input takes exactly one index, got {}", op,
                    index.to_string()));
  }
  Tensor xv = at_least_1d(x);
  check_range(op, idx, index, xv.shape()[size_t(ax)], ax, x);
  Shape shape = xv.shape();
  shape[size_t(ax)] = idx.numel();
  Tensor out = detail::new_output(shape, x.dtype(), backend);
  if (out.numel() > 0) {
    backend.index(IndexOp::index_select, xv, ax, idx, nullptr, out);
  }
  return x.ndim() == 0 ? out.reshape({}) : out;
}

}  // namespace

void detail::check_index_range(const char* op, const Tensor& idx,
                               const Tensor& index, int64_t size, int axis,
                               const Tensor& x) {
  check_range(op, idx, index, size, axis, x);
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  const char* op = "gather";
  Backend& backend = detail::common_backend(op, {&x, &index});
  int ax = normalize_axis(axis, x.ndim(), op);
  Tensor idx = at_least_1d(index_to_i64(op, index));
  check_index_shape(op, x, ax, index, nullptr);
  Tensor xv = at_least_1d(x);
  check_range(op, idx, index, xv.shape()[size_t(ax)], ax, x);
  Tensor out = detail::new_output(idx.shape(), x.dtype(), backend);
  if (out.numel() > 0) {
    backend.index(IndexOp::gather, xv, ax, idx, nullptr, out);
  }
  return x.ndim() == 0 ? out.reshape({}) : out;
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index,
                   const Tensor& src) {
  const char* op = "scatter_add";
  Backend& backend = detail::common_backend(op, {&x, &index, &src});
  int ax = normalize_axis(axis, x.ndim(), op);
  if (src.dtype() != x.dtype()) {
    throw DTypeError(fmt::format(
        "{}: src must have the input's dtype, got {} (cast src first)", op,
        detail::describe({&x, &src})));
  }
  detail::check_dtype(x.dtype() != DType::boolean, op, x,
                      "a number type (not bool)");
  Tensor idx = at_least_1d(index_to_i64(op, index));
  check_index_shape(op, x, ax, index, &src);
  Tensor xv = at_least_1d(x);
  check_range(op, idx, index, xv.shape()[size_t(ax)], ax, x);
  // clone() gives a fresh contiguous buffer even when x is a broadcast view.
  Tensor out = xv.clone();
  if (idx.numel() > 0) {
    Tensor srcv = at_least_1d(src);
    backend.index(IndexOp::scatter_add, xv, ax, idx, &srcv, out);
  }
  return x.ndim() == 0 ? out.reshape({}) : out;
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  return index_select_impl("index_select", x, axis, index);
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  const char* op = "embedding";
  detail::common_backend(op, {&weight, &ids});
  if (weight.ndim() != 2) {
    throw ShapeError(fmt::format(
        "{}: weight must be 2-D [num_embeddings, dim], got {} (ids {})", op,
        weight.to_string(), ids.to_string()));
  }
  Tensor rows = index_select_impl(op, weight, 0, ids.reshape({ids.numel()}));
  Shape shape = ids.shape();
  shape.push_back(weight.shape(1));
  return rows.view(std::move(shape));
}

Tensor one_hot(const Tensor& ids, int64_t num_classes, DType dtype) {
  const char* op = "one_hot";
  Backend& backend = detail::common_backend(op, {&ids});
  Tensor idx = index_to_i64(op, ids);
  std::vector<int64_t> values = idx.to_vector<int64_t>();
  if (num_classes == -1) {
    // PyTorch's convention: infer the class count from the largest id.
    if (values.empty()) {
      throw ValueError(
          fmt::format("{}: cannot infer num_classes from an empty {}", op,
                      ids.to_string()));
    }
    num_classes = *std::max_element(values.begin(), values.end()) + 1;
  }
  if (num_classes < 0) {
    throw ValueError(fmt::format(
        "{}: num_classes must be -1 (infer) or >= 0, got {}", op, num_classes));
  }
  auto bad = std::find_if(values.begin(), values.end(),
                          [&](int64_t v) { return v < 0 || v >= num_classes; });
  if (bad != values.end()) {
    throw ValueError(fmt::format(
        "{}: id {} (at flat position {} of {}) is out of range [0, {})", op,
        *bad, bad - values.begin(), ids.to_string(), num_classes));
  }
  Tensor classes = arange(num_classes, backend, DType::i64);
  return eq(idx.unsqueeze(-1), classes).cast(dtype);
}

}  // namespace nascent
