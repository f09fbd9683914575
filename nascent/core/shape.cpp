#include "nascent/core/shape.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nascent/core/error.h"

namespace nascent {

std::string to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t checked_numel(const Shape& shape, const char* op) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      throw ValueError(fmt::format("{}: negative dimension in shape {}", op,
                                   to_string(shape)));
    }
    if (d != 0 && n > INT64_MAX / d) {
      throw ValueError(
          fmt::format("{}: shape {} has more elements than int64 can count", op,
                      to_string(shape)));
    }
    n *= d;
  }
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
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
