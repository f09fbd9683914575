// softmax and log_softmax along one axis of a contiguous x: one workgroup
// of 64 threads per row (outer, inner) of the axis; the max, then the sum
// of exp(x - max), each reduced as a tree in workgroup memory.
#include <fmt/format.h>

#include "nascent/backends/webgpu/context.h"

namespace nascent::webgpu {

namespace {

const char* kSoftmaxBody = R"(
var<workgroup> sf: array<f32, 64>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let rows = P[0];
  let L = P[1];
  let inner = P[2];
  let row = w.x + w.y * n.x;
  if (row >= rows) { return; }
  let base = (row / inner) * L * inner + row % inner;
  var m = bitcast<f32>(0xff800000u);
  for (var l = t; l < L; l = l + WG) {
    let v = load_X(base + l * inner);
    if (is_nan(v) || v > m) { m = v; }
    if (is_nan(m)) { break; }
  }
  sf[t] = m;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (t < k) {
      let a = sf[t];
      let b = sf[t + k];
      if (!is_nan(a) && (is_nan(b) || b > a)) { sf[t] = b; }
    }
    workgroupBarrier();
  }
  let mx = sf[0];
  workgroupBarrier();
  var s = 0.0;
  for (var l = t; l < L; l = l + WG) { s = s + exp(load_X(base + l * inner) - mx); }
  sf[t] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (t < k) { sf[t] = sf[t] + sf[t + k]; }
    workgroupBarrier();
  }
  let total = sf[0];
  let lt = log(total);
  for (var l = t; l < L; l = l + WG) {
    let x = load_X(base + l * inner);
    store_O(base + l * inner, RESULT);
  }
}
)";

}  // namespace

void Backend::softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  check_dtype(ctx, op_name, x);
  check_dtype(ctx, op_name, out);
  if (x.dtype() != DType::f32) {
    throw DTypeError(fmt::format("webgpu backend: {} takes f32, got {}",
                                 op_name, x.to_string()));
  }
  if (x.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  const int64_t len = x.ndim() == 0 ? 1 : x.shape()[size_t(axis)];
  const uint32_t words[3] = {uint32_t(outer * inner), uint32_t(len),
                             uint32_t(inner)};
  std::string body = kSoftmaxBody;
  const std::string result =
      op == SoftmaxOp::softmax ? "exp(x - mx) / total" : "(x - mx) - lt";
  body.replace(body.find("RESULT"), 6, result);
  std::string src = prelude(64);
  src += declare("O", 1, DType::f32, true);
  src += declare("X", 2, DType::f32, false);
  src += body;
  WGPUComputePipeline pipe =
      ctx.pipeline(std::string("softmax_") + op_name, src, op_name);
  const WGPUBuffer buffers[] = {buffer_of(out), buffer_of(x)};
  // x is contiguous: its offset is folded into the binding's use below.
  if (x.offset() != 0 || out.offset() != 0) {
    Tensor xc = Tensor::empty(x.shape(), x.dtype(), *this);
    copy(x, xc);
    Tensor oc = Tensor::empty(out.shape(), out.dtype(), *this);
    softmax(op, xc, axis, oc);
    copy(oc, out);
    return;
  }
  ctx.dispatch(op_name, pipe, words, buffers, uint64_t(outer * inner));
}

}  // namespace nascent::webgpu
