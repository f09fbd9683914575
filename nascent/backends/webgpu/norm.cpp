// layer_norm and rms_norm over the rows of a contiguous [rows, cols]: one
// workgroup of 64 threads per row, compensated sums reduced as a tree.
#include <cstring>

#include <fmt/format.h>

#include "nascent/backends/webgpu/context.h"

namespace nascent::webgpu {

void Backend::norm(NormOp op, const Tensor& x, const Tensor* weight,
                   const Tensor* bias, double eps, Tensor& out, Tensor* mean,
                   Tensor* rstd) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  for (const Tensor* t :
       {&x, weight, bias, static_cast<const Tensor*>(&out),
        static_cast<const Tensor*>(mean), static_cast<const Tensor*>(rstd)}) {
    if (t == nullptr) continue;
    check_dtype(ctx, op_name, *t);
    if (t->dtype() != DType::f32) {
      throw DTypeError(fmt::format("webgpu backend: {} takes f32, got {}",
                                   op_name, t->to_string()));
    }
  }
  const int64_t rows = x.shape(0), cols = x.shape(1);
  if (rows == 0) return;
  const bool layer = op == NormOp::layer_norm;
  // Bindings: out, x, then whichever of weight, bias, mean, rstd are given;
  // the tensors' offsets (elements) go in the parameters.
  std::vector<WGPUBuffer> buffers = {buffer_of(out), buffer_of(x)};
  std::vector<uint32_t> words = {uint32_t(rows), uint32_t(cols),
                                 uint32_t(out.offset()), uint32_t(x.offset())};
  std::string decl =
      declare("O", 1, DType::f32, true) + declare("X", 2, DType::f32, false);
  std::string key = std::string("norm_") + op_name;
  const char* names[] = {"W", "Bi", "Mean", "Rstd"};
  const Tensor* extra[] = {weight, bias, mean, rstd};
  for (int k = 0; k < 4; ++k) {
    const Tensor* t = extra[k];
    words.push_back(t != nullptr ? uint32_t(t->offset()) : 0u);
    if (t == nullptr) continue;
    decl += declare(names[k], int(buffers.size()) + 1, DType::f32, k >= 2);
    buffers.push_back(buffer_of(*t));
    key += std::string(":") + names[k];
  }
  const float e = float(eps);
  uint32_t eps_word;
  std::memcpy(&eps_word, &e, 4);
  words.push_back(eps_word);

  std::string src = prelude(64);
  src += decl;
  src += R"(
var<workgroup> sf: array<f32, 64>;
fn row_sum(t: u32, v: f32) -> f32 {
  sf[t] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (t < k) { sf[t] = sf[t] + sf[t + k]; }
    workgroupBarrier();
  }
  let r = sf[0];
  workgroupBarrier();
  return r;
}
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let row = w.x + w.y * n.x;
  if (row >= P[0]) { return; }
  let cols = P[1];
  let ob = P[2] + row * cols;
  let xb = P[3] + row * cols;
  let eps = bitcast<f32>(P[8]);
)";
  if (layer) {
    // The mean as x0 + mean(x - x0), then the biased variance about it.
    src += R"(
  let x0 = load_X(xb);
  var s = 0.0;
  var c = 0.0;
  for (var j = t; j < cols; j = j + WG) {
    let y = (load_X(xb + j) - x0) - c;
    let q = s + y;
    c = select(0.0, (q - s) - y, finite(q));
    s = q;
  }
  let mu = x0 + row_sum(t, s) / f32(cols);
  s = 0.0;
  c = 0.0;
  for (var j = t; j < cols; j = j + WG) {
    let d = load_X(xb + j) - mu;
    let y = d * d - c;
    let q = s + y;
    c = select(0.0, (q - s) - y, finite(q));
    s = q;
  }
  let r = 1.0 / sqrt(row_sum(t, s) / f32(cols) + eps);
)";
  } else {
    src += R"(
  let mu = 0.0;
  var s = 0.0;
  var c = 0.0;
  for (var j = t; j < cols; j = j + WG) {
    let v = load_X(xb + j);
    let y = v * v - c;
    let q = s + y;
    c = select(0.0, (q - s) - y, finite(q));
    s = q;
  }
  let r = 1.0 / sqrt(row_sum(t, s) / f32(cols) + eps);
)";
  }
  src += "  for (var j = t; j < cols; j = j + WG) {\n";
  src += "    var v = (load_X(xb + j) - mu) * r;\n";
  if (weight != nullptr) src += "    v = v * load_W(P[4] + j);\n";
  if (bias != nullptr) src += "    v = v + load_Bi(P[5] + j);\n";
  src += "    store_O(ob + j, v);\n  }\n";
  src += "  if (t == 0u) {\n";
  if (mean != nullptr) src += "    store_Mean(P[6] + row, mu);\n";
  if (rstd != nullptr) src += "    store_Rstd(P[7] + row, r);\n";
  src += "  }\n}\n";
  WGPUComputePipeline pipe = ctx.pipeline(key, src, op_name);
  ctx.dispatch(op_name, pipe, words, buffers, uint64_t(rows));
}

}  // namespace nascent::webgpu
