#include "nascent/core/forwarding.h"

#include <utility>

namespace nascent {

template <class Fn>
void ForwardingBackend::call(Op op, std::initializer_list<const Tensor*> inputs,
                             std::initializer_list<Tensor*> written, Fn&& fn) {
  const std::span<const Tensor* const> in(inputs.begin(), inputs.size());
  const std::span<Tensor* const> out(written.begin(), written.size());
  before(op, in, out);
  fn();
  after(op, out);
}

Tensor ForwardingBackend::to_inner(const Tensor& t) const {
  return Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(), inner_,
                      t.data());
}

std::shared_ptr<BackendData> ForwardingBackend::wrap_storage(
    std::shared_ptr<BackendData> inner, size_t nbytes) {
  return inner;
}

std::shared_ptr<BackendData> ForwardingBackend::allocate(size_t nbytes) {
  return wrap_storage(inner_.allocate(nbytes), nbytes);
}

std::shared_ptr<BackendData> ForwardingBackend::upload(const void* host,
                                                       size_t nbytes) {
  return wrap_storage(inner_.upload(host, nbytes), nbytes);
}

std::shared_ptr<BackendData> ForwardingBackend::wrap(
    std::shared_ptr<const void> owner, const void* data, size_t nbytes) {
  return wrap_storage(inner_.wrap(std::move(owner), data, nbytes), nbytes);
}

HostBytes ForwardingBackend::materialize(const Tensor& t) {
  return inner_.materialize(to_inner(t));
}

void ForwardingBackend::release(Tensor& t) {
  Tensor in = to_inner(t);
  t = Tensor();
  inner_.release(in);
}

void ForwardingBackend::set_persistent(const Tensor& t, bool persistent) {
  inner_.set_persistent(to_inner(t), persistent);
}

bool ForwardingBackend::is_persistent(const Tensor& t) const {
  return inner_.is_persistent(to_inner(t));
}

void ForwardingBackend::trim() {
  inner_.trim();
}

MemoryStats ForwardingBackend::memory_stats() const {
  return inner_.memory_stats();
}

void ForwardingBackend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  call(op_of(op), {}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.create(op, a, b, o);
  });
}

void ForwardingBackend::random(RandomOp op, const RandomParams& p,
                               Tensor& out) {
  call(op_of(op), {}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.random(op, p, o);
  });
}

void ForwardingBackend::copy(const Tensor& src, Tensor& dst) {
  call(Op::copy, {&src}, {&dst}, [&] {
    Tensor d = to_inner(dst);
    inner_.copy(to_inner(src), d);
  });
}

void ForwardingBackend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                              Tensor& out) {
  call(op_of(op), {&x}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.unary(op, to_inner(x), p, o);
  });
}

void ForwardingBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                               Tensor& out) {
  call(op_of(op), {&a, &b}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.binary(op, to_inner(a), to_inner(b), o);
  });
}

void ForwardingBackend::where(const Tensor& cond, const Tensor& a,
                              const Tensor& b, Tensor& out) {
  call(Op::where, {&cond, &a, &b}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.where(to_inner(cond), to_inner(a), to_inner(b), o);
  });
}

void ForwardingBackend::reduce(ReduceOp op, const Tensor& x,
                               const std::vector<int>& axes,
                               const ReduceParams& p, Tensor& out) {
  call(op_of(op), {&x}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.reduce(op, to_inner(x), axes, p, o);
  });
}

void ForwardingBackend::scan(ScanOp op, const Tensor& x, int axis,
                             Tensor& out) {
  call(op_of(op), {&x}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.scan(op, to_inner(x), axis, o);
  });
}

void ForwardingBackend::matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  call(Op::matmul, {&a, &b}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.matmul(to_inner(a), to_inner(b), o);
  });
}

void ForwardingBackend::conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                               const Tensor* bias, const Conv2dParams& p,
                               Tensor& out) {
  call(op_of(op), {&a, &b, bias}, {&out}, [&] {
    Tensor o = to_inner(out), bi = to_inner_or_none(bias);
    inner_.conv2d(op, to_inner(a), to_inner(b), bias ? &bi : nullptr, p, o);
  });
}

void ForwardingBackend::pool2d(PoolOp op, const Tensor& x,
                               const Tensor* indices, const Pool2dParams& p,
                               Tensor& out, Tensor* out_indices) {
  call(op_of(op), {&x, indices}, {&out, out_indices}, [&] {
    Tensor o = to_inner(out), ii = to_inner_or_none(indices);
    Tensor oi = to_inner_or_none(out_indices);
    inner_.pool2d(op, to_inner(x), indices ? &ii : nullptr, p, o,
                  out_indices ? &oi : nullptr);
  });
}

void ForwardingBackend::softmax(SoftmaxOp op, const Tensor& x, int axis,
                                Tensor& out) {
  call(op_of(op), {&x}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.softmax(op, to_inner(x), axis, o);
  });
}

void ForwardingBackend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                             const Tensor* bias, double eps, Tensor& out,
                             Tensor* mean, Tensor* rstd) {
  call(op_of(op), {&x, weight, bias}, {&out, mean, rstd}, [&] {
    Tensor o = to_inner(out), w = to_inner_or_none(weight);
    Tensor b = to_inner_or_none(bias), m = to_inner_or_none(mean);
    Tensor r = to_inner_or_none(rstd);
    inner_.norm(op, to_inner(x), weight ? &w : nullptr, bias ? &b : nullptr,
                eps, o, mean ? &m : nullptr, rstd ? &r : nullptr);
  });
}

void ForwardingBackend::index(IndexOp op, const Tensor& x, int axis,
                              const Tensor& index, const Tensor* src,
                              Tensor& out) {
  call(op_of(op), {&x, &index, src}, {&out}, [&] {
    Tensor o = to_inner(out), s = to_inner_or_none(src);
    inner_.index(op, to_inner(x), axis, to_inner(index), src ? &s : nullptr, o);
  });
}

void ForwardingBackend::quant(QuantOp op, const Tensor* x,
                              std::span<const QuantArg> args) {
  std::vector<const Tensor*> inputs = {x};
  std::vector<Tensor*> written;
  for (const QuantArg& a : args) {
    inputs.push_back(a.w);
    written.push_back(a.out);
  }
  const Op o = op_of(op);
  before(o, inputs, written);
  std::vector<Tensor> ws, outs;
  std::vector<QuantArg> in_args;
  ws.reserve(args.size());
  outs.reserve(args.size());
  for (const QuantArg& a : args) {
    ws.push_back(to_inner_or_none(a.w));
    outs.push_back(to_inner(*a.out));
    in_args.push_back({a.type, a.w ? &ws.back() : nullptr, &outs.back()});
  }
  const Tensor xi = to_inner_or_none(x);
  inner_.quant(op, x ? &xi : nullptr, in_args);
  after(o, written);
}

int64_t ForwardingBackend::qmatmul_block_rows(QuantType type) const {
  return inner_.qmatmul_block_rows(type);
}

void ForwardingBackend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                              const Tensor& grad, Tensor* state0,
                              Tensor* state1) {
  call(op_of(op), {&grad}, {&param, state0, state1}, [&] {
    Tensor pi = to_inner(param), s0 = to_inner_or_none(state0);
    Tensor s1 = to_inner_or_none(state1);
    inner_.optim(op, p, pi, to_inner(grad), state0 ? &s0 : nullptr,
                 state1 ? &s1 : nullptr);
  });
}

void ForwardingBackend::rope(const Tensor& x, const Tensor& positions,
                             const Tensor* freq_factors, const RopeParams& p,
                             Tensor& out) {
  call(Op::rope, {&x, &positions, freq_factors}, {&out}, [&] {
    Tensor o = to_inner(out), f = to_inner_or_none(freq_factors);
    inner_.rope(to_inner(x), to_inner(positions), freq_factors ? &f : nullptr,
                p, o);
  });
}

void ForwardingBackend::attention(const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor* mask,
                                  const AttentionParams& p, Tensor& out) {
  call(Op::attention, {&q, &k, &v, mask}, {&out}, [&] {
    Tensor o = to_inner(out), m = to_inner_or_none(mask);
    inner_.attention(to_inner(q), to_inner(k), to_inner(v), mask ? &m : nullptr,
                     p, o);
  });
}

void ForwardingBackend::glu(GluOp op, const Tensor& gate, const Tensor& up,
                            Tensor& out) {
  call(op_of(op), {&gate, &up}, {&out}, [&] {
    Tensor o = to_inner(out);
    inner_.glu(op, to_inner(gate), to_inner(up), o);
  });
}

Tensor innermost(const Tensor& t) {
  Tensor out = t;
  while (auto* f = dynamic_cast<const ForwardingBackend*>(&out.backend())) {
    out = f->unwrapped(out);
  }
  return out;
}

}  // namespace nascent
