// The tape's pieces, private to autodiff/.
//
// A tensor's history is kept with its storage (Storage, the BackendData the
// autodiff backend hands out around the wrapped backend's): the node whose
// output is the storage's content, and the geometry (shape, strides, offset)
// that output has. Any tensor reading the storage -- the op's output, a view
// of it, a copy of the handle -- finds its history there and, when its
// geometry differs, reaches it through a ViewNode that maps the gradient
// back. A handle may override this (Meta): detached handles have no
// history, and saved tensors unpacked under create_graph carry the history
// they had when saved.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nascent/autodiff/autodiff.h"
#include "nascent/core/ops.h"

namespace nascent::autodiff::detail {

// Where a tensor's elements sit in its storage, and their dtype.
struct Geometry {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  DType dtype = DType::f32;

  static Geometry of(const Tensor& t);
  bool operator==(const Geometry& o) const {
    return offset == o.offset && dtype == o.dtype && shape == o.shape &&
           strides == o.strides;
  }
  std::string to_string() const;
};

// True when no two elements share a storage slot.
bool non_overlapping(const Shape& shape, const Strides& strides);

class Node;
using Edge = std::shared_ptr<Node>;

// One step of the graph: turns the gradient of its single output into the
// gradients of its inputs, whose histories are next() (null where an input
// has none; apply leaves those gradients undefined).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node(const char* name, std::vector<Edge> next, Shape shape, DType dtype);
  Node(const char* name, std::vector<Edge> next, const Tensor& out);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::vector<Tensor> apply(const Tensor& grad) = 0;
  // apply when nothing else can see grad's storage, so the rule may reuse
  // it (write into it) instead of allocating.
  virtual std::vector<Tensor> apply_exclusive(const Tensor& grad) {
    return apply(grad);
  }
  virtual bool is_leaf() const { return false; }
  // Frees the saved tensors; apply must not run afterwards.
  virtual void release() {}
  bool released() const { return released_; }

  const char* name() const { return name_; }
  uint64_t sequence() const { return sequence_; }
  const std::vector<Edge>& next() const { return next_; }
  bool needs(size_t input) const { return next_[input] != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

 protected:
  bool released_ = false;

 private:
  const char* name_;
  uint64_t sequence_;  // Creation order: later nodes run first.
  std::vector<Edge> next_;
  Shape shape_;  // Of the output, which is also the gradient's.
  DType dtype_;
};

// A tensor that requires grad; backward accumulates into grad.
class Leaf final : public Node {
 public:
  explicit Leaf(const Geometry& g);
  std::vector<Tensor> apply(const Tensor& grad) override;
  bool is_leaf() const override { return true; }
  Tensor grad;
};

// A copy of a saved tensor's values that survives writes into its storage
// (copy-on-write: the storage moves the values here before it is written).
struct SavedSlot {
  Tensor value;  // On the wrapped backend.
};

// Storage of the autodiff backend: the wrapped backend's storage plus its
// history, write count and the saved tensors that read it.
class Storage final : public BackendData {
 public:
  // nbytes: what the tensor asked for (a caching allocator may hand out a
  // larger block); by default the inner storage's size.
  explicit Storage(std::shared_ptr<BackendData> inner, size_t nbytes = 0);
  const std::shared_ptr<BackendData>& inner() const { return inner_; }

  const Edge& node() const { return node_; }
  const Geometry& geometry() const { return geometry_; }
  void set_history(Edge node, Geometry geometry);
  // A ViewNode for reading the history with geometry g (cached).
  Edge view_of_history(const Geometry& g);

  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }
  void add_saved(const std::shared_ptr<SavedSlot>& slot);
  // Moves every live saved tensor that reads this storage into its own
  // copy on `inner`, before the storage is written.
  void detach_saved(nascent::Backend& inner);

 private:
  std::shared_ptr<BackendData> inner_;
  Edge node_;
  Geometry geometry_;
  std::vector<std::pair<Geometry, Edge>> views_;
  uint64_t version_ = 0;
  std::vector<std::weak_ptr<SavedSlot>> saved_;
  size_t saved_pruned_ = 0;
};

// Per-handle override of the storage's history (see the top comment).
class Meta final : public TensorExtra {
 public:
  bool detached = false;
  Edge node;  // When set: this handle's history, for geometry `geometry`.
  Geometry geometry;
};

// The autodiff backend of t, or null.
Backend* autodiff_backend(const Tensor& t);
// The storage of a tensor of an autodiff backend; BackendError naming `op`
// otherwise.
Storage& storage_of(const Tensor& t, const char* op);
// The handle's override, if any.
Meta* meta_of(const Tensor& t);

// The history of t's values: null when t has none.
Edge edge_of(const Tensor& t);
// Like edge_of(t) != null, without building view nodes.
bool has_history(const Tensor& t);
// The leaf t is (same geometry), or null.
std::shared_ptr<Leaf> leaf_of(const Tensor& t);

// Reads history, records nodes: what an op of the backend sees.
struct Recording {
  std::vector<Edge> edges;  // One per input, null where it has no history.
  bool active = false;      // Record a node for this op.
  bool any(size_t i) const { return edges[i] != nullptr; }
};
// Histories of `inputs` (nullptr entries allowed) when grad mode is on and
// the op is differentiable with a floating output.
Recording record(std::initializer_list<const Tensor*> inputs, DType out_dtype,
                 bool differentiable = true);

// The wrapped backend's handle on a tensor of the autodiff backend.
Tensor to_inner(const Tensor& t);
// Writing into `out`: before the wrapped backend runs, saved tensors leave
// its storage; a leaf may only be written by values without history.
void begin_write(const Tensor& out, bool recorded);
// After: the storage's history becomes `node` (a full write) or an
// in-place update of the written part (CopySlices).
void end_write(const Tensor& out, const Edge& node);

// A tensor kept for a node's backward rule.
class Saved {
 public:
  Saved() = default;
  // An input of the op, whose history at save time is `edge`.
  static Saved input(const Tensor& t, const Edge& edge);
  // The op's output (its history is the node that saves it).
  static Saved output(const Tensor& t);
  bool defined() const { return slot_ != nullptr; }
  // The values as a tensor of the autodiff backend; under grad mode it
  // carries its history, so the rule is differentiable again.
  Tensor get(const Node& owner) const;
  void reset() { slot_.reset(), edge_.reset(); }

 private:
  Backend* backend_ = nullptr;
  std::shared_ptr<SavedSlot> slot_;
  Edge edge_;
  bool output_ = false;
};

// act'(x) for the activations of the gated units (silu, gelu_tanh), in
// differentiable ops: shared by the unary and glu rules (unary.cpp).
Tensor activation_derivative(UnaryOp op, const Tensor& x);

}  // namespace nascent::autodiff::detail
