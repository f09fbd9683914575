// ForwardingBackend: a Backend that hands every call to another one (Burn's
// backend decorators). Wrappers derive from it and override only what they
// intercept: autodiff (autodiff/autodiff.h) records differentiable ops and
// keeps the write protocol of the others in before()/after(), the op
// profiler (bench/op_profiler.h) times every call there, the CUDA
// cross-check compares the ops it knows. An op family added to the Backend
// interface is forwarded here once and so reaches the wrapped backend
// through every wrapper (tests/core/forwarding_test.cpp checks each op).
//
// Tensors of a forwarding backend share their storage with the wrapped
// backend: to_inner() gives the wrapped backend's handle on the same bytes
// (a wrapper whose storage wraps the inner storage, as autodiff's does,
// overrides it and wrap_storage()).
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/tensor.h"

namespace nascent {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}
  Backend& inner() const { return inner_; }
  // The wrapped backend's handle on the bytes of t, which lives here.
  Tensor unwrapped(const Tensor& t) const { return to_inner(t); }

  std::string name() const override { return inner_.name(); }
  std::shared_ptr<BackendData> allocate(size_t nbytes) override;
  std::shared_ptr<BackendData> upload(const void* host, size_t nbytes) override;
  std::shared_ptr<BackendData> wrap(std::shared_ptr<const void> owner,
                                    const void* data, size_t nbytes) override;
  HostBytes materialize(const Tensor& t) override;
  void release(Tensor& t) override;
  void set_persistent(const Tensor& t, bool persistent) override;
  bool is_persistent(const Tensor& t) const override;
  void trim() override;
  MemoryStats memory_stats() const override;

  void create(CreationOp op, Scalar a, Scalar b, Tensor& out) override;
  void random(RandomOp op, const RandomParams& p, Tensor& out) override;
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
  void quant(QuantOp op, const Tensor* x,
             std::span<const QuantArg> args) override;
  int64_t qmatmul_block_rows(QuantType type) const override;
  void optim(OptimOp op, const OptimParams& p, Tensor& param,
             const Tensor& grad, Tensor* state0, Tensor* state1) override;
  void rope(const Tensor& x, const Tensor& positions,
            const Tensor* freq_factors, const RopeParams& p,
            Tensor& out) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override;
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 protected:
  // The wrapped backend's handle on t: by default the same storage, view
  // and dtype, bound to the wrapped backend.
  virtual Tensor to_inner(const Tensor& t) const;
  // Storage the wrapped backend made, as this backend hands it out (by
  // default the same object).
  virtual std::shared_ptr<BackendData> wrap_storage(
      std::shared_ptr<BackendData> inner, size_t nbytes);
  // Around every forwarded op: `inputs` are what it reads (null entries
  // allowed), `written` what it writes (its outputs; for optim the
  // parameter and its state). after() runs only when the op returned.
  virtual void before(Op op, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> written) {}
  virtual void after(Op op, std::span<Tensor* const> written) {}

  // to_inner of an optional tensor: an undefined tensor for null.
  Tensor to_inner_or_none(const Tensor* t) const {
    return t != nullptr ? to_inner(*t) : Tensor();
  }

  Backend& inner_;

 private:
  // before(), fn() (the call to the wrapped backend), after().
  template <class Fn>
  void call(Op op, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor*> written, Fn&& fn);
};

// The handle on t's bytes of the backend that owns them, through every
// forwarding backend around it (a collective writing device memory
// directly needs the device backend's own tensor).
Tensor innermost(const Tensor& t);

}  // namespace nascent
