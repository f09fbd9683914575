// cumsum: one thread per line (every position of the other axes) walks the
// axis in order, so the sums come out in the CPU backend's order. f32 sums
// carry their rounding error along (two_sum), close to the CPU's double
// accumulation; integers and bool sum into wrapping i64 (int64.cpp).
#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// Extra words: the axis length, x's and the output's strides along it.
const char* kScanBody = R"(
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * WG;
  if (i >= numel()) { return; }
  let ob = i32(elem(0u, i));
  let xb = i32(elem(1u, i));
  var s = ZERO;
  var c = 0.0;
  for (var l = 0u; l < P[E]; l = l + 1u) {
    let v = load_X(u32(xb + i32(l) * pi(E + 1u)));
    STEP
  }
}
)";

}  // namespace

void Backend::scan(ScanOp op, const Tensor& x, int axis, Tensor& out) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  check_dtype(ctx, op_name, x, true);
  check_dtype(ctx, op_name, out, true);
  if (out.numel() == 0) return;
  if (x.ndim() == 0) {
    // A 0-d tensor scans as one element of one line.
    const Tensor x1 = x.as_strided({1}, {1}, x.offset());
    Tensor o1 = out.as_strided({1}, {1}, out.offset());
    return scan(op, x1, 0, o1);
  }
  Shape lines = x.shape();
  lines[size_t(axis)] = 1;
  const Tensor xl = x.as_strided(lines, x.strides(), x.offset());
  const Tensor ol = out.as_strided(lines, out.strides(), out.offset());
  const Tensor* walked[] = {&ol, &xl};
  std::vector<uint32_t> words = strided_params(lines, walked);
  const size_t extra = words.size();
  for (int64_t w : {x.shape()[size_t(axis)], x.strides()[size_t(axis)],
                    out.strides()[size_t(axis)]}) {
    words.push_back(uint32_t(int32_t(w)));
  }
  words.push_back(0);  // Z, for keep().
  const DType dt = x.dtype();
  const bool f = dt == DType::f32;
  const std::string to_i64 = dt == DType::i64   ? "v"
                             : dt == DType::i32 ? "i64_of(v)"
                                                : "vec2<u32>(v, 0u)";
  const std::string step =
      f ? "let t = two_sum(s, v);\n    s = t.x;\n"
          "    c = select(0.0, c + t.y, finite(s));\n"
          "    store_O(u32(ob + i32(l) * pi(E + 2u)), s + c);"
        : fmt::format(
              "s = i64_add(s, {});\n"
              "    store_O(u32(ob + i32(l) * pi(E + 2u)), s);",
              to_i64);
  std::string body = kScanBody;
  body.replace(body.find("ZERO"), 4, f ? "0.0" : "vec2<u32>(0u, 0u)");
  body.replace(body.find("STEP"), 4, step);
  std::string src = prelude(kGroup);
  src += fmt::format("const E: u32 = {}u;\nconst Z: u32 = {}u;\n", extra,
                     extra + 3);
  src += f ? math_wgsl() : int64_wgsl();
  src += declare("O", 1, out.dtype(), true);
  src += declare("X", 2, dt, false);
  src += body;
  WGPUComputePipeline pipe =
      ctx.pipeline(fmt::format("cumsum:{}", nascent::name(dt)), src, op_name);
  const WGPUBuffer buffers[] = {buffer_of(out), buffer_of(x)};
  ctx.dispatch(op_name, pipe, words, buffers, groups_for(ol.numel()));
}

}  // namespace nascent::webgpu
