#include "nascent/core/shape.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nascent/core/error.h"

namespace nascent {

namespace {

// a * b for a, b >= 0; false when it exceeds INT64_MAX.
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  if (b != 0 && a > INT64_MAX / b) return false;
  *out = a * b;
  return true;
}

}  // namespace

std::string to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t checked_numel(const Shape& shape, const char* op) {
  // `span` is the product with zeros counted as ones: the largest stride
  // times its dimension. It bounds the element count, so one check covers
  // both.
  int64_t span = 1;
  const bool zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (int64_t d : shape) {
    if (d < 0) {
      throw ValueError(fmt::format("{}: negative dimension in shape {}", op,
                                   to_string(shape)));
    }
    if (!checked_mul(span, std::max<int64_t>(d, 1), &span)) {
      throw ValueError(
          zero ? fmt::format("{}: shape {} has strides that int64 cannot hold",
                             op, to_string(shape))
               : fmt::format("{}: shape {} has more elements than int64 can "
                             "count",
                             op, to_string(shape)));
    }
  }
  return zero ? 0 : span;
}

bool shape_fits_int64(std::span<const uint64_t> dims) {
  int64_t span = 1;
  for (uint64_t d : dims) {
    if (d > uint64_t(INT64_MAX) ||
        !checked_mul(span, std::max<int64_t>(int64_t(d), 1), &span)) {
      return false;
    }
  }
  return true;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    // The product past the first dimension is no stride: not computed, so
    // that a shape whose strides fit never overflows here.
    if (i > 0 && !checked_mul(acc, std::max<int64_t>(shape[i], 1), &acc)) {
      throw ValueError(fmt::format(
          "contiguous_strides: shape {} has strides that int64 cannot hold",
          to_string(shape)));
    }
  }
  return s;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(fmt::format(
          "{}: shapes {} and {} do not broadcast (dimension {}: {} vs {})", op,
          to_string(a), to_string(b), i, da, db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(int64_t axis, int ndim, const char* op) {
  // A 0-d tensor accepts axis 0 and -1, as in PyTorch.
  int64_t range = std::max(ndim, 1);
  if (axis < -range || axis >= range) {
    throw ValueError(
        fmt::format("{}: axis {} is out of range for a tensor of {} dimensions",
                    op, axis, ndim));
  }
  return int(axis < 0 ? axis + range : axis);
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int ndim,
                                const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ValueError(
        fmt::format("{}: axis repeated in [{}]", op, fmt::join(axes, ", ")));
  }
  // Axis 0 of a 0-d tensor names no real dimension.
  if (ndim == 0) out.clear();
  return out;
}

}  // namespace nascent
