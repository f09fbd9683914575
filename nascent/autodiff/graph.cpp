#include "nascent/autodiff/graph.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nascent/autodiff/view_grad.h"

namespace nascent::autodiff {

namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

bool grad_enabled() {
  return t_grad_enabled;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) {
  t_grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
  t_grad_enabled = previous_;
}
GradModeGuard::GradModeGuard(bool enabled) : previous_(t_grad_enabled) {
  t_grad_enabled = enabled;
}
GradModeGuard::~GradModeGuard() {
  t_grad_enabled = previous_;
}

namespace detail {

namespace {
// Enough for the views one step of a model takes of a parameter (weight,
// weight^T); a loop of many different slices just cycles through it.
constexpr size_t kViewCache = 8;
uint64_t g_sequence = 0;
}  // namespace

Geometry Geometry::of(const Tensor& t) {
  return Geometry{t.shape(), t.strides(), t.offset(), t.dtype()};
}

std::string Geometry::to_string() const {
  return fmt::format("{}{} (strides [{}], offset {})", name(dtype),
                     nascent::to_string(shape), fmt::join(strides, ", "),
                     offset);
}

bool non_overlapping(const Shape& shape, const Strides& strides) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // (|stride|, size)
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return true;
    if (shape[d] > 1) axes.emplace_back(std::abs(strides[d]), shape[d]);
  }
  std::sort(axes.begin(), axes.end());
  int64_t span = 0;
  for (const auto& [stride, size] : axes) {
    if (stride <= span) return false;
    span += stride * (size - 1);
  }
  return true;
}

Node::Node(const char* name, std::vector<Edge> next, Shape shape, DType dtype)
    : name_(name),
      sequence_(++g_sequence),
      next_(std::move(next)),
      shape_(std::move(shape)),
      dtype_(dtype) {}

Node::Node(const char* name, std::vector<Edge> next, const Tensor& out)
    : Node(name, std::move(next), out.shape(), out.dtype()) {}

Node::~Node() {
  // Freeing a long chain (an unrolled loop) node by node would recurse
  // once per node and overflow the stack: the outermost destructor frees
  // the inputs only this node held, in a loop, and the destructors it
  // triggers just queue theirs.
  thread_local std::vector<Edge> queue;
  thread_local bool draining = false;
  for (Edge& e : next_) {
    if (e && e.use_count() == 1) queue.push_back(std::move(e));
  }
  if (draining) return;
  draining = true;
  while (!queue.empty()) {
    Edge e = std::move(queue.back());
    queue.pop_back();
    e.reset();
  }
  draining = false;
}

Leaf::Leaf(const Geometry& g) : Node("leaf", {}, g.shape, g.dtype) {}

std::vector<Tensor> Leaf::apply(const Tensor&) {
  return {};
}

// --- Storage
// ------------------------------------------------------------------

Storage::Storage(std::shared_ptr<BackendData> inner, size_t nbytes)
    : BackendData(nbytes != 0 ? nbytes : inner->nbytes()),
      inner_(std::move(inner)) {}

void Storage::set_history(Edge node, Geometry geometry) {
  node_ = std::move(node);
  geometry_ = std::move(geometry);
  views_.clear();
}

Edge Storage::view_of_history(const Geometry& g) {
  for (const auto& [geometry, node] : views_) {
    if (geometry == g) return node;
  }
  Edge view = std::make_shared<ViewNode>(node_, geometry_, g);
  if (views_.size() >= kViewCache) views_.erase(views_.begin());
  views_.emplace_back(g, view);
  return view;
}

void Storage::add_saved(const std::shared_ptr<SavedSlot>& slot) {
  // Drop the expired entries now and then, so a storage read by many
  // finished graphs does not grow its list.
  if (saved_.size() >= 2 * saved_pruned_ + 16) {
    saved_.erase(std::remove_if(saved_.begin(), saved_.end(),
                                [](const auto& w) { return w.expired(); }),
                 saved_.end());
    saved_pruned_ = saved_.size();
  }
  saved_.push_back(slot);
}

void Storage::detach_saved(nascent::Backend& inner) {
  for (const std::weak_ptr<SavedSlot>& weak : saved_) {
    std::shared_ptr<SavedSlot> slot = weak.lock();
    if (!slot) continue;
    const Tensor& v = slot->value;
    Tensor copy = Tensor::empty(v.shape(), v.dtype(), inner);
    if (v.numel() > 0) inner.copy(v, copy);
    slot->value = std::move(copy);
  }
  saved_.clear();
  saved_pruned_ = 0;
}

// --- Lookups
// ------------------------------------------------------------------

Backend* autodiff_backend(const Tensor& t) {
  return t.defined() ? dynamic_cast<Backend*>(&t.backend()) : nullptr;
}

Storage& storage_of(const Tensor& t, const char* op) {
  auto* s = t.defined() ? dynamic_cast<Storage*>(t.data().get()) : nullptr;
  if (s == nullptr) {
    throw BackendError(fmt::format(
        "{}: {} is not a tensor of an autodiff backend (its storage was not "
        "allocated by one); create it on an autodiff::Backend",
        op, t.to_string()));
  }
  return *s;
}

Meta* meta_of(const Tensor& t) {
  const std::shared_ptr<TensorExtra>& extra = t.extra();
  return extra ? dynamic_cast<Meta*>(extra.get()) : nullptr;
}

namespace {

void check_dtype(const Geometry& history, const Geometry& g) {
  if (history.dtype != g.dtype) {
    throw DTypeError(fmt::format(
        "autodiff: a {} view reads storage whose history is {}; "
        "reinterpreting a storage as another dtype is not differentiable",
        name(g.dtype), history.to_string()));
  }
}

}  // namespace

Edge edge_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  auto* s = dynamic_cast<Storage*>(t.data().get());
  if (s == nullptr) return nullptr;
  Meta* m = meta_of(t);
  if (m != nullptr && m->detached) return nullptr;
  if (m != nullptr && m->node) {
    Geometry g = Geometry::of(t);
    if (g == m->geometry) return m->node;
    check_dtype(m->geometry, g);
    return std::make_shared<ViewNode>(m->node, m->geometry, std::move(g));
  }
  if (!s->node()) return nullptr;
  Geometry g = Geometry::of(t);
  if (g == s->geometry()) return s->node();
  check_dtype(s->geometry(), g);
  return s->view_of_history(g);
}

bool has_history(const Tensor& t) {
  if (!t.defined()) return false;
  auto* s = dynamic_cast<Storage*>(t.data().get());
  if (s == nullptr) return false;
  Meta* m = meta_of(t);
  if (m != nullptr && m->detached) return false;
  if (m != nullptr && m->node) return true;
  return s->node() != nullptr;
}

std::shared_ptr<Leaf> leaf_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  auto* s = dynamic_cast<Storage*>(t.data().get());
  if (s == nullptr) return nullptr;
  Meta* m = meta_of(t);
  if (m != nullptr && m->detached) return nullptr;
  const Edge& node = m != nullptr && m->node ? m->node : s->node();
  const Geometry& g = m != nullptr && m->node ? m->geometry : s->geometry();
  if (!node || !node->is_leaf() || !(g == Geometry::of(t))) return nullptr;
  return std::static_pointer_cast<Leaf>(node);
}

Recording record(std::initializer_list<const Tensor*> inputs, DType out_dtype,
                 bool differentiable) {
  Recording r;
  r.edges.resize(inputs.size());
  if (!grad_enabled() || !differentiable || !is_floating(out_dtype)) return r;
  size_t i = 0;
  for (const Tensor* t : inputs) {
    if (t != nullptr && is_floating(t->dtype())) {
      r.edges[i] = edge_of(*t);
      r.active = r.active || r.edges[i] != nullptr;
    }
    ++i;
  }
  return r;
}

Tensor to_inner(const Tensor& t) {
  Storage& s = storage_of(t, "autodiff");
  Backend& ad = static_cast<Backend&>(t.backend());
  return Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(), ad.inner(),
                      s.inner());
}

// --- Writes
// -------------------------------------------------------------------

namespace {

// The write covers every element of the storage once.
bool covers_storage(const Tensor& t, const Storage& s) {
  return size_t(t.numel()) * t.itemsize() == s.nbytes() &&
         non_overlapping(t.shape(), t.strides());
}

}  // namespace

void begin_write(const Tensor& out, bool recorded) {
  Storage& s = storage_of(out, "autodiff");
  if (recorded && grad_enabled() && s.node() && s.node()->is_leaf()) {
    throw ValueError(fmt::format(
        "autodiff: cannot write values that require grad into {}, which "
        "shares storage with a leaf that requires grad ({}); update "
        "parameters inside a NoGradGuard, or write detached values",
        out.to_string(), s.geometry().to_string()));
  }
  s.detach_saved(static_cast<Backend&>(out.backend()).inner());
}

void end_write(const Tensor& out, const Edge& node) {
  Storage& s = storage_of(out, "autodiff");
  s.bump_version();
  // Writes under no_grad leave the history alone (as PyTorch): they are
  // parameter updates, or their values are constants to the graph.
  if (!grad_enabled()) return;
  if (s.node() && s.node()->is_leaf()) return;  // Plain data update.
  Geometry g = Geometry::of(out);
  if (covers_storage(out, s)) {
    s.set_history(node, std::move(g));
    return;
  }
  if (!node && !s.node()) return;
  // Part of the storage changes: the rest keeps its history.
  Geometry base =
      s.node()
          ? s.geometry()
          : Geometry{
                {int64_t(s.nbytes() / out.itemsize())}, {1}, 0, out.dtype()};
  check_dtype(base, g);
  Edge update =
      std::make_shared<CopySlices>(s.node(), s.geometry(), node, g, base);
  s.set_history(std::move(update), std::move(base));
}

// --- Saved tensors
// --------------------------------------------------------------

Saved Saved::input(const Tensor& t, const Edge& edge) {
  Saved s;
  s.backend_ = autodiff_backend(t);
  s.slot_ = std::make_shared<SavedSlot>();
  s.slot_->value = to_inner(t);
  s.edge_ = edge;
  storage_of(t, "autodiff").add_saved(s.slot_);
  return s;
}

Saved Saved::output(const Tensor& t) {
  Saved s = input(t, nullptr);
  s.output_ = true;
  return s;
}

Tensor Saved::get(const Node& owner) const {
  if (!slot_) {
    throw ValueError(fmt::format(
        "backward: the saved tensors of {} were freed by an earlier "
        "backward; pass BackwardOptions{{.retain_graph = true}} to it to "
        "run backward through the graph again",
        owner.name()));
  }
  const Tensor& v = slot_->value;
  Tensor t = Tensor::make(v.shape(), v.strides(), v.offset(), v.dtype(),
                          *backend_, std::make_shared<Storage>(v.data()));
  Edge history =
      output_ ? std::const_pointer_cast<Node>(owner.shared_from_this()) : edge_;
  if (grad_enabled() && history) {
    auto m = std::make_shared<Meta>();
    m->node = std::move(history);
    m->geometry = Geometry::of(t);
    t.set_extra(std::move(m));
  }
  return t;
}

}  // namespace detail

// --- Leaves
// ---------------------------------------------------------------------

void set_requires_grad(const Tensor& t, bool on) {
  const char* op = "set_requires_grad";
  if (detail::autodiff_backend(t) == nullptr) {
    throw BackendError(fmt::format(
        "{}: {} lives on backend {}, not an autodiff backend; create it on "
        "an autodiff::Backend",
        op, t.to_string(), t.defined() ? t.backend().name() : "none"));
  }
  if (!is_floating(t.dtype())) {
    throw DTypeError(fmt::format(
        "{}: only floating tensors have gradients, got {}", op, t.to_string()));
  }
  detail::Storage& s = detail::storage_of(t, op);
  detail::Meta* m = detail::meta_of(t);
  detail::Geometry g = detail::Geometry::of(t);
  // A detached handle becomes a leaf of its own (x.detach().requires_grad_()).
  if (m != nullptr && (m->detached || m->node)) {
    if (on && m->node && m->node->is_leaf() && m->geometry == g) return;
    if (m->node && !m->node->is_leaf()) {
      throw ValueError(fmt::format(
          "{}: {} has history; only leaves can change requires_grad", op,
          t.to_string()));
    }
    m->detached = !on;
    m->node = on ? std::make_shared<detail::Leaf>(g) : nullptr;
    m->geometry = g;
    return;
  }
  if (on) {
    if (s.node()) {
      if (s.node()->is_leaf() && s.geometry() == g) return;
      throw ValueError(fmt::format(
          "{}: {} {}; only a tensor without history can become a leaf "
          "(detach() it first)",
          op, t.to_string(),
          s.node()->is_leaf()
              ? "shares storage with another leaf " + s.geometry().to_string()
              : std::string("is computed by ") + s.node()->name()));
    }
    s.set_history(std::make_shared<detail::Leaf>(g), g);
    return;
  }
  if (!s.node()) return;
  if (!s.node()->is_leaf()) {
    throw ValueError(fmt::format(
        "{}: {} is computed by {}; only leaves can stop requiring grad (use "
        "detach())",
        op, t.to_string(), s.node()->name()));
  }
  s.set_history(nullptr, {});
}

bool requires_grad(const Tensor& t) {
  return detail::has_history(t);
}

bool is_leaf(const Tensor& t) {
  return detail::leaf_of(t) != nullptr;
}

Tensor detach(const Tensor& t) {
  if (detail::autodiff_backend(t) == nullptr) return t;
  Tensor d = t.as_strided(t.shape(), t.strides(), t.offset());
  auto m = std::make_shared<detail::Meta>();
  m->detached = true;
  d.set_extra(std::move(m));
  return d;
}

Tensor grad(const Tensor& leaf) {
  std::shared_ptr<detail::Leaf> l = detail::leaf_of(leaf);
  return l ? l->grad : Tensor();
}

void zero_grad(const Tensor& leaf) {
  if (std::shared_ptr<detail::Leaf> l = detail::leaf_of(leaf)) {
    l->grad = Tensor();
  }
}

}  // namespace nascent::autodiff
