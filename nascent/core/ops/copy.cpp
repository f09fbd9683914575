// assign: the one in-place write of the front-ends, a checked Backend::copy
// into a view.
#include <algorithm>

#include <fmt/ranges.h>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// True when two elements of the view share a storage slot. Axes sorted by
// stride must each step past everything the smaller ones span.
bool overlaps_itself(const Tensor& t) {
  std::vector<size_t> axes;
  for (size_t d = 0; d < t.shape().size(); ++d) {
    if (t.shape()[d] > 1) axes.push_back(d);
  }
  auto stride = [&](size_t d) {
    int64_t s = t.strides()[d];
    return s < 0 ? -s : s;
  };
  std::sort(axes.begin(), axes.end(),
            [&](size_t a, size_t b) { return stride(a) < stride(b); });
  int64_t span = 0;  // Largest offset the smaller axes reach.
  for (size_t d : axes) {
    if (stride(d) <= span) return true;
    span += stride(d) * (t.shape()[d] - 1);
  }
  return false;
}

}  // namespace

void assign(const Tensor& dst, const Tensor& src) {
  const char* op = "assign";
  Backend& backend = detail::common_backend(op, {&dst, &src});
  bool fits = true;
  try {
    fits = broadcast_shapes(src.shape(), dst.shape(), op) == dst.shape();
  } catch (const ShapeError&) {
    fits = false;
  }
  if (!fits) {
    throw ShapeError(
        fmt::format("{}: source {} does not broadcast to the destination {}",
                    op, src.to_string(), dst.to_string()));
  }
  if (overlaps_itself(dst)) {
    throw ValueError(fmt::format(
        "{}: destination {} with strides [{}] overlaps itself (a broadcast "
        "view); write into a tensor that owns each of its elements",
        op, dst.to_string(), fmt::join(dst.strides(), ", ")));
  }
  if (dst.numel() == 0) return;
  // A source sharing dst's storage could be overwritten while it is read.
  Tensor from = src.data() == dst.data() ? src.clone() : src;
  Tensor to = dst;
  backend.copy(from.expand(dst.shape()), to);
}

void assign(const Tensor& dst, Scalar value) {
  detail::common_backend("assign", {&dst});
  assign(dst, detail::scalar_tensor(value, dst.dtype(), dst.backend()));
}

}  // namespace nascent
