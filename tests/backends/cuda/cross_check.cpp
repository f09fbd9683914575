#include "cross_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conformance/reference.h"

namespace nascent::cuda::testing {

namespace {

bool is_exact_unary(UnaryOp op) {
  return traits(op).exact;
}

}  // namespace

Tensor CrossCheckBackend::shadow(const Tensor& t) {
  const auto& data = t.data();
  HostBytes host = gpu_.materialize(on_gpu(t));
  auto storage = cpu_.allocate(data->nbytes());
  Tensor view = Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(),
                             cpu_, storage);
  if (host.size > 0) {
    // materialize copies up to the end of the view; that is all a view
    // reads, and the rest of the storage is never compared.
    std::memcpy(static_cast<cpu::CpuData*>(storage.get())->bytes(), host.data,
                host.size);
  }
  return view;
}

Tensor CrossCheckBackend::on_gpu(const Tensor& t) {
  return Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(), gpu_,
                      t.data());
}

void CrossCheckBackend::compare(const char* op, const Tensor& gpu,
                                const Tensor& cpu, Tolerance tol,
                                const std::vector<double>* extra) {
  ++compared_;
  const Tensor g = on_gpu(gpu);
  const std::string what =
      fmt::format("cross-check {} on {}: cuda vs cpu", op, g.to_string());
  if (!is_floating(g.dtype())) {
    const std::vector<int64_t> a = g.to_vector<int64_t>();
    const std::vector<int64_t> b = cpu.to_vector<int64_t>();
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i] && ++bad <= 3) {
        ADD_FAILURE() << what << ": element " << i << " is " << a[i]
                      << " on cuda, " << b[i] << " on cpu";
      }
    }
    if (bad > 3) ADD_FAILURE() << what << ": " << bad << " elements differ";
    return;
  }
  const std::vector<double> a = g.to_vector<double>();
  const std::vector<double> b = cpu.to_vector<double>();
  double rtol = 0, atol = 0, scale = 0;
  if (tol != Tolerance::exact) {
    rtol = 4 * conformance::default_rtol(g.dtype());
    atol = 4 * conformance::default_atol(g.dtype());
  }
  if (tol == Tolerance::sums) {
    for (double v : b) {
      if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    }
  }
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (std::isnan(b[i]) || std::isinf(b[i])) {
      ok = std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i];
    } else {
      ok = std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]) +
                                         rtol * scale +
                                         (extra != nullptr ? (*extra)[i] : 0.0);
    }
    if (!ok && ++bad <= 3) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i]
                    << " on cuda, " << b[i] << " on cpu";
    }
  }
  if (bad > 3) ADD_FAILURE() << what << ": " << bad << " elements differ";
}

void CrossCheckBackend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  Tensor c = shadow(out);
  gpu_.create(op, a, b, out);
  cpu_.create(op, a, b, c);
  compare(nascent::name(op), out, c, Tolerance::exact);
}

void CrossCheckBackend::random(RandomOp op, const RandomParams& p,
                               Tensor& out) {
  Tensor c = shadow(out);
  gpu_.random(op, p, out);
  cpu_.random(op, p, c);
  compare(nascent::name(op), out, c,
          op == RandomOp::normal ? Tolerance::elementwise : Tolerance::exact);
}

void CrossCheckBackend::copy(const Tensor& src, Tensor& dst) {
  Tensor s = shadow(src), d = shadow(dst);
  gpu_.copy(src, dst);
  cpu_.copy(s, d);
  compare("copy", dst, d, Tolerance::exact);
}

void CrossCheckBackend::unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
                              Tensor& out) {
  Tensor cx = shadow(x), co = shadow(out);
  gpu_.unary(op, x, p, out);
  cpu_.unary(op, cx, p, co);
  compare(nascent::name(op), out, co,
          is_exact_unary(op) ? Tolerance::exact : Tolerance::elementwise);
}

void CrossCheckBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                               Tensor& out) {
  Tensor ca = shadow(a), cb = shadow(b), co = shadow(out);
  gpu_.binary(op, a, b, out);
  cpu_.binary(op, ca, cb, co);
  compare(nascent::name(op), out, co,
          op == BinaryOp::pow ? Tolerance::elementwise : Tolerance::exact);
}

void CrossCheckBackend::where(const Tensor& cond, const Tensor& a,
                              const Tensor& b, Tensor& out) {
  Tensor cc = shadow(cond), ca = shadow(a), cb = shadow(b), co = shadow(out);
  gpu_.where(cond, a, b, out);
  cpu_.where(cc, ca, cb, co);
  compare("where", out, co, Tolerance::exact);
}

void CrossCheckBackend::reduce(ReduceOp op, const Tensor& x,
                               const std::vector<int>& axes,
                               const ReduceParams& p, Tensor& out) {
  Tensor cx = shadow(x), co = shadow(out);
  gpu_.reduce(op, x, axes, p, out);
  cpu_.reduce(op, cx, axes, p, co);
  const bool exact = op == ReduceOp::max || op == ReduceOp::min ||
                     op == ReduceOp::argmax || op == ReduceOp::argmin ||
                     !is_floating(x.dtype());
  compare(nascent::name(op), out, co,
          exact ? Tolerance::exact : Tolerance::sums);
}

void CrossCheckBackend::scan(ScanOp op, const Tensor& x, int axis,
                             Tensor& out) {
  Tensor cx = shadow(x), co = shadow(out);
  gpu_.scan(op, x, axis, out);
  cpu_.scan(op, cx, axis, co);
  compare(nascent::name(op), out, co,
          is_floating(x.dtype()) ? Tolerance::sums : Tolerance::exact);
}

void CrossCheckBackend::matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  Tensor ca = shadow(a), cb = shadow(b), co = shadow(out);
  gpu_.matmul(a, b, out);
  cpu_.matmul(ca, cb, co);
  compare("matmul", out, co, Tolerance::sums);
}

void CrossCheckBackend::conv2d(ConvOp op, const Tensor& a, const Tensor& b,
                               const Tensor* bias, const Conv2dParams& p,
                               Tensor& out) {
  Tensor ca = shadow(a), cb = shadow(b), co = shadow(out);
  Tensor cbias = bias != nullptr ? shadow(*bias) : Tensor();
  gpu_.conv2d(op, a, b, bias, p, out);
  cpu_.conv2d(op, ca, cb, bias != nullptr ? &cbias : nullptr, p, co);
  compare(nascent::name(op), out, co, Tolerance::sums);
}

void CrossCheckBackend::pool2d(PoolOp op, const Tensor& x,
                               const Tensor* indices, const Pool2dParams& p,
                               Tensor& out, Tensor* out_indices) {
  Tensor cx = shadow(x), co = shadow(out);
  Tensor ci = indices != nullptr ? shadow(*indices) : Tensor();
  Tensor coi = out_indices != nullptr ? shadow(*out_indices) : Tensor();
  gpu_.pool2d(op, x, indices, p, out, out_indices);
  cpu_.pool2d(op, cx, indices != nullptr ? &ci : nullptr, p, co,
              out_indices != nullptr ? &coi : nullptr);
  const bool max =
      op == PoolOp::max_pool2d || op == PoolOp::max_pool2d_backward;
  compare(nascent::name(op), out, co,
          max ? Tolerance::exact : Tolerance::elementwise);
  if (out_indices != nullptr) {
    compare(nascent::name(op), *out_indices, coi, Tolerance::exact);
  }
}

void CrossCheckBackend::softmax(SoftmaxOp op, const Tensor& x, int axis,
                                Tensor& out) {
  Tensor cx = shadow(x), co = shadow(out);
  gpu_.softmax(op, x, axis, out);
  cpu_.softmax(op, cx, axis, co);
  compare(nascent::name(op), out, co, Tolerance::sums);
}

void CrossCheckBackend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                             const Tensor* bias, double eps, Tensor& out,
                             Tensor* mean, Tensor* rstd) {
  Tensor cx = shadow(x), co = shadow(out);
  Tensor cw = weight != nullptr ? shadow(*weight) : Tensor();
  Tensor cb = bias != nullptr ? shadow(*bias) : Tensor();
  Tensor cm = mean != nullptr ? shadow(*mean) : Tensor();
  Tensor cr = rstd != nullptr ? shadow(*rstd) : Tensor();
  gpu_.norm(op, x, weight, bias, eps, out, mean, rstd);
  cpu_.norm(op, cx, weight != nullptr ? &cw : nullptr,
            bias != nullptr ? &cb : nullptr, eps, co,
            mean != nullptr ? &cm : nullptr, rstd != nullptr ? &cr : nullptr);
  compare(nascent::name(op), out, co, Tolerance::sums);
  if (mean != nullptr && op == NormOp::layer_norm) {
    compare(nascent::name(op), *mean, cm, Tolerance::sums);
  }
  if (rstd != nullptr) compare(nascent::name(op), *rstd, cr, Tolerance::sums);
}

void CrossCheckBackend::index(IndexOp op, const Tensor& x, int axis,
                              const Tensor& index, const Tensor* src,
                              Tensor& out) {
  Tensor cx = shadow(x), ci = shadow(index), co = shadow(out);
  Tensor cs = src != nullptr ? shadow(*src) : Tensor();
  gpu_.index(op, x, axis, index, src, out);
  cpu_.index(op, cx, axis, ci, src != nullptr ? &cs : nullptr, co);
  compare(nascent::name(op), out, co, Tolerance::exact);
}

void CrossCheckBackend::quant(QuantOp op, const Tensor* x,
                              std::span<const QuantArg> args) {
  if (op != QuantOp::qmatmul) {
    const QuantArg& a = args[0];
    Tensor cw = a.w != nullptr ? shadow(*a.w) : Tensor(), co = shadow(*a.out);
    Tensor cx = x != nullptr ? shadow(*x) : Tensor();
    const QuantArg c{a.type, a.w != nullptr ? &cw : nullptr, &co};
    gpu_.quant(op, x, args);
    cpu_.quant(op, x != nullptr ? &cx : nullptr,
               std::span<const QuantArg>(&c, 1));
    compare(nascent::name(op), *a.out, co, Tolerance::exact);
    return;
  }
  // The CPU's reference: each W decoded to f32 [N, K], then x @ W^T.
  gpu_.quant(op, x, args);
  Tensor cx = shadow(*x);
  for (const QuantArg& a : args) {
    const int64_t n = a.w->shape(0), k = x->shape(1);
    Tensor cw = shadow(*a.w), co = shadow(*a.out);
    Tensor wf = Tensor::empty({n, k}, DType::f32, cpu_);
    const QuantArg decode{a.type, &cw, &wf};
    cpu_.quant(QuantOp::dequantize, nullptr,
               std::span<const QuantArg>(&decode, 1));
    cpu_.matmul(cx, wf.transpose(0, 1), co);
    if (block_size(a.type) == 1) {
      compare(nascent::name(op), *a.out, co, Tolerance::sums);
      continue;
    }
    // The block types: within the error of x rounded to 8 bits per block,
    // which the contract allows (the CPU's own qmatmul rounds x so); the
    // GPU's f16 products of prompts round far less.
    const std::vector<double> xv = cx.to_vector<double>();
    const std::vector<float> wv = wf.to_vector<float>();
    const int64_t m = x->shape(0);
    std::vector<double> bound(size_t(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        bound[size_t(i * n + j)] =
            1.001 * conformance::quantized_x_error(
                        xv.data() + i * k, wv.data() + j * k, k, a.type);
      }
    }
    compare(nascent::name(op), *a.out, co, Tolerance::sums, &bound);
  }
}

void CrossCheckBackend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                              const Tensor& grad, Tensor* state0,
                              Tensor* state1) {
  const bool half = param.dtype() == DType::f16 || param.dtype() == DType::bf16;
  auto host = [&](const Tensor& t) {
    Tensor c = shadow(t);
    return (half ? c.cast(DType::f32) : c).contiguous();
  };
  Tensor cp = host(param), cg = host(grad);
  Tensor c0 = state0 != nullptr ? host(*state0) : Tensor();
  Tensor c1 = state1 != nullptr ? host(*state1) : Tensor();
  gpu_.optim(op, p, param, grad, state0, state1);
  cpu_.optim(op, p, cp, cg, state0 != nullptr ? &c0 : nullptr,
             state1 != nullptr ? &c1 : nullptr);
  compare(nascent::name(op), param, cp, Tolerance::elementwise);
  if (state0 != nullptr) {
    compare(nascent::name(op), *state0, c0, Tolerance::elementwise);
  }
  if (state1 != nullptr) {
    compare(nascent::name(op), *state1, c1, Tolerance::elementwise);
  }
}

void CrossCheckBackend::rope(const Tensor& x, const Tensor& positions,
                             const Tensor* freq_factors, const RopeParams& p,
                             Tensor& out) {
  Tensor cx = shadow(x), cp = shadow(positions), co = shadow(out);
  Tensor cf = freq_factors != nullptr ? shadow(*freq_factors) : Tensor();
  // Bound to the GPU backend itself, as a forwarding backend passes them:
  // its composed defaults make tensors of their own there.
  Tensor go = on_gpu(out);
  Tensor gf = freq_factors != nullptr ? on_gpu(*freq_factors) : Tensor();
  gpu_.rope(on_gpu(x), on_gpu(positions),
            freq_factors != nullptr ? &gf : nullptr, p, go);
  cpu_.rope(cx, cp, freq_factors != nullptr ? &cf : nullptr, p, co);
  compare("rope", out, co, Tolerance::elementwise);
}

void CrossCheckBackend::attention(const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor* mask,
                                  const AttentionParams& p, Tensor& out) {
  Tensor cq = shadow(q), ck = shadow(k), cv = shadow(v), co = shadow(out);
  Tensor cm = mask != nullptr ? shadow(*mask) : Tensor();
  Tensor go = on_gpu(out);
  Tensor gm = mask != nullptr ? on_gpu(*mask) : Tensor();
  gpu_.attention(on_gpu(q), on_gpu(k), on_gpu(v),
                 mask != nullptr ? &gm : nullptr, p, go);
  cpu_.attention(cq, ck, cv, mask != nullptr ? &cm : nullptr, p, co);
  compare("attention", out, co, Tolerance::sums);
}

void CrossCheckBackend::glu(GluOp op, const Tensor& gate, const Tensor& up,
                            Tensor& out) {
  Tensor cg = shadow(gate), cu = shadow(up), co = shadow(out);
  Tensor go = on_gpu(out);
  gpu_.glu(op, on_gpu(gate), on_gpu(up), go);
  cpu_.glu(op, cg, cu, co);
  compare(nascent::name(op), out, co, Tolerance::elementwise);
}

}  // namespace nascent::cuda::testing
