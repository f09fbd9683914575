// fill and arange (i64 values as two words, low first).
#include <cstring>
#include <vector>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// The word of `v` converted to `dtype` as the CPU backend does (integers
// exactly, wrapping; floats through from_double).
uint32_t value_word(Scalar v, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return f32_word(v.to_double());
    case DType::i32:
      return uint32_t(v.is_integral() ? int32_t(v.to_int64())
                                      : from_double<int32_t>(v.to_double()));
    case DType::u8:
      return v.is_integral() ? uint32_t(uint8_t(v.to_int64()))
                             : from_double<uint8_t>(v.to_double());
    default:
      return from_double<bool>(v.to_double()) ? 1u : 0u;
  }
}

// `v` as the CPU backend stores it in an i64.
int64_t int64_of(Scalar v) {
  return v.is_integral() ? v.to_int64() : from_double<int64_t>(v.to_double());
}

}  // namespace

void Backend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  check_dtype(ctx, op_name, out, true);
  const DType dt = out.dtype();
  const std::string t = wgsl_type(dt);
  if (dt == DType::i64) {
    if (op == CreationOp::fill) {
      const int64_t v = int64_of(a);
      const uint32_t w[2] = {uint32_t(uint64_t(v)),
                             uint32_t(uint64_t(v) >> 32)};
      elementwise(ctx, op_name, "fill", "", "vec2<u32>(XU(0u), XU(1u))", {},
                  out, w);
      return;
    }
    // arange is small: computed here as the CPU does, and written.
    std::vector<int64_t> v(size_t(out.numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] =
          a.is_integral() && b.is_integral()
              ? int64_t(uint64_t(a.to_int64()) +
                        uint64_t(i) * uint64_t(b.to_int64()))
              : from_double<int64_t>(a.to_double() + double(i) * b.to_double());
    }
    if (!v.empty()) {
      ctx.flush();
      wgpuQueueWriteBuffer(ctx.queue, buffer_of(out), 0, v.data(),
                           v.size() * 8);
    }
    ctx.check(op_name);
    return;
  }
  if (op == CreationOp::fill) {
    const uint32_t w = value_word(a, dt);
    elementwise(ctx, op_name, "fill", "", "bitcast<" + t + ">(XU(0u))", {}, out,
                std::span<const uint32_t>(&w, 1));
    return;
  }
  if (a.is_integral() && b.is_integral() && dt != DType::f32) {
    // Integer steps wrap as the CPU's int64 arithmetic cast down does.
    const uint32_t w[2] = {uint32_t(a.to_int64()), uint32_t(b.to_int64())};
    const std::string body = dt == DType::boolean
                                 ? "select(0u, 1u, XU(0u) + i * XU(1u) != 0u)"
                                 : "bitcast<" + t + ">(XU(0u) + i * XU(1u))";
    elementwise(ctx, op_name, "arange_int", "", body, {}, out, w);
    return;
  }
  if (dt != DType::f32) {
    // Fractional steps into integers: few elements, computed as the CPU
    // does (in double) and written.
    std::vector<uint32_t> v(size_t(out.numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      const double x = a.to_double() + double(i) * b.to_double();
      v[i] = value_word(Scalar(x), dt);
    }
    if (dt == DType::i32) {
      if (!v.empty()) {
        ctx.flush();
        wgpuQueueWriteBuffer(ctx.queue, buffer_of(out), 0, v.data(),
                             v.size() * 4);
      }
    } else {
      std::vector<uint8_t> bytes((v.size() + 3) / 4 * 4, 0);
      for (size_t i = 0; i < v.size(); ++i) bytes[i] = uint8_t(v[i]);
      if (!bytes.empty()) {
        ctx.flush();
        wgpuQueueWriteBuffer(ctx.queue, buffer_of(out), 0, bytes.data(),
                             bytes.size());
      }
    }
    ctx.check(op_name);
    return;
  }
  // f32: a + i * b in double rounded once, as the CPU; WGSL has no double,
  // so the values are computed here and written (arange is small).
  std::vector<float> v(size_t(out.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = a.is_integral() && b.is_integral()
               ? float(double(a.to_int64() + int64_t(i) * b.to_int64()))
               : float(a.to_double() + double(i) * b.to_double());
  }
  if (!v.empty()) {
    ctx.flush();
    wgpuQueueWriteBuffer(ctx.queue, buffer_of(out), 0, v.data(), v.size() * 4);
  }
  ctx.check(op_name);
}

}  // namespace nascent::webgpu
