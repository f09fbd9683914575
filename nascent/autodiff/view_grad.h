// Gradients through views and in-place writes, worked out from geometry
// alone: core builds views without calling a backend, so all autodiff
// knows of a view is where its elements sit in the storage.
#pragma once

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff::detail {

// The gradient of a tensor `base` from that of `view`, where both read the
// same storage (view's elements are a selection of base's, possibly with
// repeats). Reshapes, permutations and broadcasts map directly; anything
// else goes through a buffer indexed by storage position.
Tensor view_backward(const Tensor& grad, const Geometry& view,
                     const Geometry& base);

// Reads a storage's history with another geometry.
class ViewNode final : public Node {
 public:
  ViewNode(Edge base_node, Geometry base, Geometry view);
  std::vector<Tensor> apply(const Tensor& grad) override;

 private:
  Geometry base_, view_;
};

// An in-place write of `dst` (part of a storage whose content was `prev`,
// with geometry prev_geometry) by values whose history is `src`. Its output
// is the whole storage, seen with geometry `base`.
class CopySlices final : public Node {
 public:
  CopySlices(Edge prev, Geometry prev_geometry, Edge src, Geometry dst,
             Geometry base);
  std::vector<Tensor> apply(const Tensor& grad) override;
  // Zeroes the written part of grad in place: the chain of writes behind
  // cat or stack then costs the size of each part, not of the whole.
  std::vector<Tensor> apply_exclusive(const Tensor& grad) override;

 private:
  // grad as a 1-D buffer of storage positions from lo, if it already is
  // one (a contiguous grad of a contiguous base).
  bool flat(const Tensor& grad, int64_t& lo, int64_t& hi) const;

  Geometry prev_, dst_, base_;
};

}  // namespace nascent::autodiff::detail
