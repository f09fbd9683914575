// Iteration geometry every backend shares (MLX keeps the same in
// backend/common/): plain C++ over shapes and strides, no device code, so the
// CPU's loops and the GPU's launch planners simplify a problem the same way.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "nascent/core/shape.h"
#include "nascent/core/tensor.h"

namespace nascent::common {

// N operands' axes over one shape after dropping size-1 axes and merging
// neighbours that are contiguous for every operand, outermost first. Most
// element-wise calls end up as one long axis that a vector kernel takes
// whole.
template <int N>
struct Collapsed {
  Shape shape;
  std::array<Strides, N> strides;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // One axis, inner stride 1 for every operand whose flag is false and 0
  // for those allowed to broadcast: the vectorised kernels' case.
  bool flat(std::array<bool, N> may_broadcast) const {
    if (shape.size() != 1) return false;
    for (int k = 0; k < N; ++k) {
      const int64_t s = strides[size_t(k)][0];
      if (s != 1 && !(may_broadcast[size_t(k)] && s == 0)) return false;
    }
    return true;
  }
};

// strides[k] are operand k's strides over `shape`, in elements. A shape of
// no axes left (a scalar, or all sizes 1) becomes one axis of size 1 with
// stride 0 when `at_least_one_axis`, and stays empty otherwise.
template <int N>
Collapsed<N> collapse(const Shape& shape,
                      const std::array<const Strides*, N>& strides,
                      bool at_least_one_axis = true) {
  Collapsed<N> c;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !c.shape.empty();
    for (int k = 0; k < N && merge; ++k) {
      merge =
          c.strides[size_t(k)].back() == (*strides[size_t(k)])[d] * shape[d];
    }
    if (merge) {
      c.shape.back() *= shape[d];
      for (int k = 0; k < N; ++k) {
        c.strides[size_t(k)].back() = (*strides[size_t(k)])[d];
      }
    } else {
      c.shape.push_back(shape[d]);
      for (int k = 0; k < N; ++k) {
        c.strides[size_t(k)].push_back((*strides[size_t(k)])[d]);
      }
    }
  }
  if (c.shape.empty() && at_least_one_axis) {
    c.shape.push_back(1);
    for (int k = 0; k < N; ++k) c.strides[size_t(k)].push_back(0);
  }
  return c;
}

// A scan along one axis as independent lines: each line has `len` elements
// `xs` apart in x and `os` apart in out; the lines are the elements of the
// other axes, collapsed (operand 0 is out, operand 1 is x). A 0-d tensor is
// one line of one element.
struct ScanLines {
  int64_t len = 1;
  int64_t xs = 0;
  int64_t os = 0;
  Collapsed<2> lines;
};

inline ScanLines scan_lines(const Tensor& x, int axis, const Tensor& out) {
  ScanLines s;
  const bool scalar = x.ndim() == 0;
  if (!scalar) {
    s.len = x.shape()[size_t(axis)];
    s.xs = x.strides()[size_t(axis)];
    s.os = out.strides()[size_t(axis)];
  }
  Shape shape;
  Strides sx, so;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == axis) continue;
    shape.push_back(x.shape()[size_t(d)]);
    sx.push_back(x.strides()[size_t(d)]);
    so.push_back(out.strides()[size_t(d)]);
  }
  s.lines = collapse<2>(shape, {&so, &sx});
  return s;
}

// Bytes from the start of t's storage to one past its view's last element
// (0 for an empty view): what a device backend copies back so that callers
// index the result as host storage.
inline int64_t view_end_bytes(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t end = t.offset();
  for (int i = 0; i < t.ndim(); ++i) {
    const int64_t s = t.strides()[size_t(i)];
    if (s > 0) end += (t.shape()[size_t(i)] - 1) * s;
  }
  return (end + 1) * int64_t(t.itemsize());
}

}  // namespace nascent::common
