// The ops the WebGPU backend does not run yet (each raises BackendError
// naming it, checked by backend_test.cpp).
#pragma once

#include <set>

#include "nascent/core/op_table.h"

namespace nascent::webgpu::testing {

inline const std::set<Op>& not_yet() {
  static const std::set<Op> ops = {
      // Families not done yet.
      Op::conv2d, Op::conv2d_backward_input, Op::conv2d_backward_weight,
      Op::max_pool2d, Op::avg_pool2d, Op::max_pool2d_backward,
      Op::avg_pool2d_backward, Op::qmatmul, Op::dequantize, Op::qembedding,
      Op::quantize,
      // Composed from the ops above (rope, attention).
      Op::rope, Op::attention};
  return ops;
}

// The ops whose i64 calls the backend runs (i64 is two words; the other
// ops raise DTypeError for it, and the conformance suite hands those calls
// to the CPU).
inline const std::set<Op>& takes_i64() {
  static const std::set<Op> ops = {
      Op::fill,        Op::arange,      Op::copy,        Op::add,
      Op::sub,         Op::mul,         Op::maximum,     Op::minimum,
      Op::eq,          Op::ne,          Op::lt,          Op::le,
      Op::gt,          Op::ge,          Op::logical_and, Op::logical_or,
      Op::logical_xor, Op::where,       Op::sum,         Op::cumsum,
      Op::gather,      Op::scatter_add, Op::index_select};
  return ops;
}

// Ops whose conformance cases use only dtypes the backend lacks (arange's
// are i64 and f64): backend_test.cpp compares them with the CPU instead.
inline const std::set<Op>& tested_elsewhere() {
  static const std::set<Op> ops = {Op::arange};
  return ops;
}

}  // namespace nascent::webgpu::testing
