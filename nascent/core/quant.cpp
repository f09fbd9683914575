#include "nascent/core/quant.h"

#include <array>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "nascent/core/backend.h"
#include "nascent/core/error.h"
#include "nascent/core/quant_ref.h"

namespace nascent {

namespace {

// In QuantType order. ids: ggml.h's enum ggml_type.
constexpr std::array<QuantTypeInfo, kNumQuantTypes> kInfo = {{
    {QuantType::f32, "f32", 0, 1, 4},
    {QuantType::f16, "f16", 1, 1, 2},
    {QuantType::bf16, "bf16", 30, 1, 2},
    {QuantType::q4_0, "q4_0", 2, 32, 18},
    {QuantType::q4_1, "q4_1", 3, 32, 20},
    {QuantType::q5_0, "q5_0", 6, 32, 22},
    {QuantType::q5_1, "q5_1", 7, 32, 24},
    {QuantType::q8_0, "q8_0", 8, 32, 34},
    {QuantType::q2_k, "q2_K", 10, 256, 84},
    {QuantType::q3_k, "q3_K", 11, 256, 110},
    {QuantType::q4_k, "q4_K", 12, 256, 144},
    {QuantType::q5_k, "q5_K", 13, 256, 176},
    {QuantType::q6_k, "q6_K", 14, 256, 210},
    {QuantType::q8_k, "q8_K", 15, 256, 292},
}};

void check_row(const char* op, QuantType type, int64_t n) {
  const int64_t bs = block_size(type);
  if (n < 0 || n % bs != 0) {
    throw ShapeError(
        fmt::format("{}: a {} row holds a multiple of {} values, got {}", op,
                    name(type), bs, n));
  }
}

}  // namespace

const QuantTypeInfo& info(QuantType type) {
  return kInfo[size_t(type)];
}

std::optional<QuantType> quant_type_from_ggml(uint32_t id) {
  for (const QuantTypeInfo& i : kInfo) {
    if (i.ggml_type == id) return i.type;
  }
  return std::nullopt;
}

std::optional<QuantType> quant_type_from_name(std::string_view name) {
  for (const QuantTypeInfo& i : kInfo) {
    const std::string_view n = i.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t c = 0; c < n.size() && same; ++c) {
      same = std::tolower(static_cast<unsigned char>(n[c])) ==
             std::tolower(static_cast<unsigned char>(name[c]));
    }
    if (same) return i.type;
  }
  return std::nullopt;
}

size_t row_bytes(QuantType type, int64_t n) {
  check_row("row_bytes", type, n);
  const int64_t blocks = n / block_size(type);
  if (blocks > std::numeric_limits<int64_t>::max() / block_bytes(type)) {
    throw ValueError(
        fmt::format("row_bytes: a {} row of {} values overflows a byte count",
                    name(type), n));
  }
  return size_t(blocks * block_bytes(type));
}

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

}  // namespace nascent
