// The backward pass: walks the graph from the roots, runs each node's rule
// once all its consumers have delivered their gradients (latest node first
// among the ready ones, as PyTorch, which frees activations early), sums
// gradients that meet, and accumulates into leaves or captures the
// gradients asked for.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

using detail::Edge;
using detail::Node;

class Engine {
 public:
  Engine(bool accumulate, bool retain, bool create_graph)
      : accumulate_(accumulate), retain_(retain), create_graph_(create_graph) {}

  void add_root(const Edge& node, Tensor grad, bool shared) {
    if (std::find(roots_.begin(), roots_.end(), node.get()) == roots_.end()) {
      roots_.push_back(node.get());
    }
    add(pending_[node.get()], std::move(grad), shared);
    keep_.push_back(node);
  }
  // Only these nodes' gradients are wanted (functional grad); `on_ready`
  // hears of each as soon as it is final.
  void capture(const std::vector<Edge>& nodes, const GradReady& on_ready) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      wanted_.insert(nodes[i].get());
      inputs_of_[nodes[i].get()].push_back(i);
    }
    on_ready_ = on_ready;
    capturing_ = true;
  }
  void run();

  Tensor captured(const Edge& node) const {
    auto it = captured_.find(node.get());
    return it == captured_.end() ? Tensor() : it->second;
  }
  Gradients take_gradients() { return std::move(gradients_); }

 private:
  struct Pending {
    Tensor grad;
    bool shared = false;  // Other handles may see its storage.
  };
  struct State {
    int deps = 0;
    bool needed = true;  // Leads to a wanted node (always, for backward).
  };

  static void add(Pending& p, Tensor grad, bool shared) {
    if (!grad.defined()) return;
    if (!p.grad.defined()) {
      p.grad = std::move(grad);
      p.shared = shared;
    } else {
      p.grad = nascent::add(p.grad, grad);
      p.shared = false;
    }
  }
  void collect();
  void accumulate(detail::Leaf& leaf, const Pending& p);
  void apply(Node& n, const Pending& p);

  bool accumulate_, retain_, create_graph_;
  bool capturing_ = false;
  std::vector<Node*> roots_;
  std::vector<Edge> keep_;
  std::unordered_set<Node*> wanted_;
  std::unordered_map<Node*, State> states_;
  std::unordered_map<Node*, Pending> pending_;
  std::unordered_map<Node*, Tensor> captured_;
  std::unordered_map<Node*, std::vector<size_t>> inputs_of_;
  GradReady on_ready_;
  Gradients gradients_;
};

namespace {

// Nothing but this handle can reach the storage of g, which covers it
// exactly: a leaf may keep g as its gradient without a copy.
bool dense_and_whole(const Tensor& g) {
  return g.is_contiguous() && g.offset() == 0 &&
         size_t(g.numel()) * g.itemsize() == g.data()->nbytes();
}

}  // namespace

void Engine::collect() {
  // Iterative depth-first walk (graphs can be deep chains), post-order.
  std::vector<Node*> post_order;
  std::vector<std::pair<Node*, size_t>> stack;
  for (Node* root : roots_) {
    if (!states_.emplace(root, State{}).second) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      Node* n = stack.back().first;
      size_t i = stack.back().second;
      if (i < n->next().size()) {
        ++stack.back().second;
        Node* c = n->next()[i].get();
        if (c != nullptr && states_.emplace(c, State{}).second) {
          stack.emplace_back(c, 0);
        }
      } else {
        post_order.push_back(n);
        stack.pop_back();
      }
    }
  }
  if (capturing_) {
    for (Node* n : post_order) {
      bool needed = wanted_.count(n) > 0;
      for (const Edge& c : n->next()) {
        needed = needed || (c && states_[c.get()].needed);
      }
      states_[n].needed = needed;
    }
  }
  for (auto& [n, st] : states_) {
    if (!st.needed) continue;
    for (const Edge& c : n->next()) {
      if (c && states_[c.get()].needed) ++states_[c.get()].deps;
    }
  }
}

void Engine::accumulate(detail::Leaf& leaf, const Pending& p) {
  if (!leaf.grad.defined()) {
    leaf.grad = !p.shared && dense_and_whole(p.grad) ? p.grad : p.grad.clone();
  } else {
    leaf.grad = nascent::add(leaf.grad, p.grad);
  }
}

void Engine::apply(Node& n, const Pending& p) {
  if (n.released()) {
    throw ValueError(fmt::format(
        "backward: tried to run backward through {} a second time, but the "
        "first backward freed its saved tensors; pass "
        "BackwardOptions{{.retain_graph = true}} to the first one",
        n.name()));
  }
  // Nobody else holds an unshared gradient that owns its whole storage
  // (captured ones are kept for the caller).
  const bool held = p.shared || wanted_.count(&n) > 0;
  const bool exclusive = !held && dense_and_whole(p.grad);
  std::vector<Tensor> grads =
      exclusive ? n.apply_exclusive(p.grad) : n.apply(p.grad);
  if (grads.size() != n.next().size()) {
    throw Error(fmt::format("autodiff: the rule of {} gave {} gradients for {}",
                            n.name(), grads.size(), n.next().size()));
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& c = n.next()[i];
    const Tensor& g = grads[i];
    if (!c || !g.defined() || !states_[c.get()].needed) continue;
    if (g.shape() != c->shape() || g.dtype() != c->dtype()) {
      throw Error(fmt::format(
          "autodiff: the rule of {} gave a gradient {} for input {} of {}{}",
          n.name(), g.to_string(), i, name(c->dtype()), to_string(c->shape())));
    }
    // A gradient passed on unchanged (from one held elsewhere), or handed
    // to two inputs, is seen by more than one consumer.
    bool shared = g.data() == p.grad.data() && held;
    for (size_t j = 0; j < grads.size(); ++j) {
      if (j != i && grads[j].defined() && grads[j].data() == g.data()) {
        shared = true;
      }
    }
    add(pending_[c.get()], g, shared);
  }
  if (!retain_) n.release();
}

void Engine::run() {
  GradModeGuard mode(create_graph_);
  collect();
  auto later = [](Node* a, Node* b) { return a->sequence() < b->sequence(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  for (Node* r : roots_) {
    const State& st = states_[r];
    if (st.needed && st.deps == 0) ready.push(r);
  }
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    Pending p = std::move(pending_[n]);
    pending_.erase(n);
    if (p.grad.defined() && wanted_.count(n) > 0) {
      captured_[n] = p.grad;
      if (on_ready_) {
        for (size_t i : inputs_of_[n]) on_ready_(i, p.grad);
      }
    }
    if (n->is_leaf()) {
      if (accumulate_ && p.grad.defined()) {
        accumulate(static_cast<detail::Leaf&>(*n), p);
        gradients_.grads_.emplace_back(n->shared_from_this(), p.grad);
      }
    } else if (p.grad.defined()) {
      bool expand = false;
      for (const Edge& c : n->next()) {
        expand = expand || (c && states_[c.get()].needed);
      }
      if (expand) apply(*n, p);
    }
    for (const Edge& c : n->next()) {
      if (!c) continue;
      State& st = states_[c.get()];
      if (st.needed && --st.deps == 0) ready.push(c.get());
    }
  }
  if (!retain_) {
    for (auto& [n, st] : states_) n->release();
  }
}

// --- Public entry points
// ----------------------------------------------------------

Tensor Gradients::get(const Tensor& t) const {
  std::shared_ptr<detail::Leaf> leaf = detail::leaf_of(t);
  if (!leaf) return Tensor();
  for (const auto& [node, g] : grads_) {
    if (node.get() == leaf.get()) return g;
  }
  return Tensor();
}

namespace {

Edge root_edge(const char* op, const Tensor& t, const std::string& what) {
  if (!t.defined()) {
    throw ValueError(fmt::format("{}: {} is undefined", op, what));
  }
  Edge e = detail::edge_of(t);
  if (!e) {
    throw ValueError(fmt::format(
        "{}: {} {} does not require grad: no input it was computed from "
        "requires grad, or it was computed under NoGradGuard or from detached "
        "tensors",
        op, what, t.to_string()));
  }
  return e;
}

// grad_output, checked against the output it seeds, in its dtype.
Tensor seed(const char* op, const Tensor& output, const Tensor& grad_output) {
  if (!grad_output.defined() || &grad_output.backend() != &output.backend()) {
    throw BackendError(
        fmt::format("{}: grad_output {} must live on the output's backend {}",
                    op, grad_output.to_string(), output.backend().name()));
  }
  if (grad_output.shape() != output.shape()) {
    throw ShapeError(
        fmt::format("{}: grad_output {} does not match the output {}", op,
                    grad_output.to_string(), output.to_string()));
  }
  return grad_output.cast(output.dtype());
}

void check_one_element(const char* op, const Tensor& output) {
  if (output.defined() && output.numel() != 1) {
    throw ValueError(fmt::format(
        "{}: the output must have one element to seed the gradient with 1, "
        "got {}; pass grad_output for other outputs",
        op, output.to_string()));
  }
}

Tensor ones_seed(const char* op, const Tensor& output) {
  check_one_element(op, output);
  NoGradGuard no_grad;
  return ones_like(output);
}

}  // namespace

Gradients backward(const Tensor& loss, BackwardOptions options) {
  check_one_element("backward", loss);
  Edge root = root_edge("backward", loss, "the loss");
  // As PyTorch, create_graph keeps the graph: the new one reads it.
  Engine engine(true, options.retain_graph || options.create_graph,
                options.create_graph);
  engine.add_root(root, ones_seed("backward", loss), false);
  engine.run();
  return engine.take_gradients();
}

Gradients backward(const Tensor& output, const Tensor& grad_output,
                   BackwardOptions options) {
  Edge root = root_edge("backward", output, "the output");
  Tensor g = seed("backward", output, grad_output);
  Engine engine(true, options.retain_graph || options.create_graph,
                options.create_graph);
  engine.add_root(root, std::move(g), true);
  engine.run();
  return engine.take_gradients();
}

namespace {

std::vector<Tensor> run_grad(const std::vector<Tensor>& outputs,
                             const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& grad_outputs,
                             bool create_graph, const GradReady& on_ready) {
  const char* op = "grad";
  if (outputs.empty()) throw ValueError("grad: no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    throw ValueError(fmt::format("grad: {} grad_outputs given for {} outputs",
                                 grad_outputs.size(), outputs.size()));
  }
  Engine engine(false, create_graph, create_graph);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Edge root = root_edge(op, outputs[i], fmt::format("output {}", i));
    Tensor g = grad_outputs.empty() || !grad_outputs[i].defined()
                   ? ones_seed(op, outputs[i])
                   : seed(op, outputs[i], grad_outputs[i]);
    engine.add_root(root, std::move(g), true);
  }
  std::vector<Edge> wanted;
  for (size_t i = 0; i < inputs.size(); ++i) {
    wanted.push_back(root_edge(op, inputs[i], fmt::format("input {}", i)));
  }
  engine.capture(wanted, on_ready);
  engine.run();
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor g = engine.captured(wanted[i]);
    if (!g.defined()) {
      NoGradGuard no_grad;
      g = zeros_like(inputs[i]);
      if (on_ready) on_ready(i, g);
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs,
                         bool create_graph) {
  return run_grad(outputs, inputs, grad_outputs, create_graph, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& inputs,
                         const GradReady& on_ready) {
  return run_grad(outputs, inputs, {}, false, on_ready);
}

}  // namespace nascent::autodiff
