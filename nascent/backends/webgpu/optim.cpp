// sgd_update and adam_update: one pass that reads the parameter, its
// gradient and its state once and writes them in place (the composed rule
// would be five to seven element-wise passes). The rules and the order of
// the f32 operations are the CPU backend's (backends/cpu/optim.cpp), so the
// two agree to the rounding. The front-end makes every array contiguous.
#include <cmath>

#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// Parameters: [n, offsets of param, grad, state0, state1, flags, then the
// constants as f32 words]. Flags: 1 weight decay, 2 momentum, 4 first
// step, 8 Nesterov (sgd); 1 weight decay, 16 decoupled (adam).
const char* kOptimBody = R"(
fn c(k: u32) -> f32 { return pf(6u + k); }
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * WG;
  if (i >= P[0]) { return; }
  let ip = P[1] + i;
  let ig = P[2] + i;
  let flags = P[5];
  var g = G[ig];
  var w = W[ip];
  if (KIND == 0u) {
    // c: lr, wd, momentum, 1 - dampening
    if ((flags & 1u) != 0u) { g = g + c(1u) * w; }
    if ((flags & 2u) != 0u) {
      let is = P[3] + i;
      var b = g;
      if ((flags & 4u) == 0u) { b = c(2u) * S0[is] + c(3u) * g; }
      S0[is] = b;
      g = select(b, g + c(2u) * b, (flags & 8u) != 0u);
    }
    W[ip] = w - c(0u) * g;
  } else {
    // c: b1, b2, eps, wd, shrink, step size, root2
    if ((flags & 1u) != 0u) {
      if ((flags & 16u) != 0u) { w = w * c(4u); } else { g = g + c(3u) * w; }
    }
    let i0 = P[3] + i;
    let i1 = P[4] + i;
    let m = c(0u) * S0[i0] + (1.0 - c(0u)) * g;
    let v = c(1u) * S1[i1] + (1.0 - c(1u)) * g * g;
    S0[i0] = m;
    S1[i1] = v;
    W[ip] = w - c(5u) * m / (sqrt(v) / c(6u) + c(2u));
  }
}
)";

}  // namespace

void Backend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                    const Tensor& grad, Tensor* state0, Tensor* state1) {
  const char* op_name = nascent::name(op);
  const Tensor* all[] = {&param, &grad, state0, state1};
  for (const Tensor* t : all) {
    if (t != nullptr) check_dtype(*ctx_, op_name, *t);
  }
  const int64_t n = param.numel();
  if (n == 0) return;
  const bool adam = op == OptimOp::adam_update;
  const bool momentum = !adam && state0 != nullptr && p.momentum != 0.0;
  std::vector<uint32_t> words = {
      uint32_t(n),
      uint32_t(param.offset()),
      uint32_t(grad.offset()),
      uint32_t(state0 != nullptr ? state0->offset() : 0),
      uint32_t(state1 != nullptr ? state1->offset() : 0),
      0};
  uint32_t& flags = words[5];
  if (p.weight_decay != 0.0) flags |= 1;
  if (adam) {
    if (p.decoupled) flags |= 16;
    // As the CPU backend: the bias corrections in f64, rounded once.
    for (double v :
         {p.beta1, p.beta2, p.eps, p.weight_decay, 1.0 - p.lr * p.weight_decay,
          p.lr / (1.0 - std::pow(p.beta1, double(p.step))),
          std::sqrt(1.0 - std::pow(p.beta2, double(p.step)))}) {
      words.push_back(f32_word(v));
    }
  } else {
    if (momentum) flags |= 2 | (p.first_step ? 4 : 0) | (p.nesterov ? 8 : 0);
    for (double v : {p.lr, p.weight_decay, p.momentum, 1.0 - p.dampening}) {
      words.push_back(f32_word(v));
    }
  }
  // Unused state bindings take the parameter's buffer (never touched).
  std::vector<WGPUBuffer> buffers = {
      buffer_of(param), buffer_of(grad),
      adam || momentum ? buffer_of(*state0) : buffer_of(param)};
  if (adam) buffers.push_back(buffer_of(*state1));
  std::string src = prelude(kGroup);
  src += fmt::format("const KIND: u32 = {}u;\n", adam ? 1 : 0);
  src +=
      "@group(0) @binding(1) var<storage, read_write> W: array<f32>;\n"
      "@group(0) @binding(2) var<storage, read_write> G: array<f32>;\n"
      "@group(0) @binding(3) var<storage, read_write> S0: array<f32>;\n";
  if (adam) {
    src += "@group(0) @binding(4) var<storage, read_write> S1: array<f32>;\n";
  } else {
    // sgd binds three buffers; S1 is never reached.
    src += "var<private> S1: array<f32, 1>;\n";
  }
  src += kOptimBody;
  WGPUComputePipeline pipe =
      ctx_->pipeline(adam ? "optim_adam" : "optim_sgd", src, op_name);
  ctx_->dispatch(op_name, pipe, words, buffers, groups_for(n));
}

}  // namespace nascent::webgpu
