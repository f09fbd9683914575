// The dispatch of quantize_row and dequantize_row to the block codecs
// (legacy.cpp: f32/f16/bf16 and the 32-value types; kquants.cpp: the
// k-quants).
#include "nascent/quant/codec.h"

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/quant/ref.h"

namespace nascent::quant {

namespace {

void check_row(const char* op, QuantType type, int64_t n) {
  const int64_t bs = block_size(type);
  if (n < 0 || n % bs != 0) {
    throw ShapeError(
        fmt::format("{}: a {} row holds a multiple of {} values, got {}", op,
                    name(type), bs, n));
  }
}

}  // namespace

void quantize_row(QuantType type, const float* src, void* dst, int64_t n) {
  check_row("quantize_row", type, n);
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t blocks = n / block_size(type);
  switch (type) {
    case QuantType::f32:
    case QuantType::f16:
    case QuantType::bf16:
      return detail::quantize_float(type, src, out, n);
    case QuantType::q4_0:
      return detail::quantize_q4_0(src, out, blocks);
    case QuantType::q4_1:
      return detail::quantize_q4_1(src, out, blocks);
    case QuantType::q5_0:
      return detail::quantize_q5_0(src, out, blocks);
    case QuantType::q5_1:
      return detail::quantize_q5_1(src, out, blocks);
    case QuantType::q8_0:
      return detail::quantize_q8_0(src, out, blocks);
    case QuantType::q2_k:
      return detail::quantize_q2_k(src, out, blocks);
    case QuantType::q3_k:
      return detail::quantize_q3_k(src, out, blocks);
    case QuantType::q4_k:
      return detail::quantize_q4_k(src, out, blocks);
    case QuantType::q5_k:
      return detail::quantize_q5_k(src, out, blocks);
    case QuantType::q6_k:
      return detail::quantize_q6_k(src, out, blocks);
    case QuantType::q8_k:
      return detail::quantize_q8_k(src, out, blocks);
  }
}

void dequantize_row(QuantType type, const void* src, float* dst, int64_t n) {
  check_row("dequantize_row", type, n);
  const auto* in = static_cast<const uint8_t*>(src);
  const int64_t blocks = n / block_size(type);
  switch (type) {
    case QuantType::f32:
    case QuantType::f16:
    case QuantType::bf16:
      return detail::dequantize_float(type, in, dst, n);
    case QuantType::q4_0:
      return detail::dequantize_q4_0(in, dst, blocks);
    case QuantType::q4_1:
      return detail::dequantize_q4_1(in, dst, blocks);
    case QuantType::q5_0:
      return detail::dequantize_q5_0(in, dst, blocks);
    case QuantType::q5_1:
      return detail::dequantize_q5_1(in, dst, blocks);
    case QuantType::q8_0:
      return detail::dequantize_q8_0(in, dst, blocks);
    case QuantType::q2_k:
      return detail::dequantize_q2_k(in, dst, blocks);
    case QuantType::q3_k:
      return detail::dequantize_q3_k(in, dst, blocks);
    case QuantType::q4_k:
      return detail::dequantize_q4_k(in, dst, blocks);
    case QuantType::q5_k:
      return detail::dequantize_q5_k(in, dst, blocks);
    case QuantType::q6_k:
      return detail::dequantize_q6_k(in, dst, blocks);
    case QuantType::q8_k:
      return detail::dequantize_q8_k(in, dst, blocks);
  }
}

}  // namespace nascent::quant
