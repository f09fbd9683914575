// Element-wise binary ops and where, on broadcast views (stride 0); i64
// operands through int64.cpp's functions.
#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// The expression of `op` on i64 a and b (vec2<u32>, int64.cpp).
std::string expression_i64(BinaryOp op) {
  using B = BinaryOp;
  switch (op) {
    case B::add:
      return "i64_add(a, b)";
    case B::sub:
      return "i64_sub(a, b)";
    case B::mul:
      return "i64_mul(a, b)";
    case B::maximum:
      return "select(b, a, i64_lt(b, a))";
    case B::minimum:
      return "select(b, a, i64_lt(a, b))";
    case B::eq:
      return "select(0u, 1u, all(a == b))";
    case B::ne:
      return "select(0u, 1u, any(a != b))";
    case B::lt:
      return "select(0u, 1u, i64_lt(a, b))";
    case B::le:
      return "select(0u, 1u, !i64_lt(b, a))";
    case B::gt:
      return "select(0u, 1u, i64_lt(b, a))";
    case B::ge:
      return "select(0u, 1u, !i64_lt(a, b))";
    case B::logical_and:
      return "select(0u, 1u, i64_nz(a) && i64_nz(b))";
    case B::logical_or:
      return "select(0u, 1u, i64_nz(a) || i64_nz(b))";
    case B::logical_xor:
      return "select(0u, 1u, i64_nz(a) != i64_nz(b))";
    case B::div:
    case B::pow:
      return "";  // The front-end takes them to floats.
  }
  return "";
}

// The expression of `op` on a and b of dtype dt, or "" when not done yet.
std::string expression(BinaryOp op, DType dt) {
  if (dt == DType::i64) return expression_i64(op);
  const bool f = dt == DType::f32;
  // Non-zero tests; NaN is true.
  const std::string nz_a = f                  ? "nz_f(a)"
                           : dt == DType::i32 ? "a != 0"
                                              : "a != 0u";
  const std::string nz_b = f                  ? "nz_f(b)"
                           : dt == DType::i32 ? "b != 0"
                                              : "b != 0u";
  auto test = [](const char* c) {
    return fmt::format("select(0u, 1u, {})", c);
  };
  using B = BinaryOp;
  switch (op) {
    case B::add:
      return "a + b";
    case B::sub:
      return "a - b";
    case B::mul:
      return "a * b";
    case B::div:
      return f ? "a / b" : "";  // The front-end divides in floats.
    case B::maximum:
      return f ? "select(select(b, a, a > b), a, is_nan(a))" : "max(a, b)";
    case B::minimum:
      return f ? "select(select(b, a, a < b), a, is_nan(a))" : "min(a, b)";
    case B::eq:
      return test("a == b");
    case B::ne:
      return f ? test("is_nan(a) || is_nan(b) || a != b") : test("a != b");
    case B::lt:
      return test("a < b");
    case B::le:
      return test("a <= b");
    case B::gt:
      return test("a > b");
    case B::ge:
      return test("a >= b");
    case B::logical_and:
      return fmt::format("select(0u, 1u, {} && {})", nz_a, nz_b);
    case B::logical_or:
      return fmt::format("select(0u, 1u, {} || {})", nz_a, nz_b);
    case B::logical_xor:
      return fmt::format("select(0u, 1u, ({}) != ({}))", nz_a, nz_b);
    case B::pow:
      return f ? "pow_f(a, b)" : "";  // The front-end takes pow to floats.
  }
  return "";
}

}  // namespace

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b,
                     Tensor& out) {
  const char* op_name = nascent::name(op);
  check_dtype(*ctx_, op_name, a, true);
  check_dtype(*ctx_, op_name, out, true);
  const std::string body = expression(op, a.dtype());
  if (body.empty()) {
    throw BackendError(
        fmt::format("{} is not implemented yet on the webgpu backend for {}",
                    op_name, a.to_string()));
  }
  const Tensor* in[] = {&a, &b};
  const char* helpers = op == BinaryOp::pow       ? math_wgsl()
                        : a.dtype() == DType::i64 ? int64_wgsl()
                                                  : "";
  elementwise(*ctx_, op_name, std::string("binary_") + op_name, helpers, body,
              in, out);
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    Tensor& out) {
  check_dtype(*ctx_, "where", cond, true);
  check_dtype(*ctx_, "where", a, true);
  const char* nz = cond.dtype() == DType::f32   ? "nz_f(c)"
                   : cond.dtype() == DType::i32 ? "c != 0"
                   : cond.dtype() == DType::i64 ? "i64_nz(c)"
                                                : "c != 0u";
  const Tensor* in[] = {&a, &b, &cond};
  const bool i64 = cond.dtype() == DType::i64;
  elementwise(*ctx_, "where", "where", i64 ? int64_wgsl() : "",
              fmt::format("select(b, a, {})", nz), in, out);
}

}  // namespace nascent::webgpu
