// Reverse-mode automatic differentiation as a Backend decorator (Burn's
// design): autodiff::Backend wraps any Backend, forwards every op to it (a
// ForwardingBackend, core/forwarding.h) and records what the differentiable
// ones need for the gradient on a tape. Gradients are computed
// with the core front-ends on the same backend, so they stay where the data
// lives, and they are themselves differentiable (create_graph).
//
//   cpu::Backend cpu;
//   autodiff::Backend ad(cpu);
//   Tensor w = randn({3, 2}, ad, 1, DType::f64);
//   autodiff::set_requires_grad(w);
//   Tensor loss = sum(tanh(matmul(x, w)));
//   autodiff::backward(loss);
//   Tensor dw = autodiff::grad(w);     // Accumulated, like PyTorch's .grad.
//
// History lives with the storage, so views (reshape, transpose, slice, ...),
// which core builds without calling a backend, are differentiable: using a
// view maps its gradient back onto the storage it reads. Writes into a view
// (Backend::copy into part of a tensor, as cat and pad do, or assign) are
// recorded as in-place updates of that storage (PyTorch's CopySlices).
//
// A tensor saved for the gradient (mul saves its inputs) keeps its values:
// writing into its storage later (an optimizer step before backward) first
// moves the saved values to a private copy, so the gradient is that of the
// function as it was evaluated (copy-on-write, paid only when it happens).
//
// Conventions where the derivative is not unique, as PyTorch: max/min
// reductions and maximum/minimum share the gradient evenly among ties;
// max_pool2d gives it to the element whose index the forward returned;
// relu, abs and clamp take the derivative at a kink from the side that
// keeps zero (relu'(0) = 0, abs'(0) = 0) and clamp passes gradient at its
// bounds. Casts to integer types and Tensor::to() (another backend) are not
// differentiable. Writes under NoGradGuard leave the written storage's
// history as it was (parameter updates); with grad on, a write into a leaf
// that requires grad is refused unless the values written have no history.
//
// Not thread-safe: one thread records and runs a graph. Grad mode
// (NoGradGuard) is per thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/forwarding.h"
#include "nascent/core/tensor.h"

namespace nascent::autodiff {

namespace detail {
class Node;
}  // namespace detail
class Engine;

class Backend final : public ForwardingBackend {
 public:
  explicit Backend(nascent::Backend& inner);

  // A tensor of this backend sharing the storage of `t` (a tensor of the
  // wrapped backend), without history. The two handles see the same bytes,
  // but writes through `t` itself are not tracked.
  Tensor adopt(const Tensor& t);
  // The wrapped backend's view of a tensor of this backend (same storage).
  Tensor unwrap(const Tensor& t) const;

  std::string name() const override;

  // The differentiable families, recorded (one file each). The others
  // (creation, random, quant, optim) are forwarded as they are: plain
  // writes, whose versions and saved copies before()/after() keep.
  void copy(const Tensor& src, Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
             Tensor& out) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b,
              Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b,
             Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
              const ReduceParams& p, Tensor& out) override;
  void scan(ScanOp op, const Tensor& x, int axis, Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override;
  void conv2d(ConvOp op, const Tensor& a, const Tensor& b, const Tensor* bias,
              const Conv2dParams& p, Tensor& out) override;
  void pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
              const Pool2dParams& p, Tensor& out, Tensor* out_indices) override;
  void softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) override;
  void norm(NormOp op, const Tensor& x, const Tensor* weight,
            const Tensor* bias, double eps, Tensor& out, Tensor* mean,
            Tensor* rstd) override;
  void index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
             const Tensor* src, Tensor& out) override;
  // Quantized weights are constants: refuses an x with history (quant.cpp).
  void quant(QuantOp op, const Tensor* x,
             std::span<const QuantArg> args) override;
  // The transformer ops: the wrapped backend's kernels forward, rules of
  // their own backward (rope.cpp, attention.cpp, glu.cpp).
  void rope(const Tensor& x, const Tensor& positions,
            const Tensor* freq_factors, const RopeParams& p,
            Tensor& out) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override;
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 protected:
  Tensor to_inner(const Tensor& t) const override;
  std::shared_ptr<BackendData> wrap_storage(std::shared_ptr<BackendData> inner,
                                            size_t nbytes) override;
  // The write protocol of the ops forwarded unrecorded (backend.cpp).
  void before(Op op, std::span<const Tensor* const> inputs,
              std::span<Tensor* const> written) override;
  void after(Op op, std::span<Tensor* const> written) override;
};

// Marks `t` (floating, on an autodiff backend, without history of its own) as
// a leaf whose gradient backward() accumulates. The mark belongs to the
// storage, so every copy of the handle and every view of it sees it.
void set_requires_grad(const Tensor& t, bool on = true);
// True for leaves and for every tensor computed from one with grad enabled
// (views of them included), false for detached tensors.
bool requires_grad(const Tensor& t);
// True for a tensor set_requires_grad marked (or a copy of its handle).
bool is_leaf(const Tensor& t);
// Same storage, no history: gradients do not flow through it.
Tensor detach(const Tensor& t);

// Ops inside record nothing (optimizer steps, evaluation). Per thread.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
// Sets grad mode to `enabled` for its scope (create_graph uses it).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();

struct BackwardOptions {
  // Keep the saved tensors so that backward can run through the graph again.
  bool retain_graph = false;
  // Record the gradient computation itself, for gradients of gradients.
  bool create_graph = false;
};

// The gradients one backward() call computed, by leaf. They may share
// storage with the leaves' accumulated gradients.
class Gradients {
 public:
  // d(loss)/d(t) for a leaf `t` (or a copy of its handle); undefined if the
  // loss does not depend on it.
  Tensor get(const Tensor& t) const;
  bool has(const Tensor& t) const { return get(t).defined(); }
  size_t size() const { return grads_.size(); }

 private:
  friend class Engine;
  std::vector<std::pair<std::shared_ptr<detail::Node>, Tensor>> grads_;
};

// Accumulates d(loss)/d(leaf) into every leaf that requires grad (like
// PyTorch's .grad) and returns the gradients of all leaves reached. The
// loss must have one element; the second form seeds with grad_output (the
// output's shape) instead. Without retain_graph the graph's saved tensors
// are freed, and a second backward through it throws. create_graph keeps
// the graph, and the accumulated gradients then hold history that leads
// back to their leaves: zero_grad() breaks that cycle (as in PyTorch).
Gradients backward(const Tensor& loss, BackwardOptions options = {});
Gradients backward(const Tensor& output, const Tensor& grad_output,
                   BackwardOptions options = {});

// The gradient accumulated into a leaf, undefined if none.
Tensor grad(const Tensor& leaf);
// Drops the accumulated gradient.
void zero_grad(const Tensor& leaf);

// Functional form: d(outputs)/d(inputs) weighted by grad_outputs (default
// ones, for outputs of one element), without touching accumulated
// gradients. Inputs may be leaves or results of ops. An input the outputs
// do not depend on gets zeros. create_graph records the computation (and
// keeps the graph) for higher-order gradients.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         bool create_graph = false);

// Called once for each input of grad() with its gradient, as soon as that
// gradient is final: while the rest of the backward pass still runs, so that
// a caller can start work on it (data-parallel training all-reduces it).
// Inputs the outputs do not depend on are reported, with zeros, at the end.
using GradReady = std::function<void(size_t input, const Tensor& grad)>;
std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                         const std::vector<Tensor>& inputs,
                         const GradReady& on_ready);

}  // namespace nascent::autodiff
