#include "nascent/autodiff/view_grad.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <tuple>

#include <fmt/format.h>

namespace nascent::autodiff::detail {

namespace {

// (size, stride) pairs without size-1 axes, with adjacent axes merged
// where they walk memory as one: two geometries with equal lists and
// offsets visit the same positions in the same order.
std::vector<std::pair<int64_t, int64_t>> canonical(const Geometry& g) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    if (g.shape[d] == 1) continue;
    int64_t size = g.shape[d], stride = g.strides[d];
    if (!out.empty() && out.back().second == stride * size) {
      out.back() = {out.back().first * size, stride};
    } else {
      out.emplace_back(size, stride);
    }
  }
  return out;
}

bool has_broadcast(const Geometry& g) {
  for (size_t d = 0; d < g.shape.size(); ++d) {
    if (g.strides[d] == 0 && g.shape[d] > 1) return true;
  }
  return false;
}

// The permutation p with view axis j reading base axis p[j] (size-1 axes
// dropped on both sides), if view only reorders base's axes.
std::optional<std::vector<int64_t>> permutation(const Geometry& view,
                                                const Geometry& base) {
  if (view.offset != base.offset) return std::nullopt;
  std::vector<size_t> v, b;
  for (size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] != 1) v.push_back(d);
  }
  for (size_t d = 0; d < base.shape.size(); ++d) {
    if (base.shape[d] != 1) b.push_back(d);
  }
  if (v.size() != b.size()) return std::nullopt;
  std::vector<int64_t> perm(v.size());
  std::vector<bool> used(b.size(), false);
  for (size_t j = 0; j < v.size(); ++j) {
    bool found = false;
    for (size_t i = 0; i < b.size() && !found; ++i) {
      if (!used[i] && view.shape[v[j]] == base.shape[b[i]] &&
          view.strides[v[j]] == base.strides[b[i]]) {
        used[i] = true;
        perm[j] = int64_t(i);
        found = true;
      }
    }
    if (!found) return std::nullopt;
  }
  return perm;
}

// Lowest and highest storage position a geometry reaches.
std::pair<int64_t, int64_t> span_of(const Geometry& g) {
  int64_t lo = g.offset, hi = g.offset;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    int64_t reach = (g.shape[d] - 1) * g.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

// g's elements inside a 1-D buffer that holds storage positions from lo.
Tensor place(const Tensor& buffer, int64_t lo, const Geometry& g) {
  return buffer.as_strided(g.shape, g.strides, g.offset - lo);
}

// g with its broadcast axes cut to size 1, and how many times each of its
// elements is repeated.
std::pair<Geometry, int64_t> without_broadcast(const Geometry& g) {
  Geometry out = g;
  int64_t count = 1;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    if (g.strides[d] == 0 && g.shape[d] > 1) {
      count *= g.shape[d];
      out.shape[d] = 1;
    }
  }
  return {out, count};
}

// Adds grad (view's shape) into buffer at view's positions (from lo).
Tensor scatter_into(Tensor buffer, int64_t lo, const Tensor& grad,
                    const Geometry& view) {
  if (non_overlapping(view.shape, view.strides)) {
    assign(place(buffer, lo, view), grad);
    return buffer;
  }
  // Elements sharing a position (as_strided windows) add up.
  std::vector<int64_t> positions;
  positions.reserve(size_t(numel(view.shape)));
  std::vector<int64_t> idx(view.shape.size(), 0);
  for (int64_t n = 0; n < numel(view.shape); ++n) {
    int64_t p = view.offset - lo;
    for (size_t d = 0; d < idx.size(); ++d) p += idx[d] * view.strides[d];
    positions.push_back(p);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < view.shape[d]) break;
      idx[d] = 0;
    }
  }
  Tensor index = from_vector(positions, grad.backend());
  return scatter_add(buffer, 0, index, grad.reshape({-1}));
}

}  // namespace

Tensor view_backward(const Tensor& grad, const Geometry& view,
                     const Geometry& base) {
  if (view == base) return grad;
  if (numel(base.shape) == 0 || numel(view.shape) == 0) {
    return zeros(base.shape, grad.backend(), grad.dtype());
  }
  // Broadcast axes of the view repeat one element: sum them first.
  Geometry v = view;
  Tensor g = grad;
  Axes repeated;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.strides[d] == 0 && v.shape[d] > 1) {
      repeated.push_back(int64_t(d));
      v.shape[d] = 1;
    }
  }
  if (!repeated.empty()) g = sum(g, repeated, true);
  if (!has_broadcast(base)) {
    if (v.offset == base.offset && canonical(v) == canonical(base)) {
      return g.reshape(base.shape);
    }
    if (auto perm = permutation(v, base)) {
      Shape squeezed;
      for (int64_t s : v.shape) {
        if (s != 1) squeezed.push_back(s);
      }
      std::vector<int64_t> inverse(perm->size());
      for (size_t j = 0; j < perm->size(); ++j) {
        inverse[size_t((*perm)[j])] = int64_t(j);
      }
      return g.reshape(squeezed).permute(inverse).reshape(base.shape);
    }
  }
  // General case: through a buffer of storage positions.
  auto [b, count] = without_broadcast(base);
  if (!non_overlapping(b.shape, b.strides)) {
    throw ValueError(fmt::format(
        "autodiff: cannot map a gradient onto {}, whose elements overlap in "
        "storage",
        base.to_string()));
  }
  auto [vlo, vhi] = span_of(v);
  auto [blo, bhi] = span_of(b);
  const int64_t lo = std::min(vlo, blo), hi = std::max(vhi, bhi);
  Tensor buffer = zeros({hi - lo + 1}, grad.backend(), grad.dtype());
  buffer = scatter_into(buffer, lo, g, v);
  Tensor out = place(buffer, lo, b);
  // A broadcast base repeats each storage element `count` times; its
  // copies share the gradient (PyTorch's as_strided backward does too).
  if (count > 1) out = mul(out, 1.0 / double(count)).expand(base.shape);
  return out;
}

ViewNode::ViewNode(Edge base_node, Geometry base, Geometry view)
    : Node("view", {std::move(base_node)}, view.shape, view.dtype),
      base_(std::move(base)),
      view_(std::move(view)) {}

std::vector<Tensor> ViewNode::apply(const Tensor& grad) {
  return {view_backward(grad, view_, base_)};
}

CopySlices::CopySlices(Edge prev, Geometry prev_geometry, Edge src,
                       Geometry dst, Geometry base)
    : Node("copy_slices", {std::move(prev), std::move(src)}, base.shape,
           base.dtype),
      prev_(std::move(prev_geometry)),
      dst_(std::move(dst)),
      base_(std::move(base)) {}

bool CopySlices::flat(const Tensor& grad, int64_t& lo, int64_t& hi) const {
  std::tie(lo, hi) = span_of(base_);
  for (const Geometry* g : {&prev_, &dst_}) {
    if (g == &prev_ && !needs(0)) continue;  // No previous content.
    auto [glo, ghi] = span_of(*g);
    lo = std::min(lo, glo);
    hi = std::max(hi, ghi);
  }
  return grad.is_contiguous() && base_.offset == lo &&
         canonical(base_) == canonical(Geometry{{hi - lo + 1}, {1}, lo, {}});
}

std::vector<Tensor> CopySlices::apply_exclusive(const Tensor& grad) {
  int64_t lo = 0, hi = 0;
  if (!needs(0) || !flat(grad, lo, hi)) return apply(grad);
  Tensor buffer = grad.reshape({-1});
  std::vector<Tensor> out(2);
  if (needs(1)) out[1] = place(buffer, lo, dst_).clone();
  assign(place(buffer, lo, dst_), 0.0);
  out[0] = place(buffer, lo, prev_);
  return out;
}

std::vector<Tensor> CopySlices::apply(const Tensor& grad) {
  // The gradient laid out by storage position: the written part goes to
  // the source, the rest to the previous content.
  int64_t lo = 0, hi = 0;
  Tensor buffer;
  if (flat(grad, lo, hi)) {
    buffer = grad.reshape({-1});
  } else {
    buffer = zeros({hi - lo + 1}, grad.backend(), grad.dtype());
    assign(place(buffer, lo, base_), grad);
  }
  std::vector<Tensor> out(2);
  if (needs(1)) out[1] = place(buffer, lo, dst_);
  if (needs(0)) {
    Tensor rest = buffer.clone();
    assign(place(rest, lo, dst_), 0.0);
    out[0] = place(rest, lo, prev_);
  }
  return out;
}

}  // namespace nascent::autodiff::detail
