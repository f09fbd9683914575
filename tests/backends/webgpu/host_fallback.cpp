#include "host_fallback.h"

#include <cstring>
#include <map>
#include <vector>

namespace nascent::webgpu::testing {

namespace {

bool gpu_dtype(DType dt) {
  return dt == DType::f32 || dt == DType::i32 || dt == DType::u8 ||
         dt == DType::boolean;
}

// The whole storage of t as bytes.
Tensor bytes_of(const Tensor& t, Backend& backend) {
  const int64_t n = int64_t(t.data()->nbytes());
  return Tensor::make({n}, {1}, 0, DType::u8, backend, t.data());
}

}  // namespace

bool HostFallbackBackend::needs_cpu(
    Op op, std::initializer_list<const Tensor*> inputs,
    std::initializer_list<Tensor*> written) const {
  if (not_yet_.count(op) != 0) return true;
  const bool i64 = i64_ops_.count(op) != 0;
  auto on_gpu = [&](const Tensor* t) {
    return t == nullptr || !t->defined() || gpu_dtype(t->dtype()) ||
           (i64 && t->dtype() == DType::i64);
  };
  for (const Tensor* t : inputs) {
    if (!on_gpu(t)) return true;
  }
  for (const Tensor* t : written) {
    // argmax and argmin give i64, which the backend writes.
    const bool arg = op == Op::argmax || op == Op::argmin;
    if (!on_gpu(t) && !(arg && t->dtype() == DType::i64)) return true;
  }
  return false;
}

void HostFallbackBackend::run(Op op,
                              std::initializer_list<const Tensor*> inputs,
                              std::initializer_list<Tensor*> written,
                              const std::function<void()>& gpu,
                              const std::function<void(const Shadow&)>& cpu) {
  if (!needs_cpu(op, inputs, written)) {
    ++gpu_calls_[size_t(op)];
    gpu();
    return;
  }
  ++cpu_calls_[size_t(op)];
  // One CPU copy per storage, so views of one buffer stay one buffer.
  std::map<const BackendData*, std::shared_ptr<BackendData>> storage;
  std::map<const Tensor*, Tensor> shadows;
  auto shadow = [&](const Tensor* t) -> Tensor* {
    if (t == nullptr) return nullptr;
    auto it = shadows.find(t);
    if (it != shadows.end()) return &it->second;
    if (!t->defined()) return &(shadows[t] = Tensor());
    auto& s = storage[t->data().get()];
    if (s == nullptr) {
      s = cpu_.allocate(t->data()->nbytes());
      HostBytes host = gpu_.materialize(bytes_of(*t, gpu_));
      if (host.size > 0) {
        std::memcpy(static_cast<cpu::CpuData*>(s.get())->bytes(), host.data,
                    host.size);
      }
    }
    return &(shadows[t] = Tensor::make(t->shape(), t->strides(), t->offset(),
                                       t->dtype(), cpu_, s));
  };
  for (const Tensor* t : inputs) shadow(t);
  for (const Tensor* t : written) shadow(t);
  cpu(shadow);
  for (Tensor* t : written) {
    if (t == nullptr || !t->defined() || t->data()->nbytes() == 0) continue;
    const auto& s = storage[t->data().get()];
    gpu_.write_storage(*t->data(), static_cast<cpu::CpuData*>(s.get())->bytes(),
                       s->nbytes());
  }
}

void HostFallbackBackend::create(CreationOp op, Scalar a, Scalar b,
                                 Tensor& out) {
  run(
      op_of(op), {}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.create(op, a, b, o);
      },
      [&](const Shadow& s) { cpu_.create(op, a, b, *s(&out)); });
}

void HostFallbackBackend::random(RandomOp op, const RandomParams& p,
                                 Tensor& out) {
  run(
      op_of(op), {}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.random(op, p, o);
      },
      [&](const Shadow& s) { cpu_.random(op, p, *s(&out)); });
}

void HostFallbackBackend::copy(const Tensor& src, Tensor& dst) {
  run(
      Op::copy, {&src}, {&dst},
      [&] {
        Tensor d = to_inner(dst);
        gpu_.copy(to_inner(src), d);
      },
      [&](const Shadow& s) { cpu_.copy(*s(&src), *s(&dst)); });
}

void HostFallbackBackend::unary(UnaryOp op, const Tensor& x,
                                const UnaryParams& p, Tensor& out) {
  run(
      op_of(op), {&x}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.unary(op, to_inner(x), p, o);
      },
      [&](const Shadow& s) { cpu_.unary(op, *s(&x), p, *s(&out)); });
}

void HostFallbackBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                                 Tensor& out) {
  run(
      op_of(op), {&a, &b}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.binary(op, to_inner(a), to_inner(b), o);
      },
      [&](const Shadow& s) { cpu_.binary(op, *s(&a), *s(&b), *s(&out)); });
}

void HostFallbackBackend::where(const Tensor& cond, const Tensor& a,
                                const Tensor& b, Tensor& out) {
  run(
      Op::where, {&cond, &a, &b}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.where(to_inner(cond), to_inner(a), to_inner(b), o);
      },
      [&](const Shadow& s) {
        cpu_.where(*s(&cond), *s(&a), *s(&b), *s(&out));
      });
}

void HostFallbackBackend::reduce(ReduceOp op, const Tensor& x,
                                 const std::vector<int>& axes,
                                 const ReduceParams& p, Tensor& out) {
  run(
      op_of(op), {&x}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.reduce(op, to_inner(x), axes, p, o);
      },
      [&](const Shadow& s) { cpu_.reduce(op, *s(&x), axes, p, *s(&out)); });
}

void HostFallbackBackend::scan(ScanOp op, const Tensor& x, int axis,
                               Tensor& out) {
  run(
      op_of(op), {&x}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.scan(op, to_inner(x), axis, o);
      },
      [&](const Shadow& s) { cpu_.scan(op, *s(&x), axis, *s(&out)); });
}

void HostFallbackBackend::matmul(const Tensor& a, const Tensor& b,
                                 Tensor& out) {
  run(
      Op::matmul, {&a, &b}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.matmul(to_inner(a), to_inner(b), o);
      },
      [&](const Shadow& s) { cpu_.matmul(*s(&a), *s(&b), *s(&out)); });
}

void HostFallbackBackend::conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                                 const Tensor* bias, const Conv2dParams& p,
                                 Tensor& out) {
  run(
      op_of(op), {&a, &b, bias}, {&out},
      [&] {
        Tensor o = to_inner(out), bi = to_inner_or_none(bias);
        gpu_.conv2d(op, to_inner(a), to_inner(b), bias ? &bi : nullptr, p, o);
      },
      [&](const Shadow& s) {
        cpu_.conv2d(op, *s(&a), *s(&b), s(bias), p, *s(&out));
      });
}

void HostFallbackBackend::pool2d(PoolOp op, const Tensor& x,
                                 const Tensor* indices, const Pool2dParams& p,
                                 Tensor& out, Tensor* out_indices) {
  run(
      op_of(op), {&x, indices}, {&out, out_indices},
      [&] {
        Tensor o = to_inner(out), i = to_inner_or_none(indices);
        Tensor oi = to_inner_or_none(out_indices);
        gpu_.pool2d(op, to_inner(x), indices ? &i : nullptr, p, o,
                    out_indices ? &oi : nullptr);
      },
      [&](const Shadow& s) {
        cpu_.pool2d(op, *s(&x), s(indices), p, *s(&out), s(out_indices));
      });
}

void HostFallbackBackend::softmax(SoftmaxOp op, const Tensor& x, int axis,
                                  Tensor& out) {
  run(
      op_of(op), {&x}, {&out},
      [&] {
        Tensor o = to_inner(out);
        gpu_.softmax(op, to_inner(x), axis, o);
      },
      [&](const Shadow& s) { cpu_.softmax(op, *s(&x), axis, *s(&out)); });
}

void HostFallbackBackend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                               const Tensor* bias, double eps, Tensor& out,
                               Tensor* mean, Tensor* rstd) {
  run(
      op_of(op), {&x, weight, bias}, {&out, mean, rstd},
      [&] {
        Tensor o = to_inner(out), w = to_inner_or_none(weight);
        Tensor b = to_inner_or_none(bias), m = to_inner_or_none(mean);
        Tensor r = to_inner_or_none(rstd);
        gpu_.norm(op, to_inner(x), weight ? &w : nullptr, bias ? &b : nullptr,
                  eps, o, mean ? &m : nullptr, rstd ? &r : nullptr);
      },
      [&](const Shadow& s) {
        cpu_.norm(op, *s(&x), s(weight), s(bias), eps, *s(&out), s(mean),
                  s(rstd));
      });
}

void HostFallbackBackend::index(IndexOp op, const Tensor& x, int axis,
                                const Tensor& index, const Tensor* src,
                                Tensor& out) {
  run(
      op_of(op), {&x, &index, src}, {&out},
      [&] {
        Tensor o = to_inner(out), sr = to_inner_or_none(src);
        gpu_.index(op, to_inner(x), axis, to_inner(index), src ? &sr : nullptr,
                   o);
      },
      [&](const Shadow& s) {
        cpu_.index(op, *s(&x), axis, *s(&index), s(src), *s(&out));
      });
}

void HostFallbackBackend::quant(QuantOp op, const Tensor* x,
                                std::span<const QuantArg> args) {
  // The cases pass at most three weights (q, k and v).
  auto w = [&](size_t i) { return i < args.size() ? args[i].w : nullptr; };
  auto o = [&](size_t i) { return i < args.size() ? args[i].out : nullptr; };
  run(
      op_of(op), {x, w(0), w(1), w(2)}, {o(0), o(1), o(2)},
      [&] {
        std::vector<Tensor> keep;
        keep.reserve(2 * args.size() + 1);
        std::vector<QuantArg> a(args.begin(), args.end());
        for (QuantArg& q : a) {
          if (q.w != nullptr) q.w = &keep.emplace_back(to_inner(*q.w));
          q.out = &keep.emplace_back(to_inner(*q.out));
        }
        Tensor xi = to_inner_or_none(x);
        gpu_.quant(op, x != nullptr ? &xi : nullptr, a);
      },
      [&](const Shadow& s) {
        std::vector<QuantArg> a(args.begin(), args.end());
        for (QuantArg& q : a) {
          q.w = s(q.w);
          q.out = s(q.out);
        }
        cpu_.quant(op, s(x), a);
      });
}

void HostFallbackBackend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                                const Tensor& grad, Tensor* state0,
                                Tensor* state1) {
  run(
      op_of(op), {&param, &grad, state0, state1}, {&param, state0, state1},
      [&] {
        // The backend's default composes the update from this backend's
        // element-wise ops, each routed here.
        nascent::Backend::optim(op, p, param, grad, state0, state1);
      },
      [&](const Shadow& s) {
        cpu_.optim(op, p, *s(&param), *s(&grad), s(state0), s(state1));
      });
}

void HostFallbackBackend::rope(const Tensor& x, const Tensor& positions,
                               const Tensor* freq_factors, const RopeParams& p,
                               Tensor& out) {
  run(
      Op::rope, {&x, &positions, freq_factors}, {&out},
      [&] { nascent::Backend::rope(x, positions, freq_factors, p, out); },
      [&](const Shadow& s) {
        cpu_.rope(*s(&x), *s(&positions), s(freq_factors), p, *s(&out));
      });
}

void HostFallbackBackend::attention(const Tensor& q, const Tensor& k,
                                    const Tensor& v, const Tensor* mask,
                                    const AttentionParams& p, Tensor& out) {
  run(
      Op::attention, {&q, &k, &v, mask}, {&out},
      [&] { nascent::Backend::attention(q, k, v, mask, p, out); },
      [&](const Shadow& s) {
        cpu_.attention(*s(&q), *s(&k), *s(&v), s(mask), p, *s(&out));
      });
}

void HostFallbackBackend::glu(GluOp op, const Tensor& gate, const Tensor& up,
                              Tensor& out) {
  run(
      op_of(op), {&gate, &up}, {&out},
      [&] { nascent::Backend::glu(op, gate, up, out); },
      [&](const Shadow& s) { cpu_.glu(op, *s(&gate), *s(&up), *s(&out)); });
}

}  // namespace nascent::webgpu::testing
